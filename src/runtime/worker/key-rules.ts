// What a `$.service.db` or data store key may hold: checked in the worker as it is written, and again by the server.
import { jsonBytes } from './json.js';

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why a key is refused: `type` for what it holds (a TypeError in the worker), `range` for its length (a RangeError). */
export interface KeyProblem {
  kind: 'type' | 'range';
  message: string;
}

/** What is wrong with `key` as a key of `what` ("$.service.db", "data store"), whose keys take `maxBytes` of UTF-8; or undefined. */
export function keyProblem(key: string, what: string, maxBytes: number): KeyProblem | undefined {
  if (key.includes('\0')) return { kind: 'type', message: `${what} keys may not contain the NUL character` };
  // Neither database keeps one as sent (U+FFFD on PostgreSQL, other bytes on SQLite): the key would come back as another.
  if (UNPAIRED_SURROGATE.test(key)) return { kind: 'type', message: `${what} keys may not contain an unpaired UTF-16 surrogate` };
  const bytes = jsonBytes(key);
  if (bytes > maxBytes) return { kind: 'range', message: `${what} keys may have at most ${maxBytes} bytes of UTF-8; this one has ${bytes}` };
  return undefined;
}

/** Throws what keyProblem finds, as the error its kind names. */
export function assertKey(key: string, what: string, maxBytes: number): void {
  const problem = keyProblem(key, what, maxBytes);
  if (problem) throw problem.kind === 'type' ? new TypeError(problem.message) : new RangeError(problem.message);
}
