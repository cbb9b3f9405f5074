// Runs an InvocationRequest on a worker and assembles its result, also when the worker is killed or dies halfway.
import { performance } from 'node:perf_hooks';
import { RuntimeClosedError, WorkerExitError } from './errors.js';
import type { RuntimeLogger } from './options.js';
import { ProtocolError, type InvokeRequest } from './protocol.js';
import type { HttpResponse, InvocationError, InvocationOutcome, InvocationRequest, InvocationResult } from './types.js';
import type { WorkerProcess } from './worker-process.js';

export interface InvokeHooks {
  /** Called as soon as a run calls `respond()`, with the index of the event whose run answered. */
  onRespond?(response: HttpResponse, eventIndex: number): void;
}

const ERROR_NAMES: Record<string, { name: string; code: string }> = {
  timeout: { name: 'TimeoutError', code: 'timeout' },
  out_of_memory: { name: 'OutOfMemoryError', code: 'out_of_memory' },
  process_exit: { name: 'ProcessExitError', code: 'process_exit' },
  protocol_error: { name: 'WorkerProtocolError', code: 'protocol_error' },
  crashed: { name: 'WorkerCrashError', code: 'worker_crashed' },
};

/** The error reported for the call a worker died in and for the calls of the batch it never reached. */
function errorFor(exit: WorkerExitError, request: InvocationRequest): InvocationError {
  const { name, code } = ERROR_NAMES[exit.reason] ?? { name: 'WorkerCrashError', code: 'worker_crashed' };
  const message = exit.reason === 'timeout' ? `${request.method} timed out after ${request.timeoutMs} ms` : exit.message;
  return { name, message, stack: `${name}: ${message}`, code };
}

/** `artifactPath` is the bundle as the worker's account sees it. */
export async function invokeIn(
  worker: WorkerProcess,
  request: InvocationRequest,
  artifactPath: string,
  hooks: InvokeHooks | undefined,
  logger: RuntimeLogger,
): Promise<InvocationResult> {
  const events = request.method === 'run' ? (request.events ?? []) : [];
  const count = request.method === 'run' ? events.length : 1;
  const outcomes: InvocationOutcome[] = [];
  // A Map, not an object: a key such as "__proto__" must stay a key.
  const dbWrites = new Map<string, unknown>();
  const responses = new Map<number, HttpResponse>();
  let currentStarted = performance.now();
  const message: InvokeRequest = {
    t: 'invoke',
    id: worker.nextRequestId(),
    artifactPath,
    method: request.method,
    events,
    props: request.props,
    auths: request.auths,
    db: request.db,
    httpEndpoint: request.httpEndpoint,
    customResponse: request.customResponse === true,
  };
  try {
    await worker.call(
      message,
      (m) => {
        switch (m.t) {
          case 'respond': {
            if (!message.customResponse || m.index !== outcomes.length || responses.has(m.index)) {
              throw new ProtocolError(`unexpected response for event ${m.index}`);
            }
            responses.set(m.index, m.response);
            try {
              hooks?.onRespond?.(m.response, m.index);
            } catch (error) {
              logger.error({ err: error, sourceId: request.sourceId }, 'onRespond hook failed');
            }
            return false;
          }
          case 'outcome': {
            const { outcome } = m;
            if (m.index !== outcomes.length || m.index >= count) throw new ProtocolError(`unexpected outcome for event ${m.index}`);
            if (outcome.error && (outcome.emits.length > 0 || Object.keys(m.dbWrites).length > 0)) {
              throw new ProtocolError('a failed call reported effects');
            }
            const response = responses.get(m.index);
            outcomes.push(response ? { ...outcome, response } : outcome);
            if (!outcome.error) for (const [key, value] of Object.entries(m.dbWrites)) dbWrites.set(key, value);
            currentStarted = performance.now();
            return false;
          }
          case 'done':
            if (outcomes.length !== count) throw new ProtocolError(`done after ${outcomes.length} of ${count} outcomes`);
            return true;
          default:
            throw new ProtocolError(`unexpected ${m.t} message during an invocation`);
        }
      },
      request.timeoutMs,
    );
  } catch (error) {
    if (!(error instanceof WorkerExitError)) throw error;
    if (error.reason === 'closed') throw new RuntimeClosedError();
    if (error.reason === 'start_failed' || error.reason === 'evicted') throw error;
    const failure = errorFor(error, request);
    if (outcomes.length < count) {
      const response = responses.get(outcomes.length);
      const current: InvocationOutcome = { emits: [], logs: [], error: failure, durationMs: performance.now() - currentStarted };
      if (response) current.response = response;
      outcomes.push(current);
    }
    while (outcomes.length < count) outcomes.push({ emits: [], logs: [], error: failure, durationMs: 0 });
  }
  return { outcomes, dbWrites: Object.fromEntries(dbWrites) };
}
