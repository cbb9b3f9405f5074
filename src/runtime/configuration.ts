// Asks a worker about a component's props (a prop's choices, or its full prop list) and turns every failure,
// the component's or its worker's, into errors to answer with rather than to throw.
import { RuntimeClosedError, WorkerExitError } from './errors.js';
import { type ConfigureMessage, ProtocolError } from './protocol.js';
import type { PropDescriptor, PropOption, UnusableChoices } from './types.js';
import type { WorkerProcess } from './worker-process.js';

export type ConfigureAnswer =
  | { kind: 'options'; options: PropOption[]; context: Record<string, unknown> | null; unusable?: UnusableChoices | undefined }
  | { kind: 'props'; props: PropDescriptor[] }
  | { kind: 'failed'; error: string };

/** Why a worker ended while answering, as the API reports it. */
function failureOf(error: WorkerExitError, what: string, timeoutMs: number): string {
  switch (error.reason) {
    case 'timeout':
      return `${what} took longer than ${timeoutMs} ms`;
    case 'out_of_memory':
      return `${what} ran out of memory: ${error.message}`;
    default:
      return `${what} failed: ${error.message}`;
  }
}

/**
 * An answer and the CPU time the worker used for it, as the server measured it (wall time where it cannot measure CPU
 * time), which the account's compute usage counts as it counts a run's: options() may call an API, or loop.
 */
export type ConfigureResult = ConfigureAnswer & { cpuMs: number };

/** `message.artifactPath` is the bundle as the worker's account sees it. Rejects only for faults of the runtime itself. */
export async function configureIn(worker: WorkerProcess, message: ConfigureMessage, timeoutMs: number): Promise<ConfigureResult> {
  let answer: ConfigureAnswer | undefined;
  const startedAt = performance.now();
  const measured = () => worker.lastCallCpuMs ?? performance.now() - startedAt;
  const what = message.what.kind === 'options' ? `options() of prop "${message.what.prop}"` : 'additionalProps()';
  try {
    await worker.call(
      message,
      (m) => {
        if (m.t === 'options' && message.what.kind === 'options') answer = { kind: 'options', options: m.options, context: m.context, unusable: m.unusable };
        else if (m.t === 'props' && message.what.kind === 'props') answer = { kind: 'props', props: m.props };
        else if (m.t === 'configure_failed') answer = { kind: 'failed', error: m.message };
        else throw new ProtocolError(`unexpected ${m.t} message while configuring props`);
        return true;
      },
      timeoutMs,
    );
  } catch (error) {
    if (!(error instanceof WorkerExitError)) throw error;
    if (error.reason === 'closed') throw new RuntimeClosedError();
    if (error.reason === 'start_failed' || error.reason === 'evicted') throw error;
    // A call cut off (timed out, out of memory) used the worker all the same.
    return { kind: 'failed', error: failureOf(error, what, timeoutMs), cpuMs: measured() };
  }
  return { ...answer!, cpuMs: measured() };
}
