// Waiting for a writable (an HTTP response) to take more output, without leaving listeners behind.
import { once } from 'node:events';
import type { Writable } from 'node:stream';

/** Resolves once the response can take more, or is closed; its listeners are removed either way. */
export async function drainedOrClosed(response: Writable): Promise<void> {
  const done = new AbortController();
  try {
    await Promise.race([once(response, 'drain', { signal: done.signal }), once(response, 'close', { signal: done.signal })]);
  } catch {
    // An 'error' on the response: it closes, and the caller sees `closed`.
  } finally {
    done.abort();
  }
}
