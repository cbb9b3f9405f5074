// `$.service.db`: a synchronous key-value store over the source's data, whose writes count only if the call succeeds.
import { jsonBytes, jsonCopy } from './json.js';
import { assertKey } from './key-rules.js';
import { MAX_DB_BYTES_PER_CALL, MAX_DB_KEY_BYTES, MAX_DB_TOTAL_BYTES, MAX_DB_VALUE_BYTES } from './limits.js';
import { quote } from './quote.js';
import type { CallScope } from './scope.js';
import { JSONStringify, MapPrototypeForEach, MapPrototypeGet, MapPrototypeSet, SafeStructuredClone } from './primordials.js';

export interface Db {
  get(key: string): unknown;
  set(key: string, value: unknown): void;
}

function checkKey(key: unknown): string {
  if (typeof key !== 'string') throw new TypeError('$.service.db keys must be strings');
  assertKey(key, '$.service.db', MAX_DB_KEY_BYTES);
  return key;
}

/** Bytes a key and its value take, as JSON. */
function entryBytes(key: string, value: unknown): number {
  return value === undefined ? 0 : jsonBytes(key) + jsonBytes(JSONStringify(value));
}

/** Bytes of all of `committed`'s keys and values, as JSON. */
function committedBytes(committed: ReadonlyMap<string, unknown>): number {
  let sum = 0;
  MapPrototypeForEach(committed, (value, key) => {
    sum += entryBytes(key, value);
  });
  return sum;
}

/** `committed` holds the values before this call: the request's db plus the writes of earlier successful calls. */
export function makeDb(scope: CallScope, committed: ReadonlyMap<string, unknown>): Db {
  let bytes = 0;
  // The whole db's size is measured only once a call writes, then kept up to date write by write.
  let total: number | undefined;
  const overLimit = (message: string): never => {
    const error = new RangeError(message);
    scope.fail(error);
    throw error;
  };
  return {
    get(key: string): unknown {
      checkKey(key);
      const written = MapPrototypeGet(scope.dbWrites, key);
      const value = written ? written.value : MapPrototypeGet(committed, key);
      // A copy, so that changing the result without `set` changes nothing, as with a real store.
      return value === undefined ? undefined : SafeStructuredClone(value);
    },
    set(key: string, value: unknown): void {
      checkKey(key);
      if (scope.closed) throw new Error('$.service.db set() called after the call ended');
      // JSON has no undefined: as in Pipedream, setting it removes the key, and `get` then returns undefined.
      const copy = value === undefined ? undefined : jsonCopy(value, `the value for $.service.db key ${quote(key)}`);
      const size = copy ? jsonBytes(copy.json) : 0;
      if (size > MAX_DB_VALUE_BYTES) overLimit(`a $.service.db value may be at most ${MAX_DB_VALUE_BYTES} bytes of JSON; ${quote(key)} would be ${size}`);
      const previous = MapPrototypeGet(scope.dbWrites, key);
      // A removal counts its key against the call's bytes, so that a call cannot send the server removals without end.
      const callBytes = (write: { value: unknown; bytes: number } | undefined) =>
        write === undefined ? 0 : write.value === undefined ? jsonBytes(key) : write.bytes;
      const next = { value: copy?.value, bytes: size };
      bytes += callBytes(next) - callBytes(previous);
      if (bytes > MAX_DB_BYTES_PER_CALL) overLimit(`one call may write at most ${MAX_DB_BYTES_PER_CALL} bytes of JSON to $.service.db`);
      total ??= committedBytes(committed);
      const held = (write: { value: unknown; bytes: number }) => (write.value === undefined ? 0 : jsonBytes(key) + write.bytes);
      total += held(next) - (previous ? held(previous) : entryBytes(key, MapPrototypeGet(committed, key)));
      if (total > MAX_DB_TOTAL_BYTES) overLimit(`a source's $.service.db may hold at most ${MAX_DB_TOTAL_BYTES} bytes of JSON`);
      MapPrototypeSet(scope.dbWrites, key, next);
    },
  };
}
