// Data stores: the account's key-value stores as the API shows them (listed, their keys, a record); they are made
// and written by the runs of data_store props, and a record deleted here goes through the same commit path.
import type { Clock } from '../lib/clock.js';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../store/schema.js';
import type { Store } from '../store/database.js';
import * as stores from '../store/data-stores.js';
import { isId } from '../model/ids.js';
import { notFound } from '../model/errors.js';
import type { Page, PageRequest } from '../model/pagination.js';
import { quote } from '../model/quote.js';
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

  /** A store of the account by id or, failing that, by name (a store may be named like an id). */
  private async find(db: Kysely<Database> | Transaction<Database>, accountId: string, nameOrId: string): Promise<stores.DataStoreRow> {
    const row =
      (isId(nameOrId, 'ds') ? await stores.findDataStore(db, accountId, nameOrId, true) : undefined) ??
      (await stores.findDataStore(db, accountId, nameOrId, false));
    if (!row) throw notFound(`data store ${quote(nameOrId)}`);
    return row;
  }
}
