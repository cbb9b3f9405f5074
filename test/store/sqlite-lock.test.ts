// SQLite's write lock held by another process: a write waits for it (up to 5 s, then an outage, 503) between turns of
// the event loop, so that the server goes on answering whatever does not need that write meanwhile.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { setImmediate as turn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import SQLite from 'better-sqlite3';
import { openStore } from '../../src/store/database.js';
import { runCompiled } from '../../src/store/compiled.js';
import { outageOf } from '../../src/model/outages.js';
import { tempDir } from '../helpers/temp-dirs.js';

const require = createRequire(import.meta.url);

/** Another process that takes the database's write lock and keeps it until it is killed. */
async function holdWriteLock(file: string): Promise<{ release(): Promise<void> }> {
  const holder = spawn(process.execPath, [
    '-e',
    `const D = require(${JSON.stringify(require.resolve('better-sqlite3'))}); const d = new D(${JSON.stringify(file)});` +
      ` d.exec('begin exclusive'); console.log('locked'); setInterval(() => {}, 1000);`,
  ]);
  await new Promise<void>((resolve, reject) => {
    holder.stdout.once('data', () => resolve());
    holder.once('exit', (code) => reject(new Error(`the lock holder exited with ${code}`)));
  });
  return {
    release: async () => {
      if (holder.exitCode !== null || holder.signalCode !== null) return;
      const exited = new Promise((resolve) => holder.once('exit', resolve));
      holder.kill('SIGKILL');
      await exited;
    },
  };
}

/** True once `promise` settled: read after a turn of the event loop (timers and I/O ran; it had every chance to). */
function settledFlag(promise: Promise<unknown>): () => boolean {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  return () => settled;
}

describe('SQLite locked by another process', () => {
  it('a write waits for the lock without stopping the event loop or reads, and goes through once it is given up', async () => {
    const dataDir = tempDir();
    const store = await openStore({ dataDir });
    try {
      await sql`create table t (n integer)`.execute(store.db);
      const lock = await holdWriteLock(path.join(dataDir, 'tributary.db'));
      try {
        // Through Kysely, and inside a transaction on the commit path's direct statements (runCompiled).
        const plain = store.db
          .insertInto('t' as never)
          .values({ n: 1 } as never)
          .execute();
        const plainSettled = settledFlag(plain);
        const inTransaction = store.db.transaction().execute((trx) => runCompiled(trx, 'insert into t (n) values (?)', [2]));
        const transactionSettled = settledFlag(inTransaction);
        await turn();
        expect([plainSettled(), transactionSettled()]).toEqual([false, false]);
        // Reads do not wait on the write lock (WAL): one goes through while both writes wait (the transaction at its
        // start: it takes the lock as it begins).
        expect((await sql<{ one: number }>`select 1 as one`.execute(store.db)).rows).toEqual([{ one: 1 }]);
        expect([plainSettled(), transactionSettled()]).toEqual([false, false]);
        await lock.release();
        await Promise.all([plain, inTransaction]);
      } finally {
        await lock.release();
      }
      expect((await sql<{ n: number }>`select n from t order by n`.execute(store.db)).rows).toEqual([{ n: 1 }, { n: 2 }]);
    } finally {
      await store.close();
    }
  });

  it('a lock held past the wait is an outage (503), not an error of the request', { timeout: 30_000 }, async () => {
    const dataDir = tempDir();
    const store = await openStore({ dataDir });
    try {
      const lock = await holdWriteLock(path.join(dataDir, 'tributary.db'));
      try {
        const error = await sql`create table t (n integer)`.execute(store.db).catch((caught: unknown) => caught);
        expect(outageOf(error)).toMatchObject({ kind: 'database_unreachable' });
      } finally {
        await lock.release();
      }
      await sql`create table t (n integer)`.execute(store.db);
    } finally {
      await store.close();
    }
  });

  it("another process's commit between a transaction's read and its write (SQLITE_BUSY_SNAPSHOT) is an outage too, not a 500", () => {
    // The server's transactions take the lock as they begin; the CLI's own, or a future deferred one, would not.
    const file = path.join(tempDir(), 'snapshot.db');
    const first = new SQLite(file);
    const second = new SQLite(file);
    try {
      first.pragma('journal_mode = WAL');
      first.exec('create table t (n integer)');
      first.exec('begin');
      first.prepare('select count(*) from t').get();
      second.exec('insert into t values (9)');
      const error = (() => {
        try {
          first.exec('insert into t values (1)');
        } catch (caught) {
          return caught;
        }
      })();
      expect((error as { code?: string }).code).toBe('SQLITE_BUSY_SNAPSHOT');
      expect(outageOf(error)).toMatchObject({ kind: 'database_unreachable' });
    } finally {
      first.close();
      second.close();
    }
  });
});
