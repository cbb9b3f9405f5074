// Data stores: the account's key-value stores as the API shows them (listed, their keys, a record); they are made
// and written by the runs of data_store props, and a record set or deleted here goes through the same commit path.
import type { Clock } from '../lib/clock.js';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../store/schema.js';
import type { Store } from '../store/database.js';
import * as stores from '../store/data-stores.js';
import { isId } from '../model/ids.js';
import { invalid, notFound } from '../model/errors.js';
import { dataStoreName } from '../model/props.js';
import { MAX_DATA_STORE_NAME_CHARS } from '../runtime/worker/limits.js';
import { dataStoreKeyProblem, dataStoreTtlProblem, storeTooLarge, valueTooLarge } from '../runtime/worker/data-store-rules.js';
import type { Page, PageRequest } from '../model/pagination.js';
import { quote } from '../runtime/worker/quote.js';
import { retryingDeadlocks } from '../store/deadlocks.js';

export interface DataStoreView {
  id: string;
  name: string;
  /** Records that have not expired. */
  key_count: number;
  created_at: number;
  updated_at: number;
}

export interface DataStoreRecordView {
  key: string;
  /** The JSON value the component stored. */
  value: unknown;
  /** Only for a record with a ttl: epoch seconds, rounded up (it is still read until then), and the exact millisecond. */
  expires_at?: number;
  expires_at_ms?: number;
}

export class DataStoreService {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  /** GET /data_stores: newest first. */
  async list(accountId: string, page: PageRequest): Promise<Page<DataStoreView>> {
    const result = await stores.listDataStores(this.store.db, accountId, page, this.clock.now());
    return {
      ...result,
      items: result.items.map((row) => ({ id: row.id, name: row.name, key_count: row.key_count, created_at: row.created_at, updated_at: row.updated_at })),
    };
  }

  /** GET /data_stores/{name or id}: the store as the list shows it; 404 for a store the account has not. */
  async get(accountId: string, nameOrId: string): Promise<DataStoreView> {
    const row = await this.find(this.store.db, accountId, nameOrId);
    const keyCount = await stores.liveRecordCount(this.store.db, row.id, this.clock.now());
    return { id: row.id, name: row.name, key_count: keyCount, created_at: row.created_at, updated_at: row.updated_at };
  }

  /**
   * DELETE /data_stores/{name or id}: the store and all its records. A source or step whose data_store prop names it
   * keeps running: its next write makes a new, empty store of that name, as a first write does.
   */
  async delete(accountId: string, nameOrId: string): Promise<void> {
    await retryingDeadlocks(() =>
      this.store.db.transaction().execute(async (trx) => {
        const row = await this.find(trx, accountId, nameOrId);
        await stores.deleteDataStore(trx, row.id);
      }),
    );
  }

  /** GET /data_stores/{name or id}/keys: the keys that have not expired, in key order; 404 for a store the account has not. */
  async keys(accountId: string, nameOrId: string): Promise<{ id: string; name: string; keys: string[] }> {
    const row = await this.find(this.store.db, accountId, nameOrId);
    return { id: row.id, name: row.name, keys: await stores.dataStoreKeys(this.store.db, row.id, this.clock.now()) };
  }

  /** GET /data_stores/{name or id}/records?key=: one record that has not expired; 404 for no such store or record. */
  async record(accountId: string, nameOrId: string, key: string): Promise<DataStoreRecordView> {
    const row = await this.find(this.store.db, accountId, nameOrId);
    const record = await stores.dataStoreRecord(this.store.db, row.id, key, this.clock.now());
    if (!record) throw notFound(`key ${quote(key)} of data store ${quote(row.name)}`);
    const expiry = record.expires_ms === null ? {} : { expires_at: Math.ceil(record.expires_ms / 1000), expires_at_ms: record.expires_ms };
    return { key: record.key, value: JSON.parse(record.value), ...expiry };
  }

  /**
   * DELETE /data_stores/{name or id}/records?key=: as a component's `delete(key)` commits it (writeDataStores), so that
   * the store's byte count moves with it and, on PostgreSQL, it takes its turn on the store's row with the runs
   * writing the store. A key that is missing or expired is a 404 that changes nothing (the transaction rolls back).
   */
  async deleteRecord(accountId: string, nameOrId: string, key: string): Promise<void> {
    await retryingDeadlocks(() =>
      this.store.db.transaction().execute(async (trx) => {
        const row = await this.find(trx, accountId, nameOrId);
        const change = { name: row.name, cleared: false, writes: [{ op: 'delete' as const, key }] };
        const deleted = await stores.writeDataStores(trx, accountId, [change], this.clock.now());
        if (!deleted) throw notFound(`key ${quote(key)} of data store ${quote(row.name)}`);
      }),
    );
  }

  /**
   * PUT /data_stores/{name or id}/records?key=: sets the record as a component's `set(key, value, { ttl })` commits it
   * (writeDataStores: the store's byte count, its expired records swept, on PostgreSQL its turn on the store's row),
   * refused with the messages that set() throws. A store named that the account does not have is made, as a
   * component's first write makes it; an id names only a store that exists. Nothing is cached of a store (each run
   * reads it when loaded), so there is nothing else to tell. Answers the record as GET shows it.
   */
  async setRecord(accountId: string, nameOrId: string, key: string, value: unknown, ttl: number | null | undefined): Promise<DataStoreRecordView> {
    const keyProblem = dataStoreKeyProblem(key);
    if (keyProblem) throw refused('querystring', 'key', keyProblem.message);
    const ttlProblem = dataStoreTtlProblem(ttl);
    if (ttlProblem) throw refused('body', 'ttl', ttlProblem.message);
    const json = JSON.stringify(value);
    const tooLarge = valueTooLarge(key, Buffer.byteLength(json, 'utf8'));
    if (tooLarge) throw refused('body', 'value', tooLarge);
    const nowMs = this.clock.now();
    await retryingDeadlocks(() =>
      this.store.db.transaction().execute(async (trx) => {
        const name = (await this.findOrName(trx, accountId, nameOrId)).name;
        const change = { name, cleared: false, writes: [{ op: 'set' as const, key, value, ttlSeconds: ttl ?? null }] };
        try {
          await stores.writeDataStores(trx, accountId, [change], nowMs);
        } catch (error) {
          // Unlike a run's, this check starts from the store as committed (its row is held), so it is the set()'s.
          if (error instanceof stores.DataStoreFullError) throw refused('body', 'value', storeTooLarge(name));
          throw error;
        }
      }),
    );
    const expiresMs = stores.expiryAt(nowMs, ttl);
    const expiry = expiresMs === null ? {} : { expires_at: Math.ceil(expiresMs / 1000), expires_at_ms: expiresMs };
    return { key, value: JSON.parse(json), ...expiry };
  }

  /** The store to write: one of the account's, else a name for a new one; 404 for an id, 400 for no store name. */
  private async findOrName(trx: Transaction<Database>, accountId: string, nameOrId: string): Promise<{ name: string }> {
    const row = await this.lookup(trx, accountId, nameOrId);
    if (row) return row;
    if (isId(nameOrId, 'ds')) throw notFound(`data store ${quote(nameOrId)}`);
    if (dataStoreName(nameOrId) === undefined) {
      const message = `a data store is named by a string of 1 to ${MAX_DATA_STORE_NAME_CHARS} characters (not blank, without control characters), not ${quote(nameOrId)}`;
      throw refused('params', 'store', message);
    }
    return { name: nameOrId };
  }

  /** A store of the account by id or, failing that, by name (a store may be named like an id). */
  private async find(db: Kysely<Database> | Transaction<Database>, accountId: string, nameOrId: string): Promise<stores.DataStoreRow> {
    const row = await this.lookup(db, accountId, nameOrId);
    if (!row) throw notFound(`data store ${quote(nameOrId)}`);
    return row;
  }

  private async lookup(db: Kysely<Database> | Transaction<Database>, accountId: string, nameOrId: string): Promise<stores.DataStoreRow | undefined> {
    return (
      (isId(nameOrId, 'ds') ? await stores.findDataStore(db, accountId, nameOrId, true) : undefined) ??
      (await stores.findDataStore(db, accountId, nameOrId, false))
    );
  }
}

/** A 400 naming the part of the request and the field that a rule refused, in the words of set(). */
function refused(part: 'params' | 'querystring' | 'body', field: string, message: string) {
  return invalid(message, [{ in: part, field, message }]);
}
