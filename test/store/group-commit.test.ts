// The group commit's failures: one item failing its work is retried alone and the others commit; a COMMIT cut off
// on PostgreSQL is reported as of unknown outcome and never done again (doing it again could do it twice).
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { CommitOutcomeUnknownError, outageOf } from '../../src/model/outages.js';
import { openStore, type Store } from '../../src/store/database.js';
import { TransactionGroup } from '../../src/store/group-commit.js';
import { createTestDatabase, DIALECTS, tempDir } from '../helpers/server.js';
import { cleanupsAfterAll } from '../helpers/cleanups.js';
import { proxyInFrontOf } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait.js';

/** A scratch table of its own, so that the test needs nothing of the schema. */
async function scratchTable(store: Store): Promise<void> {
  await sql`create table scratch (id integer primary key)`.execute(store.db);
}

async function scratchIds(store: Store): Promise<number[]> {
  const rows = await sql<{ id: number }>`select id from scratch order by id`.execute(store.db);
  return rows.rows.map((row) => Number(row.id));
}

describe.each(DIALECTS)('group commit on %s', (dialect) => {
  const cleanup = cleanupsAfterAll();

  async function open(databaseUrl?: string): Promise<Store> {
    const store = await openStore({ dataDir: tempDir(), databaseUrl, migrate: false });
    cleanup(() => store.close());
    return store;
  }

  async function fresh(): Promise<{ url: string | undefined }> {
    if (dialect === 'sqlite') return { url: undefined };
    const database = await createTestDatabase();
    cleanup(database.drop);
    return { url: database.url };
  }

  /** PostgreSQL through a proxy the test can cut, with the scratch table and a group on it. */
  async function scratchBehindProxy() {
    const { url } = await fresh();
    const { proxy, url: throughProxy } = await proxyInFrontOf(url!);
    cleanup(proxy.close);
    const store = await open(throughProxy);
    await scratchTable(store);
    return { url, proxy, group: new TransactionGroup(store) };
  }

  it('retries the items of a failed group one by one: the failing one fails, the others commit', async () => {
    const store = await open((await fresh()).url);
    await scratchTable(store);
    const group = new TransactionGroup(store);
    const insert = (id: number) => group.run((trx) => sql`insert into scratch (id) values (${id})`.execute(trx));
    // Queued in one turn, so that they share a transaction; 1 twice violates the key.
    const results = await Promise.allSettled([insert(1), insert(2), insert(1), insert(3)]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(await scratchIds(store)).toEqual([1, 2, 3]);
  });

  it('runs a lone one-statement item without a transaction, and shares one among several', async () => {
    const store = await open((await fresh()).url);
    await scratchTable(store);
    const group = new TransactionGroup(store);
    const insert = (id: number) =>
      group.runStatement(async (db) => {
        await sql`insert into scratch (id) values (${id})`.execute(db);
        return db.isTransaction;
      });
    expect(await insert(1)).toBe(false);
    // Queued in one turn: one group, one transaction.
    expect(await Promise.all([insert(2), insert(3)])).toEqual([true, true]);
    expect(await scratchIds(store)).toEqual([1, 2, 3]);
  });

  it.skipIf(dialect !== 'postgres')('a lone statement cut off after it was sent is of unknown outcome; one that could not be sent is an outage', async () => {
    const { proxy, group } = await scratchBehindProxy();
    const sent = group.runStatement(async (db) => {
      const insert = sql`insert into scratch (id) values (1)`.execute(db);
      proxy.cut();
      return insert;
    });
    await expect(sent).rejects.toBeInstanceOf(CommitOutcomeUnknownError);
    // The pool has dropped its reset connections; a new one is refused before anything is sent.
    await waitFor(
      async () =>
        group
          .runStatement((db) => sql`select 1`.execute(db))
          .then(
            () => 'answered',
            (error: unknown) => error,
          ),
      (outcome) => outcome !== 'answered' && !(outcome instanceof CommitOutcomeUnknownError),
      { what: 'a statement refused before it was sent' },
    ).then((error) => expect(outageOf(error)?.kind).toBe('database_unreachable'));
  });

  it.skipIf(dialect !== 'postgres')(
    'rejects every item with CommitOutcomeUnknownError when the connection is lost at COMMIT, doing no work twice',
    async () => {
      const { url, proxy, group } = await scratchBehindProxy();
      let runs = 0;
      const work = (id: number, last: boolean) =>
        group.run(async (trx) => {
          runs++;
          await sql`insert into scratch (id) values (${id})`.execute(trx);
          // The last item's work is done: the connection goes before COMMIT can be answered.
          if (last) proxy.cut();
        });
      const results = await Promise.allSettled([work(1, false), work(2, true)]);
      for (const result of results) {
        expect(result.status).toBe('rejected');
        expect((result as PromiseRejectedResult).reason).toBeInstanceOf(CommitOutcomeUnknownError);
      }
      expect(runs).toBe(2);
      proxy.restore();
      // The COMMIT never reached the server here; what matters is that nothing was done again after it.
      const direct = await open(url);
      expect(await scratchIds(direct)).toEqual([]);
    },
  );
});
