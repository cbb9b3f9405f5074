// A store opened straight on a fresh database for one test, for tests of queries and migrations without a server.
import { afterEach } from 'vitest';
import { CompiledQuery } from 'kysely';
import { openStore, type Store } from '../../src/store/database.js';
import { createTestDatabase, type Dialect, tempDir } from './server.js';

/**
 * Registers an afterEach that closes the store a test opened and drops its database; returns the opener: a new data dir
 * (and on PostgreSQL a new database) each call. `migrate: false` leaves the schema for the test to build.
 */
export function freshStoreEach(dialect: Dialect): (options?: { migrate?: boolean }) => Promise<Store> {
  let store: Store | undefined;
  let drop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await store?.close();
    await drop?.();
    store = undefined;
    drop = undefined;
  });
  return async (options = {}) => {
    let databaseUrl: string | undefined;
    if (dialect === 'postgres') ({ url: databaseUrl, drop } = await createTestDatabase());
    store = await openStore({ dataDir: tempDir(), databaseUrl, ...options });
    return store;
  };
}

/**
 * The plan the database would follow for `query`, as text: SQLite's `explain query plan`, PostgreSQL's `explain`.
 * A test's table is a few pages, which PostgreSQL reads whole rather than through any index, so sequential scans are
 * switched off there: the question is which index it would take for a real table.
 */
export async function queryPlan(store: Store, dialect: Dialect, query: CompiledQuery): Promise<string> {
  return store.db.transaction().execute(async (trx) => {
    if (dialect === 'sqlite') {
      const { rows } = await trx.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]));
      return rows.map((r) => r.detail).join('\n');
    }
    await trx.executeQuery(CompiledQuery.raw('set local enable_seqscan = off'));
    const { rows } = await trx.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`explain ${query.sql}`, [...query.parameters]));
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  });
}
