// `data_store` props: the account's key-value stores, read from what the server loaded for the request and written
// as changes that count only if the call succeeds, so that they commit with the run as `$.service.db` writes do.
import type { DataStoreChange, DataStoreContents, DataStoreWrite } from '../types.js';
import { jsonBytes, jsonCopy } from './json.js';
import { dataStoreKeyProblem, dataStoreTtlProblem, isDataStoreName, storeTooLarge, valueTooLarge, type WriteProblem } from './data-store-rules.js';
import { MAX_DATA_STORE_BYTES, MAX_DATA_STORE_NAME_CHARS, MAX_DB_BYTES_PER_CALL } from './limits.js';
import { quote } from './quote.js';
import type { CallScope, PendingWrite, StoreChanges } from './scope.js';
import {
  ArrayIsArray,
  ArrayPrototypePush,
  ArrayPrototypeFind,
  JSONStringify,
  MapPrototypeClear,
  MapPrototypeDelete,
  MapPrototypeForEach,
  MapPrototypeGet,
  MapPrototypeHas,
  MapPrototypeSet,
  ObjectKeys,
  SafeMap,
  SafeStructuredClone,
} from './primordials.js';

/** The object a `data_store` prop reads as (Pipedream's API: every method is async). */
export interface DataStore {
  get(key: string): Promise<unknown>;
  has(key: string): Promise<boolean>;
  set(key: string, value: unknown, options?: { ttl?: number | null }): Promise<void>;
  setTtl(key: string, ttl: number | null): Promise<boolean>;
  delete(key: string): Promise<boolean>;
  keys(): Promise<string[]>;
  entries(): Promise<Array<[string, unknown]>>;
  clear(): Promise<void>;
  [Symbol.asyncIterator](): AsyncGenerator<[string, unknown]>;
}

function checkKey(key: unknown): string {
  raise(dataStoreKeyProblem(key));
  return key as string;
}

/** A time to live in seconds: a positive finite number, or null/undefined for none. */
function checkTtl(ttl: unknown): number | null {
  raise(dataStoreTtlProblem(ttl));
  return (ttl as number | null | undefined) ?? null;
}

/** Throws a rule's problem as the error its kind names. */
function raise(problem: WriteProblem | undefined): void {
  if (problem) throw problem.kind === 'type' ? new TypeError(problem.message) : new RangeError(problem.message);
}

function entryBytes(key: string, value: unknown): number {
  return jsonBytes(key) + jsonBytes(JSONStringify(value));
}

/** The JSON bytes of a pending write's value: a set's, else none. */
function setBytes(write: PendingWrite | undefined): number {
  return write?.op === 'set' ? write.bytes : 0;
}

/** The JSON bytes one call leaves set in all its stores. */
function callBytes(scope: CallScope): number {
  let sum = 0;
  MapPrototypeForEach(scope.dataStoreWrites, (pending) => {
    sum += pending.bytes;
  });
  return sum;
}

/** The stores of one request: what each held before the request, plus the writes of its calls that succeeded. */
export class DataStores {
  private readonly committed: Map<string, Map<string, unknown>> = new SafeMap();
  /** Stores the server would not load, with why each use of one throws. */
  private readonly refused: Map<string, string> = new SafeMap();

  /** `readOnly`: configure calls (options, additionalProps) may read stores but not write them. */
  constructor(
    contents: DataStoreContents[] | undefined,
    private readonly readOnly = false,
  ) {
    for (let index = 0; index < (contents?.length ?? 0); index++) {
      const store = contents![index]!;
      if (typeof store.refused === 'string') MapPrototypeSet(this.refused, store.name, store.refused);
      const entries: Map<string, unknown> = new SafeMap();
      for (let at = 0; at < store.entries.length; at++) MapPrototypeSet(entries, store.entries[at]![0], store.entries[at]![1]);
      MapPrototypeSet(this.committed, store.name, entries);
    }
  }

  /**
   * The prop's value for the store `value` names (a name or `{ name }`); undefined when it names none (an optional prop
   * left out). `requiredInStep` is the prop's name when it is a required prop of a workflow step: a deploy refuses one
   * left out, so none there is a template that gave none, and each use says so rather than reading a method of undefined.
   */
  handle(scope: CallScope, value: unknown, requiredInStep?: string): DataStore | undefined {
    // `{ name }` as the server reads it (model/props.ts): a step's template may give one, which the server loaded.
    const object = typeof value === 'object' && value !== null && !ArrayIsArray(value);
    const name = object ? (value as { name?: unknown }).name : value;
    if (value === undefined || value === null) {
      if (requiredInStep === undefined) return undefined;
      return refusing(new TypeError(`the data_store prop ${quote(requiredInStep)} names no data store: its template gave ${quote(value)}`));
    }
    // A template may give what no deploy would take: the server loaded nothing for it, and each use says why. A field
    // beside `name` (`{ name, ttl }`) is refused as a deploy refuses it: dropped, it would hide a typo or a wrong idea.
    const otherField = object && ArrayPrototypeFind(ObjectKeys(value as object), (key: string) => key !== 'name') !== undefined;
    if (typeof name !== 'string' || !isDataStoreName(name) || otherField) return refusing(misnamed(value));
    const refused = MapPrototypeGet(this.refused, name);
    if (refused !== undefined) return refusing(new TypeError(refused));
    const committed = MapPrototypeGet(this.committed, name);
    return committed ? this.open(scope, name, committed) : unavailable(scope, name);
  }

  /** After a successful call: its changes, now seen by the request's later calls, and their size. */
  commit(scope: CallScope): { changes: DataStoreChange[]; bytes: number } {
    const changes: DataStoreChange[] = [];
    let bytes = 0;
    MapPrototypeForEach(scope.dataStoreWrites, (pending, name) => {
      const committed = MapPrototypeGet(this.committed, name)!;
      if (pending.cleared) MapPrototypeClear(committed);
      const writes: DataStoreWrite[] = [];
      MapPrototypeForEach(pending.writes, (write, key) => {
        // Without a prototype: a setter component code put on Object.prototype would swallow `value` or `ttlSeconds`.
        const out = { __proto__: null, key, op: write.op } as unknown as DataStoreWrite;
        if (write.op === 'set') {
          out.value = write.value;
          MapPrototypeSet(committed, key, write.value);
        } else if (write.op === 'delete') MapPrototypeDelete(committed, key);
        // A set without a ttl makes the record permanent; a ttl change says null to make it so.
        if (write.op === 'ttl' || (write.op === 'set' && typeof write.ttlSeconds === 'number')) out.ttlSeconds = write.ttlSeconds ?? null;
        ArrayPrototypePush(writes, out);
      });
      ArrayPrototypePush(changes, { name, cleared: pending.cleared, writes });
      bytes += pending.bytes;
    });
    return { changes, bytes };
  }

  /**
   * Every Map, array and JSON operation here goes through the built-ins taken at start: these methods run inside the
   * component's call, after its code may have replaced `Map.prototype.set`, the iterators or `JSON.stringify`, and
   * what they record is sent to the server as the call's writes.
   */
  private open(scope: CallScope, name: string, committed: Map<string, unknown>): DataStore {
    const changes = (): StoreChanges => {
      let pending = MapPrototypeGet(scope.dataStoreWrites, name);
      if (!pending) {
        pending = { cleared: false, writes: new SafeMap(), bytes: 0, total: undefined };
        MapPrototypeSet(scope.dataStoreWrites, name, pending);
      }
      return pending;
    };
    const lookup = (key: string): { found: boolean; value?: unknown } => {
      const pending = MapPrototypeGet(scope.dataStoreWrites, name);
      const write = pending ? MapPrototypeGet(pending.writes, key) : undefined;
      if (write?.op === 'set') return { found: true, value: write.value };
      if (write?.op === 'delete' || pending?.cleared) return { found: false };
      return MapPrototypeHas(committed, key) ? { found: true, value: MapPrototypeGet(committed, key) } : { found: false };
    };
    const keys = (): string[] => {
      const pending = MapPrototypeGet(scope.dataStoreWrites, name);
      const out: string[] = [];
      if (!pending?.cleared) {
        MapPrototypeForEach(committed, (_value, key) => {
          if ((pending ? MapPrototypeGet(pending.writes, key) : undefined)?.op !== 'delete') ArrayPrototypePush(out, key);
        });
      }
      if (pending) {
        MapPrototypeForEach(pending.writes, (write, key) => {
          if (write.op === 'set' && (pending.cleared || !MapPrototypeHas(committed, key))) ArrayPrototypePush(out, key);
        });
      }
      return out;
    };
    const writable = (what: string): void => {
      if (scope.closed) throw new Error(`data store ${what}() called after the call ended`);
      if (this.readOnly) throw new Error(`data store ${quote(name)} is read-only while props are configured: ${what}() is refused`);
    };
    const overLimit = (message: string): never => {
      const error = new RangeError(message);
      scope.fail(error);
      throw error;
    };
    const measured = (pending: StoreChanges): number => {
      if (pending.total === undefined) {
        const all = keys();
        let sum = 0;
        for (let index = 0; index < all.length; index++) sum += entryBytes(all[index]!, lookup(all[index]!).value);
        pending.total = sum;
      }
      return pending.total;
    };
    const copy = (value: unknown) => (value === undefined ? undefined : SafeStructuredClone(value));
    const store: DataStore = {
      get: async (key) => copy(lookup(checkKey(key)).value),
      has: async (key) => lookup(checkKey(key)).found,
      keys: async () => keys(),
      entries: async () => {
        const all = keys();
        const out: Array<[string, unknown]> = [];
        for (let index = 0; index < all.length; index++) out[index] = [all[index]!, copy(lookup(all[index]!).value)];
        return out;
      },
      async set(key, value, options) {
        checkKey(key);
        // Before the deletion below, so that a refusal names the set() the component called.
        writable('set');
        // Setting undefined deletes the key, as the reference service's first data store API did.
        if (value === undefined) {
          await store.delete(key);
          return;
        }
        // A bare ttl (set(key, value, 60)) would otherwise be read as no ttl, and the record kept for ever.
        if (options !== undefined && options !== null && (typeof options !== 'object' || ArrayIsArray(options))) {
          throw new TypeError(`data store set() takes its options as { ttl }, not ${quote(options)}`);
        }
        const ttlSeconds = checkTtl(options?.ttl);
        const json = jsonCopy(value, `the value for data store key ${quote(key)}`);
        const size = jsonBytes(json.json);
        const tooLarge = valueTooLarge(key, size);
        if (tooLarge) overLimit(tooLarge);
        const pending = changes();
        // What the call leaves set is what it sends, in all its stores together, as the server counts it again: an
        // overwrite replaces the bytes of the key's earlier set, not adds to them.
        const replaced = setBytes(MapPrototypeGet(pending.writes, key));
        if (callBytes(scope) - replaced + size > MAX_DB_BYTES_PER_CALL)
          overLimit(`one call may write at most ${MAX_DB_BYTES_PER_CALL} bytes of JSON to data stores`);
        const before = lookup(key);
        const total = measured(pending) - (before.found ? entryBytes(key, before.value) : 0) + jsonBytes(key) + size;
        if (total > MAX_DATA_STORE_BYTES) overLimit(storeTooLarge(name));
        pending.bytes += size - replaced;
        pending.total = total;
        MapPrototypeSet(pending.writes, key, { op: 'set', value: json.value, ttlSeconds, bytes: size });
      },
      async setTtl(key, ttl) {
        checkKey(key);
        writable('setTtl');
        const ttlSeconds = checkTtl(ttl);
        if (!lookup(key).found) return false;
        const pending = changes();
        const write = MapPrototypeGet(pending.writes, key);
        if (write?.op === 'set') write.ttlSeconds = ttlSeconds;
        else MapPrototypeSet(pending.writes, key, { op: 'ttl', ttlSeconds, bytes: 0 });
        return true;
      },
      async delete(key) {
        checkKey(key);
        writable('delete');
        const before = lookup(key);
        const pending = changes();
        if (before.found && pending.total !== undefined) pending.total -= entryBytes(key, before.value);
        pending.bytes -= setBytes(MapPrototypeGet(pending.writes, key));
        MapPrototypeSet(pending.writes, key, { op: 'delete', bytes: 0 });
        return before.found;
      },
      async clear() {
        writable('clear');
        const pending = changes();
        pending.cleared = true;
        MapPrototypeClear(pending.writes);
        pending.bytes = 0;
        pending.total = 0;
      },
      async *[Symbol.asyncIterator]() {
        const all = keys();
        for (let index = 0; index < all.length; index++) {
          const { found, value } = lookup(all[index]!);
          if (found) yield [all[index]!, copy(value)] as [string, unknown];
        }
      },
    };
    return store;
  }
}

function misnamed(value: unknown): TypeError {
  return new TypeError(
    `a data store is named by a string of 1 to ${MAX_DATA_STORE_NAME_CHARS} characters (not blank, without control characters) or { name }, not ${quote(value)}`,
  );
}

/** A store every use of which fails with `error`. */
function refusing(error: Error): DataStore {
  const refuse = async (): Promise<never> => {
    throw error;
  };
  return {
    get: refuse,
    has: refuse,
    set: refuse,
    setTtl: refuse,
    delete: refuse,
    keys: refuse,
    entries: refuse,
    clear: refuse,
    async *[Symbol.asyncIterator]() {
      yield await refuse();
    },
  };
}

/**
 * A store the server did not load for this call: every use says so. The server loads every store the props name, so
 * this is a request that left one out (a fault of the caller, not of the component).
 */
function unavailable(scope: CallScope, name: string): DataStore {
  return refusing(new Error(`data store ${quote(name)} was not loaded for this ${scope.method} call`));
}
