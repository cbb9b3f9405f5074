// Errors of the runtime machinery itself: a worker that died under a call, a runtime that has been closed.

/** Why a worker process ended. */
export type WorkerExitReason =
  | 'timeout' // the call ran past its time and the worker was killed
  | 'out_of_memory' // the heap limit was reached
  | 'process_exit' // component code called process.exit
  | 'crashed' // any other exit or signal
  | 'protocol_error' // the worker sent a message the protocol does not allow, and was killed
  | 'evicted' // an idle worker killed to make room
  | 'closed' // the runtime was closed
  | 'start_failed'; // the process could not be started

export class WorkerExitError extends Error {
  override name = 'WorkerExitError';
  constructor(
    readonly reason: WorkerExitReason,
    message: string,
  ) {
    super(message);
  }
}

export class RuntimeClosedError extends Error {
  override name = 'RuntimeClosedError';
  readonly code = 'runtime_closed';
  constructor() {
    super('the component runtime has been closed');
  }
}
