// Each data store's byte count (data_stores.bytes), which a commit that sets keys checks the 4 MB limit against, stays
// the sum of its live records through overwrites, deletes, expiry and clears, in bytes of UTF-8; expired records are
// found through their index.
import { describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { DataStoreFullError, expiredRecordsSweep, writeDataStores } from '../../src/store/data-stores.js';
import type { Store } from '../../src/store/database.js';
import { MAX_DATA_STORE_BYTES } from '../../src/runtime/worker/limits.js';
import type { DataStoreWrite } from '../../src/runtime/types.js';
import { DIALECTS } from '../helpers/server.js';
import { freshStoreEach, queryPlan } from '../helpers/stores.js';

const T0 = 1_700_000_000_000;
/** A value whose record (a 2-character key and the value's JSON) is `bytes` long. */
const filler = (bytes: number) => 'x'.repeat(bytes - 4);

async function withUser(store: Store): Promise<void> {
  await store.db
    .insertInto('users')
    .values({ id: 'u_1', username: 'one', email: 'one@example.com', plan: 'paid', api_key_hash: 'h', created_at: 1, updated_at: 1 })
    .execute();
}

function write(store: Store, writes: DataStoreWrite[], nowMs: number, cleared = false): Promise<number> {
  return store.db.transaction().execute((trx) => writeDataStores(trx, 'u_1', [{ name: 'st', cleared, writes }], nowMs));
}

/** The store's count, and its live records summed as the database measures them: the two must agree. */
async function sizes(store: Store, nowMs: number): Promise<{ count: number; summed: number }> {
  const row = await store.db.selectFrom('data_stores').select('bytes').where('name', '=', 'st').executeTakeFirstOrThrow();
  const summed = await store.db
    .selectFrom('data_store_records')
    .select(sql<number | null>`sum(octet_length(key) + octet_length(value))`.as('n'))
    .where((eb) => eb.or([eb('expires_ms', 'is', null), eb('expires_ms', '>', nowMs)]))
    .executeTakeFirstOrThrow();
  return { count: Number(row.bytes), summed: Number(summed.n ?? 0) };
}

describe.each(DIALECTS)('the data store byte count on %s', (dialect) => {
  const openFresh = freshStoreEach(dialect);

  it('follows overwrites, deletes, expiry and clears, so that a store emptied and refilled to its limit takes it', async () => {
    const store = await openFresh();
    await withUser(store);
    const quarter = MAX_DATA_STORE_BYTES / 4;
    const fill = (keys: string[]): DataStoreWrite[] => keys.map((key) => ({ key, op: 'set', value: filler(quarter) }));

    await write(store, fill(['f0', 'f1', 'f2', 'f3']), T0);
    expect(await sizes(store, T0)).toEqual({ count: MAX_DATA_STORE_BYTES, summed: MAX_DATA_STORE_BYTES });
    // One record more: `g` and `1`, 2 bytes past the limit; nothing of the commit is kept.
    await expect(write(store, [{ key: 'g', op: 'set', value: 1 }], T0)).rejects.toThrow(new DataStoreFullError('st', MAX_DATA_STORE_BYTES + 2));
    expect(await sizes(store, T0)).toEqual({ count: MAX_DATA_STORE_BYTES, summed: MAX_DATA_STORE_BYTES });

    // Two deleted, one overwritten smaller ("x" in JSON: 3 bytes), one given a second to live.
    await write(
      store,
      [
        { key: 'f0', op: 'delete' },
        { key: 'f1', op: 'delete' },
        { key: 'f2', op: 'set', value: 'x' },
        { key: 'f3', op: 'ttl', ttlSeconds: 1 },
      ],
      T0,
    );
    expect(await sizes(store, T0)).toEqual({ count: quarter + 5, summed: quarter + 5 });
    // A second later f3 has expired; the next write deletes it. Two bytes per character of the key and of the value.
    await write(store, [{ key: 'é', op: 'set', value: 'ü' }], T0 + 1000);
    expect(await sizes(store, T0 + 1000)).toEqual({ count: 5 + 6, summed: 5 + 6 });

    // Refilled to the limit exactly: f0 and f1 again, f2 back to its size, and f3 less what é holds.
    const refill = [...fill(['f0', 'f1', 'f2']), { key: 'f3', op: 'set' as const, value: filler(quarter - 6) }];
    await write(store, refill, T0 + 1000);
    expect(await sizes(store, T0 + 1000)).toEqual({ count: MAX_DATA_STORE_BYTES, summed: MAX_DATA_STORE_BYTES });
    await expect(write(store, [{ key: 'é', op: 'set', value: 'üü' }], T0 + 1000)).rejects.toThrow(new DataStoreFullError('st', MAX_DATA_STORE_BYTES + 2));

    // A clear starts the count over from what the same commit sets.
    await write(store, [{ key: 'a', op: 'set', value: 'b' }], T0 + 1000, true);
    expect(await sizes(store, T0 + 1000)).toEqual({ count: 4, summed: 4 });
    // A ttl that rounds to no time at all keeps its record 1 ms: counted as it is written, and swept from the count by
    // the next write after it expired.
    await write(store, [{ key: 't', op: 'set', value: 'v', ttlSeconds: 0.0001 }], T0 + 1000);
    expect(await sizes(store, T0 + 1000)).toEqual({ count: 8, summed: 8 });
    await write(store, [{ key: 'none', op: 'delete' }], T0 + 1001);
    expect(await sizes(store, T0 + 1001)).toEqual({ count: 4, summed: 4 });
  });

  it('takes the limit at a commit of two writers that each fitted what they loaded: the second to commit fails', async () => {
    const store = await openFresh();
    await withUser(store);
    const threeQuarters = (tag: string): DataStoreWrite[] => [0, 1, 2].map((i) => ({ key: `${tag}${i}`, op: 'set', value: filler(MAX_DATA_STORE_BYTES / 4) }));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let firstWrote!: () => void;
    const wrote = new Promise<void>((resolve) => {
      firstWrote = resolve;
    });
    // The first holds its transaction open after writing; the second writes meanwhile (on PostgreSQL it waits for
    // the store's row), and is checked against what the first committed.
    const first = store.db.transaction().execute(async (trx) => {
      await writeDataStores(trx, 'u_1', [{ name: 'st', cleared: false, writes: threeQuarters('a') }], T0);
      firstWrote();
      await gate;
    });
    await wrote;
    const second = write(store, threeQuarters('b'), T0);
    release();
    await first;
    await expect(second).rejects.toThrow(new DataStoreFullError('st', (MAX_DATA_STORE_BYTES / 4) * 6));
    expect(await sizes(store, T0)).toEqual({ count: (MAX_DATA_STORE_BYTES / 4) * 3, summed: (MAX_DATA_STORE_BYTES / 4) * 3 });
  });
});

describe.each(DIALECTS)('the sweep of expired data store records on %s', (dialect) => {
  const openFresh = freshStoreEach(dialect);

  it('reads data_store_records_expiry, not every record of the store', async () => {
    const store = await openFresh();
    const plan = await queryPlan(store, dialect, expiredRecordsSweep(store.db, 'ds_1', T0).compile());
    expect(plan).toContain('data_store_records_expiry');
  });
});
