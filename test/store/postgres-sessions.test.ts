// A cluster node paused inside a transaction must not hold the others up: PostgreSQL ends its session once it has
// sat idle in the transaction for IDLE_IN_TRANSACTION_MS, which frees the locks it held.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/database.js';
import { cleanupsAfterAll } from '../helpers/cleanups.js';
import { createTestDatabase, DIALECTS, tempDir } from '../helpers/server.js';

describe.skipIf(!DIALECTS.includes('postgres'))('PostgreSQL sessions of a node', () => {
  const cleanup = cleanupsAfterAll();

  it('ends a transaction its client left idle, so that another node waiting on its lock goes on', async () => {
    const database = await createTestDatabase();
    cleanup(database.drop);
    const open = async (): Promise<Store> => {
      const store = await openStore({ dataDir: tempDir(), databaseUrl: database.url, migrate: false });
      cleanup(() => store.close());
      return store;
    };
    const [paused, other] = [await open(), await open()];
    await sql`create table scratch (id integer primary key, v integer)`.execute(paused.db);
    await sql`insert into scratch values (1, 0)`.execute(paused.db);

    let resume!: () => void;
    const resumed = new Promise<void>((resolve) => (resume = resolve));
    let locked!: () => void;
    const holdsLock = new Promise<void>((resolve) => (locked = resolve));
    const held = paused.db.transaction().execute(async (trx) => {
      await sql`update scratch set v = 1 where id = 1`.execute(trx);
      locked();
      // The client stalls here, inside its transaction, holding the row's lock.
      await resumed;
    });
    await holdsLock;
    // Waits for the lock until the server ends the paused session; without the setting it would wait for ever.
    await sql`update scratch set v = 2 where id = 1`.execute(other.db);
    resume();
    await expect(held).rejects.toThrow();
    const rows = await sql<{ v: number }>`select v from scratch where id = 1`.execute(other.db);
    expect(rows.rows).toEqual([{ v: 2 }]);
  });
});
