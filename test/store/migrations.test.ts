// Upgrading a database that has queued invocations (migration 005 keys the queue by (source_id, id) and keeps every
// row), data stores (018 counts each store's bytes) or subscriptions to the default stream under both its names (021
// keeps one).
import { describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { migrateTo } from '../../src/store/migrate.js';
import { completeInvocations, oldestInvocations } from '../../src/store/invocations.js';
import { writeDataStores } from '../../src/store/data-stores.js';
import { insertSubscription, listAutoSubscriptions, listSubscriptions } from '../../src/store/subscriptions.js';
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

  it("021 keeps the older of a 020 database's '' and 'default' subscriptions of one emitter and listener, and no other", async () => {
    const store = await openFresh({ migrate: false });
    await migrateTo(store.db, dialect, '020-relayed-answers');
    await store.db
      .insertInto('users')
      .values({ id: 'u_1', username: 'one', email: 'one@example.com', plan: 'paid', api_key_hash: 'h', created_at: 1, updated_at: 1 })
      .execute();
    const sub = (id: string, listener: string, eventName: string) => ({
      id,
      user_id: 'u_1',
      emitter_id: 'dc_e',
      listener_id: listener,
      event_name: eventName,
      created_at: 1,
    });
    // wh_a: '' made first; wh_b: 'default' first; wh_c: 'default' alone and '$errors', which is another stream.
    await store.db
      .insertInto('subscriptions')
      .values([
        sub('sub_1', 'wh_a', ''),
        sub('sub_2', 'wh_a', 'default'),
        sub('sub_3', 'wh_b', 'default'),
        sub('sub_4', 'wh_b', ''),
        sub('sub_5', 'wh_c', 'default'),
        sub('sub_6', 'wh_c', '$errors'),
      ])
      .execute();
    await store.db
      .insertInto('auto_subscriptions')
      .values([
        { id: 'sub_7', user_id: 'u_1', listener_id: 'wh_a', event_name: 'default', created_at: 1 },
        { id: 'sub_8', user_id: 'u_1', listener_id: 'wh_a', event_name: '', created_at: 1 },
      ])
      .execute();

    await migrateTo(store.db, dialect, 'latest');

    const kept = (await listSubscriptions(store.db, 'u_1')).map((r) => [r.id, r.listener_id, r.event_name]);
    expect(kept).toEqual([
      ['sub_6', 'wh_c', '$errors'],
      ['sub_5', 'wh_c', 'default'],
      ['sub_3', 'wh_b', 'default'],
      ['sub_1', 'wh_a', ''],
    ]);
    expect((await listAutoSubscriptions(store.db, 'u_1')).map((r) => [r.id, r.event_name])).toEqual([['sub_7', 'default']]);
    // The other name cannot add the pair again: the one kept is what an insert answers.
    expect(await insertSubscription(store.db, sub('sub_9', 'wh_a', 'default'))).toEqual(sub('sub_1', 'wh_a', ''));
    expect(await insertSubscription(store.db, sub('sub_9', 'wh_c', ''))).toEqual(sub('sub_5', 'wh_c', 'default'));
    expect(await listSubscriptions(store.db, 'u_1')).toHaveLength(4);
  });
});
