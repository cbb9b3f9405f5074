// What a `$.service.db` or data store key may hold: checked in the worker as it is written, and again by the server.
import { hasUnpairedSurrogate, jsonBytes } from './json.js';
import { StringPrototypeIndexOf } from './primordials.js';

/** Why a key is refused: `type` for what it holds (a TypeError in the worker), `range` for its length (a RangeError). */
export interface KeyProblem {
  kind: 'type' | 'range';
  message: string;
}

/**
 * What is wrong with `key` as a key of `what` ("$.service.db", "data store"), whose keys take `maxBytes` of UTF-8; or
 * undefined. The server's re-check of a report stops here: a NUL its database refuses on its own (nul-text.test.ts).
 */
export function keyProblem(key: string, what: string, maxBytes: number): KeyProblem | undefined {
  // The key would come back as another.
  if (hasUnpairedSurrogate(key)) return { kind: 'type', message: `${what} keys may not contain an unpaired UTF-16 surrogate` };
  const bytes = jsonBytes(key);
  if (bytes > maxBytes) return { kind: 'range', message: `${what} keys may have at most ${maxBytes} bytes of UTF-8; this one has ${bytes}` };
  return undefined;
}

/** In the worker, as a key is written: keyProblem's rules, and no NUL, thrown as the error each names. */
export function assertKey(key: string, what: string, maxBytes: number): void {
  if (StringPrototypeIndexOf(key, '\0') !== -1) throw new TypeError(`${what} keys may not contain the NUL character`);
  const problem = keyProblem(key, what, maxBytes);
  if (problem) throw problem.kind === 'type' ? new TypeError(problem.message) : new RangeError(problem.message);
}
