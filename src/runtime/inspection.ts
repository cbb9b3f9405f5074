// Loads a prepared component in a worker and turns what happens into ComponentInfo or a ComponentLoadError.
import { RuntimeClosedError, WorkerExitError } from './errors.js';
import { ProtocolError, type LoadRequest } from './protocol.js';
import { ComponentLoadError, type ComponentInfo } from './types.js';
import type { WorkerProcess } from './worker-process.js';

function loadErrorFor(error: WorkerExitError, timeoutMs: number): Error {
  switch (error.reason) {
    case 'timeout':
      return new ComponentLoadError('load_timeout', `loading the component took longer than ${timeoutMs} ms`);
    case 'out_of_memory':
      return new ComponentLoadError('load_out_of_memory', `loading the component ran out of memory: ${error.message}`);
    case 'process_exit':
      return new ComponentLoadError('load_failed', `${error.message} while loading`);
    case 'crashed':
    case 'protocol_error':
      return new ComponentLoadError('load_failed', `loading the component failed: ${error.message}`);
    case 'closed':
      return new RuntimeClosedError();
    default:
      // Not the component's doing (the worker did not start): a fault of the service.
      return error;
  }
}

/** `artifactPath` is the bundle as the worker's account sees it; `asStep` loads it as a workflow step. */
export async function inspectIn(worker: WorkerProcess, artifactPath: string, timeoutMs: number, asStep = false): Promise<ComponentInfo> {
  let result: ComponentInfo | ComponentLoadError | undefined;
  const request: LoadRequest = { t: 'load', id: worker.nextRequestId(), artifactPath };
  if (asStep) request.asStep = true;
  try {
    await worker.call(
      request,
      (message) => {
        if (message.t === 'loaded') result = message.info;
        else if (message.t === 'load_failed') result = new ComponentLoadError(message.code, message.message, message.details);
        else throw new ProtocolError(`unexpected ${message.t} message while loading`);
        return true;
      },
      timeoutMs,
    );
  } catch (error) {
    throw error instanceof WorkerExitError ? loadErrorFor(error, timeoutMs) : error;
  }
  if (result instanceof ComponentLoadError) throw result;
  return result!;
}
