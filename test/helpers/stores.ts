// A store opened straight on a fresh database for one test, for tests of queries and migrations without a server.
import { afterEach } from 'vitest';
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
