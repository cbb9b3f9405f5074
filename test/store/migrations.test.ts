// Upgrading a database that has queued invocations (migration 005 keys the queue by (source_id, id) and keeps every
// row) or data stores (018 counts each store's bytes).
import { describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { migrateTo } from '../../src/store/migrate.js';
import { completeInvocations, oldestInvocations } from '../../src/store/invocations.js';
import { writeDataStores } from '../../src/store/data-stores.js';
import { DIALECTS } from '../helpers/server.js';
import { freshStoreEach } from '../helpers/stores.js';

const row = (id: string, sourceId: string) => ({
  id,
  source_id: sourceId,
  user_id: 'u_test',
  trigger: 'http' as const,
  event: JSON.stringify({ n: id }),
  created_ms: 1,
  depth: 0,
  attempts: 0,
  lease_owner: null,
  lease_until_ms: null,
});

describe.each(DIALECTS)('migrations on %s', (dialect) => {
  const openFresh = freshStoreEach(dialect);

  it('005 keeps the queued invocations of a 004 database and serves them per source, in id order', async () => {
    const store = await openFresh({ migrate: false });
    await migrateTo(store.db, dialect, '004-delivery');
    const rows = [row('inv_2', 'dc_a'), row('inv_1', 'dc_a'), row('inv_3', 'dc_b')];
    await store.db.insertInto('invocations').values(rows).execute();

    await migrateTo(store.db, dialect, 'latest');

    expect((await oldestInvocations(store.db, 'dc_a', 10)).map((r) => r.id)).toEqual(['inv_1', 'inv_2']);
    // A row queued before 015 names no timer prop.
    expect(await oldestInvocations(store.db, 'dc_b', 10)).toEqual([{ ...row('inv_3', 'dc_b'), prop_name: null }]);
    await completeInvocations(store.db, 'dc_a', ['inv_1', 'inv_3'], null);
    // inv_3 belongs to another source: removing by id names the source too.
    expect((await store.db.selectFrom('invocations').select('id').orderBy('id').execute()).map((r) => r.id)).toEqual(['inv_2', 'inv_3']);
    await expect(store.db.insertInto('invocations').values(row('inv_2', 'dc_a')).execute()).rejects.toThrow(/unique|duplicate/i);

    if (dialect === 'sqlite') {
      // One b-tree: no table besides the key, and no index.
      const { rows: trees } = await sql<{ type: string; sql: string | null }>`select type, sql from sqlite_master where tbl_name = 'invocations'`.execute(
        store.db,
      );
      expect(trees).toEqual([{ type: 'table', sql: expect.stringMatching(/primary key \("source_id", "id"\)\) without rowid$/i) }]);
    } else {
      const { rows: indexes } = await sql<{ indexdef: string }>`select indexdef from pg_indexes where tablename = 'invocations'`.execute(store.db);
      expect(indexes.map((i) => i.indexdef)).toEqual([expect.stringMatching(/invocations_pkey .*\(source_id, id\)/)]);
    }
  });

  it('018 counts the bytes of each store of a 017 database, expired records too until a write deletes them', async () => {
    const store = await openFresh({ migrate: false });
    await migrateTo(store.db, dialect, '017-claim-skips-inactive');
    await store.db
      .insertInto('users')
      .values({ id: 'u_1', username: 'one', email: 'one@example.com', plan: 'paid', api_key_hash: 'h', created_at: 1, updated_at: 1 })
      .execute();
    await store.db
      .insertInto('data_stores')
      .values(['ds_1', 'ds_2'].map((id) => ({ id, user_id: 'u_1', name: id, created_at: 1, updated_at: 1 })))
      .execute();
    // 5 + 10 bytes (é and ü are two each) in ds_1, the 5 of them expired at 1000; ds_2 empty.
    await store.db
      .insertInto('data_store_records')
      .values([
        { store_id: 'ds_1', key: 'a', value: '"xx"', expires_ms: 1000 },
        { store_id: 'ds_1', key: 'é', value: '"üüü"', expires_ms: null },
      ])
      .execute();

    await migrateTo(store.db, dialect, 'latest');

    const counts = async () => (await store.db.selectFrom('data_stores').select(['id', 'bytes']).orderBy('id').execute()).map((r) => [r.id, Number(r.bytes)]);
    expect(await counts()).toEqual([
      ['ds_1', 15],
      ['ds_2', 0],
    ]);
    await store.db
      .transaction()
      .execute((trx) => writeDataStores(trx, 'u_1', [{ name: 'ds_1', cleared: false, writes: [{ key: 'b', op: 'set', value: 1 }] }], 2000));
    expect(await counts()).toEqual([
      ['ds_1', 10 + 2],
      ['ds_2', 0],
    ]);
  });
});
