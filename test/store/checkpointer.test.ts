// SQLite's write-ahead log is copied into the database file by a background thread, not by the commit that fills it.
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

describe('background checkpoints on sqlite', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('sqlite');
  });
  afterAll(async () => {
    await server?.destroy();
  });

  it('copies committed pages into the database file while the server runs, well before the log reaches its limit', async () => {
    const { db } = server.running.services.store;
    const file = path.join(server.dataDir, 'tributary.db');
    const before = fs.statSync(file).size;
    // About 1 MB: a quarter of the 1,000-page log after which a commit would checkpoint by itself.
    await sql`create table checkpoint_probe (body text not null)`.execute(db);
    for (let i = 0; i < 200; i++) await sql`insert into checkpoint_probe (body) values (${'x'.repeat(5000)})`.execute(db);
    const grown = await waitFor(async () => fs.statSync(file).size, (size) => size >= before + 1_000_000, { what: 'the database file to take in the log' });
    expect(grown).toBeGreaterThanOrEqual(before + 1_000_000);
    // The commits themselves never checkpoint: that is the thread's job.
    const [{ wal_autocheckpoint: autoCheckpoint }] = (await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(db)).rows;
    expect(autoCheckpoint).toBe(0);
  });
});
