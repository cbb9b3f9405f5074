// SQLite's write-ahead log is copied into the database file by a background thread, with the commit's own copy as a ceiling.
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
    const grown = await waitFor(
      async () => fs.statSync(file).size,
      (size) => size >= before + 1_000_000,
      { what: 'the database file to take in the log' },
    );
    expect(grown).toBeGreaterThanOrEqual(before + 1_000_000);
  });

  it('keeps the log bounded under commits that never pause, which a checkpoint from another connection cannot catch up with', async () => {
    const { db } = server.running.services.store;
    const log = path.join(server.dataDir, 'tributary.db-wal');
    await sql`create table endless_probe (body text not null)`.execute(db);
    // About 40 MB in back-to-back commits: the log would grow by all of it if only the thread checkpointed.
    let largest = 0;
    for (let i = 0; i < 8000; i++) {
      await db.transaction().execute((trx) => sql`insert into endless_probe (body) values (${'y'.repeat(5000)})`.execute(trx));
      if (i % 100 === 0) largest = Math.max(largest, fs.statSync(log).size);
    }
    expect(largest).toBeLessThan(24 * 1024 * 1024);
  });
});
