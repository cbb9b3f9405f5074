// Queries on data stores and their records: loading what a call reads, committing what it wrote, listing them.
import { type Kysely, type Selectable, type SqlBool, sql, type Transaction } from 'kysely';
import type { DataStoreChange, DataStoreContents } from '../runtime/types.js';
import { MAX_DATA_STORE_BYTES } from '../runtime/worker/limits.js';
import { ServiceError } from '../model/errors.js';
import { isId, newId } from '../model/ids.js';
import { quote } from '../runtime/worker/quote.js';
import type { Page, PageRequest } from '../model/pagination.js';
import type { Database, DataStoresTable } from './schema.js';
import { paginateById } from './paginate.js';

type Db = Kysely<Database> | Transaction<Database>;

/** A record that has not expired at `nowMs` (no ttl, or one still ahead): what every read of a store sees. */
const liveAt = (nowMs: number) => sql<SqlBool>`(data_store_records.expires_ms is null or data_store_records.expires_ms > ${nowMs})`;

export type DataStoreRow = Selectable<DataStoresTable>;
export type DataStoreListRow = Omit<DataStoreRow, 'bytes'> & { key_count: number };

/** Rows per statement: well under both databases' limits on bound parameters. */
const CHUNK = 500;

function chunks<T>(items: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(items.slice(i, i + CHUNK));
  return out;
}

/**
 * Rows in the order of their keys' characters (code points, as SQLite's binary collation and UTF-8 bytes order them),
 * sorted here: PostgreSQL's ORDER BY follows the database's collation, which a locale ('en': `_`, a, A, b, B) changes.
 */
function inKeyOrder<T extends { key: string }>(rows: T[]): T[] {
  return rows
    .map((row) => ({ row, bytes: Buffer.from(row.key, 'utf8') }))
    .sort((a, b) => Buffer.compare(a.bytes, b.bytes))
    .map(({ row }) => row);
}

/**
 * The records of the account's stores named `names` that have not expired at `nowMs`, each store's in key order; a
 * store that does not exist yet is empty (it is made by its first write). A name that is the id of one of the
 * account's stores (a step's template gave it) is refused, as a deploy refuses it.
 */
export async function readDataStores(db: Db, userId: string, names: string[], nowMs: number): Promise<DataStoreContents[]> {
  const unique = [...new Set(names)];
  if (!unique.length) return [];
  const rows = await db
    .selectFrom('data_store_records')
    .innerJoin('data_stores', 'data_stores.id', 'data_store_records.store_id')
    .select(['data_stores.name as name', 'data_store_records.key as key', 'data_store_records.value as value'])
    .where('data_stores.user_id', '=', userId)
    .where('data_stores.name', 'in', unique)
    .where(liveAt(nowMs))
    .execute();
  const byName = new Map<string, Array<[string, unknown]>>(unique.map((name) => [name, []]));
  for (const row of inKeyOrder(rows)) byName.get(row.name)!.push([row.key, JSON.parse(row.value)]);
  const refused = await storesNamedById(db, userId, unique);
  return unique.map((name) => {
    const store = refused.get(name);
    return store === undefined ? { name, entries: byName.get(name)! } : { name, entries: [], refused: namedByIdMessage(name, store) };
  });
}

/** What a data_store prop naming one of the account's stores by its `ds_` id hears, at deploy and at each use. */
export function namedByIdMessage(id: string, storeName: string): string {
  return `names data store ${id} by its id; a data_store prop takes the store's name: ${quote(storeName)}`;
}

/** Of `names`, those that are the id of one of the account's stores, with that store's name. */
async function storesNamedById(db: Db, userId: string, names: string[]): Promise<Map<string, string>> {
  const ids = names.filter((name) => isId(name, 'ds'));
  if (!ids.length) return new Map();
  const rows = await db.selectFrom('data_stores').select(['id', 'name']).where('user_id', '=', userId).where('id', 'in', ids).execute();
  return new Map(rows.map((row) => [row.id, row.name]));
}

/** The store's id, made now if the account has none of that name; its `updated_at` set to `nowSeconds`. */
async function touchStore(trx: Transaction<Database>, userId: string, name: string, nowSeconds: number): Promise<string> {
  const row = await trx
    .insertInto('data_stores')
    .values({ id: newId('ds'), user_id: userId, name, created_at: nowSeconds, updated_at: nowSeconds })
    .onConflict((oc) => oc.columns(['user_id', 'name']).doUpdateSet((eb) => ({ updated_at: eb.ref('excluded.updated_at') })))
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/**
 * A data store would pass its size limit once these writes commit: the runs writing it at the same time each fitted
 * what they loaded, not what the others wrote. A 409 for a request; a batch of runs fails with ResultsRefusedError.
 */
export class DataStoreFullError extends ServiceError {
  override name = 'DataStoreFullError';

  constructor(storeName: string, bytes: number) {
    super(
      'conflict',
      `data store "${storeName}" would hold ${bytes} bytes, past its limit of ${MAX_DATA_STORE_BYTES}: runs that wrote it meanwhile filled it; nothing was changed`,
    );
  }
}

/** A record's size as its store's count has it: key and value in bytes of UTF-8, as the worker counts them. */
const recordBytes = sql<number>`octet_length(key) + octet_length(value)`.as('bytes');

const total = (rows: Array<{ bytes: number | string }>) => rows.reduce((sum, row) => sum + Number(row.bytes), 0);

/** Deletes the store's records expired at `nowMs`, each one's size returned; it reads the index of migration 018. */
export function expiredRecordsSweep(db: Db, storeId: string, nowMs: number) {
  return db.deleteFrom('data_store_records').where('store_id', '=', storeId).where('expires_ms', '<=', nowMs).returning(recordBytes);
}

/**
 * The epoch millisecond a record written at `nowMs` with a ttl of `ttlSeconds` expires at; null without a ttl. Expiry
 * is kept in whole milliseconds, and a positive ttl under half of one would round to the write's own millisecond, a
 * record stored already expired that the write's 200 still showed; so every ttl keeps its record at least 1 ms.
 */
export function expiryAt(nowMs: number, ttlSeconds: number | null | undefined): number | null {
  return typeof ttlSeconds === 'number' ? nowMs + Math.max(1, Math.round(ttlSeconds * 1000)) : null;
}

/**
 * Commits calls' data store changes inside the caller's transaction: each store is made on its first write, a clear
 * removes every record first, then each key is set, deleted or given its new expiry (a ttl counts from `nowMs`).
 * Records that expired are deleted here too, so that they do not pile up in a store that is written. Each statement
 * says how many bytes it added or removed, and the store's count (`data_stores.bytes`) moves by the sum: a commit
 * that sets keys checks the 4 MB limit against that count, without reading the store's other records. Answers how
 * many records the changes' deletes removed (not those a clear or an expiry did): a delete from the API is a 404 at 0.
 * Only a set makes a store the account has not.
 */
export async function writeDataStores(trx: Transaction<Database>, userId: string, changes: DataStoreChange[] | undefined, nowMs: number): Promise<number> {
  let deletedRecords = 0;
  for (const change of changes ?? []) {
    const sets = change.writes.filter((w) => w.op === 'set');
    // Only a set makes a store: a delete, clear or ttl change of a store the account has not finds nothing to change,
    // as a delete over the API makes none, and a store named by a typo would otherwise be listed, empty.
    if (!sets.length && !(await findDataStore(trx, userId, change.name, false))) continue;
    // On PostgreSQL this holds the store's row until the commit: writers of one store go one at a time, so each
    // one's additions and removals, and its check, start from what the one before it left.
    const storeId = await touchStore(trx, userId, change.name, Math.floor(nowMs / 1000));
    let added = 0;
    if (change.cleared) await trx.deleteFrom('data_store_records').where('store_id', '=', storeId).execute();
    else added -= total(await expiredRecordsSweep(trx, storeId, nowMs).execute());
    const expiry = (ttlSeconds: number | null | undefined) => expiryAt(nowMs, ttlSeconds);
    for (const part of chunks(sets)) {
      const keys = part.map((w) => w.key);
      added -= total(await trx.selectFrom('data_store_records').select(recordBytes).where('store_id', '=', storeId).where('key', 'in', keys).execute());
      const written = await trx
        .insertInto('data_store_records')
        .values(part.map((w) => ({ store_id: storeId, key: w.key, value: JSON.stringify(w.value ?? null), expires_ms: expiry(w.ttlSeconds) })))
        .onConflict((oc) =>
          oc.columns(['store_id', 'key']).doUpdateSet((eb) => ({ value: eb.ref('excluded.value'), expires_ms: eb.ref('excluded.expires_ms') })),
        )
        .returning(recordBytes)
        .execute();
      added += total(written);
    }
    const deletes = change.writes.filter((w) => w.op === 'delete').map((w) => w.key);
    for (const part of chunks(deletes)) {
      const removed = await trx.deleteFrom('data_store_records').where('store_id', '=', storeId).where('key', 'in', part).returning(recordBytes).execute();
      deletedRecords += removed.length;
      added -= total(removed);
    }
    for (const write of change.writes) {
      if (write.op !== 'ttl') continue;
      await trx
        .updateTable('data_store_records')
        .set({ expires_ms: expiry(write.ttlSeconds) })
        .where('store_id', '=', storeId)
        .where('key', '=', write.key)
        .execute();
    }
    // A set that leaves the count as it was is still checked: a store filled past the limit before commits checked
    // it stays closed to sets.
    if (!change.cleared && !sets.length && added === 0) continue;
    const { bytes } = await trx
      .updateTable('data_stores')
      .set((eb) => ({ bytes: change.cleared ? added : eb('bytes', '+', added) }))
      .where('id', '=', storeId)
      .returning('bytes')
      .executeTakeFirstOrThrow();
    // Only a set can grow a store; its count includes what runs committed since this one loaded it.
    if (sets.length && bytes > MAX_DATA_STORE_BYTES) throw new DataStoreFullError(change.name, bytes);
  }
  return deletedRecords;
}

/** The account's stores, newest first, each with the number of its records that have not expired. */
export function listDataStores(db: Kysely<Database>, userId: string, page: PageRequest, nowMs: number): Promise<Page<DataStoreListRow>> {
  const base = db
    .selectFrom('data_stores')
    .select(['id', 'user_id', 'name', 'created_at', 'updated_at'])
    .select((eb) =>
      eb
        .selectFrom('data_store_records')
        .select((inner) => inner.fn.countAll<number>().as('n'))
        .whereRef('data_store_records.store_id', '=', 'data_stores.id')
        .where(liveAt(nowMs))
        .as('key_count'),
    )
    .where('user_id', '=', userId);
  const count = async () =>
    Number(
      (
        await db
          .selectFrom('data_stores')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('user_id', '=', userId)
          .executeTakeFirstOrThrow()
      ).n,
    );
  return paginateById(base, count, 'ds', page).then((result) => ({
    ...result,
    items: result.items.map((row) => ({ ...row, key_count: Number(row.key_count ?? 0) })),
  }));
}

/** A store of the account by id (`ds_…`) or by name. */
export function findDataStore(db: Db, userId: string, nameOrId: string, byId: boolean): Promise<DataStoreRow | undefined> {
  return db
    .selectFrom('data_stores')
    .selectAll()
    .where('user_id', '=', userId)
    .where(byId ? 'id' : 'name', '=', nameOrId)
    .executeTakeFirst();
}

/** The keys of a store that have not expired, in key order. */
export async function dataStoreKeys(db: Db, storeId: string, nowMs: number): Promise<string[]> {
  const rows = await db.selectFrom('data_store_records').select('key').where('store_id', '=', storeId).where(liveAt(nowMs)).execute();
  return inKeyOrder(rows).map((row) => row.key);
}

/** One record of a store that has not expired at `nowMs`, its value as stored (JSON text); undefined when there is none. */
export function dataStoreRecord(db: Db, storeId: string, key: string, nowMs: number) {
  return db
    .selectFrom('data_store_records')
    .select(['key', 'value', 'expires_ms'])
    .where('store_id', '=', storeId)
    .where('key', '=', key)
    .where(liveAt(nowMs))
    .executeTakeFirst();
}

/** The number of a store's records that have not expired at `nowMs`. */
export async function liveRecordCount(db: Db, storeId: string, nowMs: number): Promise<number> {
  const row = await db
    .selectFrom('data_store_records')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('store_id', '=', storeId)
    .where(liveAt(nowMs))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Removes a store and all its records; a later write by its name makes a new, empty one. */
export async function deleteDataStore(trx: Transaction<Database>, storeId: string): Promise<void> {
  await trx.deleteFrom('data_store_records').where('store_id', '=', storeId).execute();
  await trx.deleteFrom('data_stores').where('id', '=', storeId).execute();
}
