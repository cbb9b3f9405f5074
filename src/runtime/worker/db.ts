// `$.service.db`: a synchronous key-value store over the source's data, whose writes count only if the call succeeds.
import { jsonBytes, jsonCopy } from './json.js';
import { MAX_DB_BYTES_PER_CALL } from './limits.js';
import type { CallScope } from './scope.js';

export interface Db {
  get(key: string): unknown;
  set(key: string, value: unknown): void;
}

function checkKey(key: unknown): string {
  if (typeof key !== 'string') throw new TypeError('$.service.db keys must be strings');
  return key;
}

/** `committed` holds the values before this call: the request's db plus the writes of earlier successful calls. */
export function makeDb(scope: CallScope, committed: ReadonlyMap<string, unknown>): Db {
  let bytes = 0;
  return {
    get(key: string): unknown {
      checkKey(key);
      const written = scope.dbWrites.get(key);
      const value = written ? written.value : committed.get(key);
      // A copy, so that changing the result without `set` changes nothing, as with a real store.
      return value === undefined ? undefined : structuredClone(value);
    },
    set(key: string, value: unknown): void {
      checkKey(key);
      if (scope.closed) throw new Error('$.service.db set() called after the call ended');
      const copy = jsonCopy(value, `the value for $.service.db key "${key}"`);
      const size = jsonBytes(copy.json);
      bytes += size - (scope.dbWrites.get(key)?.bytes ?? 0);
      if (bytes > MAX_DB_BYTES_PER_CALL) {
        const error = new RangeError(`one call may write at most ${MAX_DB_BYTES_PER_CALL} bytes of JSON to $.service.db`);
        scope.fail(error);
        throw error;
      }
      scope.dbWrites.set(key, { value: copy.value, bytes: size });
    },
  };
}
