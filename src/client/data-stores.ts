// The data store calls of the CLI: a store's keys, and one record read, written or deleted.
import { type ApiClient, ApiError } from './api.js';
import { segment } from './resources.js';
import { quoted } from './terminal-text.js';
import { UsageError } from './usage-error.js';

/** What GET /v1/data_stores/{store}/records?key= answers (`data`). */
export interface DataStoreRecord {
  key: string;
  value: unknown;
  expires_at?: number;
  expires_at_ms?: number;
}

/** A 404 of these routes is a store or a key the account has not: the hint says where to see both. */
const NOT_FOUND_HINT = "see the account's data stores with tributary data-stores list, and a store's keys with tributary data-stores keys <store>";

/** Runs a call of a store's route, its 404 given the data stores' hint instead of the one for ids. */
async function naming<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) throw new ApiError(error.status, error.code, error.message, error.details, NOT_FOUND_HINT);
    throw error;
  }
}

/**
 * The store as one path segment. A store named `.` or `..` cannot be one: fetch resolves such a segment away (even
 * sent as `%2E%2E`), and `GET /v1/data_stores/../keys` would be another route; such a store is found by its name in
 * the list and named by its id.
 */
async function storeSegment(api: ApiClient, store: string, toWrite = false): Promise<string> {
  if (store !== '.' && store !== '..') return segment(store);
  const { items } = await api.all<{ id: string; name: string }>('/v1/data_stores');
  const found = items.find((item) => item.name === store);
  if (found) return segment(found.id);
  // A write by name makes the store, as a first set() does; here there is no name to send, so a bare 404 would say
  // the wrong thing (that set needs a store to exist) and leave no way to make one.
  if (toWrite) {
    throw new UsageError(
      `there is no data store ${JSON.stringify(store)} to set a key in, and a store of that name cannot be made from here: a URL path cannot name it (a segment ${JSON.stringify(store)} is resolved away before it is sent); the first set() of a data_store prop naming it makes it, and then tributary data-stores set finds it by its id`,
    );
  }
  throw new ApiError(404, 'not_found', `data store ${JSON.stringify(store)} not found`, [], NOT_FOUND_HINT);
}

function required(what: 'store' | 'key', value: string, usage: string): void {
  if (value === '') throw new UsageError(`the ${what} may not be empty: ${usage}`);
}

/** The keys of a store (by name or id), in key order. */
export async function storeKeys(api: ApiClient, store: string): Promise<string[]> {
  required('store', store, 'tributary data-stores keys <store>');
  return naming(async () => (await api.get<{ data: { keys: string[] } }>(`/v1/data_stores/${await storeSegment(api, store)}/keys`)).data.keys);
}

const recordPath = async (api: ApiClient, store: string, key: string, toWrite = false) =>
  `/v1/data_stores/${await storeSegment(api, store, toWrite)}/records?key=${encodeURIComponent(key)}`;

/** One record of a store: its key, value and expiry. */
export async function readRecord(api: ApiClient, store: string, key: string): Promise<DataStoreRecord> {
  required('store', store, 'tributary data-stores get <store> <key>');
  required('key', key, 'tributary data-stores get <store> <key>');
  return naming(async () => (await api.get<{ data: DataStoreRecord }>(await recordPath(api, store, key))).data);
}

const SET_USAGE = 'tributary data-stores set <store> <key> <json-value> [--ttl seconds]';

/**
 * The value of `set` as the JSON it is given: a bare word would otherwise be sent as a string by a guess, and a
 * mistyped object (`{a: 1}`) stored as its text. A number past a double (`1e400`) parses as Infinity, which the request
 * would carry as null: refused here, as the server refuses it in a body, rather than stored as null.
 */
export function jsonValue(text: string): unknown {
  let unbounded = false;
  let value: unknown;
  try {
    value = JSON.parse(text, (_key, item: unknown) => {
      if (typeof item === 'number' && !Number.isFinite(item)) unbounded = true;
      return item;
    });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new UsageError(`the value is not JSON (${reason}); a string goes in double quotes, as '"text"': ${SET_USAGE}`);
  }
  if (unbounded) {
    throw new UsageError(
      `the value holds a number past the largest a JSON number may be (about 1.8e308), which reads as Infinity and would be stored as null: ${SET_USAGE}`,
    );
  }
  return value;
}

/** `--ttl` as a number of seconds; whether the server takes it (positive, at most 100 years) is the server's to say. */
export function ttlSeconds(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const seconds = text.trim() === '' ? Number.NaN : Number(text);
  if (!Number.isFinite(seconds)) throw new UsageError(`--ttl takes a number of seconds, not ${quoted(text)}: ${SET_USAGE}`);
  return seconds;
}

/** Writes one record, as a component's set(key, value, { ttl }) would; a store named for the first time is made. */
export async function writeRecord(api: ApiClient, store: string, key: string, value: unknown, ttl: number | undefined): Promise<DataStoreRecord> {
  required('store', store, SET_USAGE);
  required('key', key, SET_USAGE);
  const body = ttl === undefined ? { value } : { value, ttl };
  return naming(async () => (await api.call<{ data: DataStoreRecord }>('PUT', await recordPath(api, store, key, true), body)).data);
}

/** Deletes one record, as a component's delete(key) would. */
export async function deleteRecord(api: ApiClient, store: string, key: string): Promise<void> {
  required('store', store, 'tributary data-stores delete <store> <key>');
  required('key', key, 'tributary data-stores delete <store> <key>');
  await naming(async () => api.call('DELETE', await recordPath(api, store, key)));
}
