// Data stores: the account's key-value stores as the API shows them (listed, and their keys); they are made and
// written by the runs of data_store props, never here.
import type { Clock } from '../lib/clock.js';
import type { Store } from '../store/database.js';
import * as stores from '../store/data-stores.js';
import { isId } from '../model/ids.js';
import { notFound } from '../model/errors.js';
import type { Page, PageRequest } from '../model/pagination.js';
import { quote } from '../model/quote.js';

export interface DataStoreView {
  id: string;
  name: string;
  /** Records that have not expired. */
  key_count: number;
  created_at: number;
  updated_at: number;
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
    const row =
      (isId(nameOrId, 'ds') ? await stores.findDataStore(this.store.db, accountId, nameOrId, true) : undefined) ??
      (await stores.findDataStore(this.store.db, accountId, nameOrId, false));
    if (!row) throw notFound(`data store ${quote(nameOrId)}`);
    return { id: row.id, name: row.name, keys: await stores.dataStoreKeys(this.store.db, row.id, this.clock.now()) };
  }
}
