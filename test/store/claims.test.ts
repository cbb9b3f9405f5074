// Claims on the invocation queue: the oldest rows of a source in id order, leases that end, and on PostgreSQL a source
// that another node holds, including a claim that waited on the source's lock while the other node's claim committed.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/database.js';
import { claimBatch, type InvocationRow, insertInvocations } from '../../src/store/invocations.js';
import { cleanupsAfterAll } from '../helpers/cleanups.js';
import { createTestDatabase, DIALECTS, tempDir } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const SOURCE = 'dc_claims';
const LEASE_MS = 30_000;

function queued(id: string): InvocationRow {
  return {
    id,
    source_id: SOURCE,
    user_id: 'u_claims',
    trigger: 'http',
    event: '{}',
    created_ms: 1,
    depth: 0,
    attempts: 0,
    lease_owner: null,
    lease_until_ms: null,
    prop_name: null,
  };
}

describe.each(DIALECTS)('invocation claims on %s', (dialect) => {
  const cleanup = cleanupsAfterAll();

  async function open(url?: string): Promise<Store> {
    const store = await openStore({ dataDir: tempDir(), databaseUrl: url });
    cleanup(() => store.close());
    return store;
  }

  async function freshUrl(): Promise<string | undefined> {
    if (dialect === 'sqlite') return undefined;
    const database = await createTestDatabase();
    cleanup(database.drop);
    return database.url;
  }

  const claim = (store: Store, owner: string, nowMs: number, limit: number) => claimBatch(store.db, store.dialect, SOURCE, owner, nowMs, LEASE_MS, limit);

  it('leases the oldest rows in id order up to the limit; the owner may claim them again, others once the lease ends', async () => {
    const store = await open(await freshUrl());
    await insertInvocations(store.db, store.dialect, [queued('i3'), queued('i1'), queued('i2')]);

    const first = await claim(store, 'node-a', 1_000, 2);
    expect(first.rows.map((r) => [r.id, r.lease_owner, Number(r.lease_until_ms), r.attempts])).toEqual([
      ['i1', 'node-a', 1_000 + LEASE_MS, 1],
      ['i2', 'node-a', 1_000 + LEASE_MS, 1],
    ]);
    // Its own live leases do not stop the owner (a batch run again after a failure).
    const again = await claim(store, 'node-a', 2_000, 10);
    expect(again.rows.map((r) => [r.id, r.attempts])).toEqual([
      ['i1', 2],
      ['i2', 2],
      ['i3', 1],
    ]);
    const afterLease = await claim(store, 'node-b', 2_000 + LEASE_MS + 1, 10);
    expect(afterLease.rows.map((r) => [r.id, r.lease_owner, r.attempts])).toEqual([
      ['i1', 'node-b', 3],
      ['i2', 'node-b', 3],
      ['i3', 'node-b', 2],
    ]);
    expect(afterLease.heldElsewhereUntilMs).toBeUndefined();
  });

  it('gives nothing of a switched-off source, whatever the claiming node has cached; switched on, its rows are claimed', async () => {
    const store = await open(await freshUrl());
    await sql`insert into users (id, username, email, plan, api_key_hash, created_at, updated_at)
      values ('u_claims', 'claims', 'c@example.com', 'paid', 'h', 1, 1)`.execute(store.db);
    await sql`insert into components (id, user_id, code, code_hash, name, version, configurable_props, metadata, created_at, updated_at)
      values ('sc_claims', 'u_claims', '', 'h', 'c', '0.0.1', '[]', '{}', 1, 1)`.execute(store.db);
    await sql`insert into sources (id, user_id, component_id, name, name_slug, active, configured_props, created_at, updated_at)
      values (${SOURCE}, 'u_claims', 'sc_claims', 'c', 'c', 0, '{}', 1, 1)`.execute(store.db);
    await insertInvocations(store.db, store.dialect, [queued('i1')]);
    expect(await claim(store, 'node-a', 1_000, 10)).toEqual({ rows: [] });
    await store.db.updateTable('sources').set({ active: 1 }).where('id', '=', SOURCE).execute();
    expect((await claim(store, 'node-a', 1_000, 10)).rows.map((r) => [r.id, r.lease_owner, r.attempts])).toEqual([['i1', 'node-a', 1]]);
  });

  it.skipIf(dialect !== 'postgres')('gives nothing while another node holds a live lease on the source, and says until when', async () => {
    const store = await open(await freshUrl());
    await insertInvocations(store.db, store.dialect, [queued('i1')]);
    expect((await claim(store, 'node-a', 1_000, 1)).rows).toHaveLength(1);
    await insertInvocations(store.db, store.dialect, [queued('i2')]);
    // i2 is free, but the source runs on node-a: a second node would break the order of its events.
    expect(await claim(store, 'node-b', 1_500, 10)).toEqual({ rows: [], heldElsewhereUntilMs: 1_000 + LEASE_MS });
  });

  it.skipIf(dialect !== 'postgres')('a claim that waited for the source lock sees the lease committed while it waited, not the queue as it was', async () => {
    const url = await freshUrl();
    const store = await open(url);
    const other = await open(url);
    await insertInvocations(store.db, store.dialect, [queued('i1')]);
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    // Another node's claim, as the claim's lock and update in a transaction of its own, held open.
    const otherClaim = other.db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(hashtext(${`tributary:source:${SOURCE}`}))`.execute(trx);
      await trx
        .updateTable('invocations')
        .set({ lease_owner: 'node-a', lease_until_ms: 1_000 + LEASE_MS })
        .execute();
      await released;
    });
    await waitFor(
      async () =>
        (
          await sql<{
            n: number;
          }>`select count(*)::int as n from pg_locks where locktype = 'advisory' and granted and database = (select oid from pg_database where datname = current_database())`.execute(
            store.db,
          )
        ).rows[0]?.n,
      (n) => n === 1,
      { what: "the other node's claim to hold the source lock" },
    );
    const waiting = claim(store, 'node-b', 1_500, 10);
    await waitFor(
      async () =>
        (
          await sql<{
            n: number;
          }>`select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted and database = (select oid from pg_database where datname = current_database())`.execute(
            store.db,
          )
        ).rows[0]?.n,
      (n) => n === 1,
      { what: 'the claim to wait for the source lock' },
    );
    // Queued while the claim waits: free, yet not to be run beside the other node's lease.
    await insertInvocations(store.db, store.dialect, [queued('i2')]);
    release();
    await otherClaim;
    expect(await waiting).toEqual({ rows: [], heldElsewhereUntilMs: 1_000 + LEASE_MS });
  });
});
