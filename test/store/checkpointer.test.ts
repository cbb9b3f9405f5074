// SQLite's write-ahead log is copied into the database file by a background thread, with the commit's own copy as a ceiling.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outageOf } from '../../src/model/outages.js';
import { openStore } from '../../src/store/database.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { mountTmpfs } from '../helpers/mounts.js';

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

describe('background checkpoints on a full disk', () => {
  it(
    'ride it out: the failure is an outage, and the thread, not every commit, goes on checkpointing once there is room',
    { timeout: 60_000 },
    async (context) => {
      const mountPoint = tempDir('tributary-checkpoint-full-');
      if (!mountTmpfs(mountPoint, 8)) {
        context.skip();
        return;
      }
      const failures: Error[] = [];
      const store = await openStore({ dataDir: path.join(mountPoint, 'data'), backgroundCheckpoints: { onFailure: (error) => void failures.push(error) } });
      try {
        const { db } = store;
        await sql`create table full_probe (body text not null)`.execute(db);
        for (let i = 0; i < 100; i++) await sql`insert into full_probe (body) values (${'x'.repeat(5000)})`.execute(db);
        // The rest of the disk taken by another file: rows still fit in the log's pages, but not in the database file.
        const filler = path.join(mountPoint, 'filler');
        try {
          execFileSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=64k'], { stdio: 'ignore' });
        } catch {
          // dd stops at ENOSPC: the disk is full.
        }
        await waitFor(
          async () => {
            await sql`insert into full_probe (body) values (${'z'.repeat(5000)})`.execute(db).catch(() => undefined);
            return failures.length;
          },
          (n) => n > 0,
          { what: 'a checkpoint to meet the full disk' },
        );
        expect(outageOf(failures[0])).toMatchObject({ kind: 'disk_full' });
        fs.rmSync(filler);
        // Still the thread's to copy: commits copy the log themselves only at the ceiling (4,000 pages), not at 1,000.
        const [setting] = (await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(db)).rows;
        expect(setting?.wal_autocheckpoint).toBe(4000);
        const file = path.join(mountPoint, 'data', 'tributary.db');
        const before = fs.statSync(file).size;
        await waitFor(
          async () => fs.statSync(file).size,
          (size) => size > before,
          { what: 'the thread to copy the log into the database file again' },
        );
      } finally {
        await store.close();
        execFileSync('umount', ['-l', mountPoint]);
        fs.rmSync(mountPoint, { recursive: true, force: true });
      }
    },
  );
});
