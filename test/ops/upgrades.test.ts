// Upgrades: migrate --status lists applied and pending migrations, migrate applies them, a database written by a newer
// Tributary is refused at start naming both, and three nodes started at once on a fresh PostgreSQL database migrate it once.
import { execFile, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupsAfterAll } from '../helpers/cleanups.js';
import { openStore } from '../../src/store/database.js';
import { KNOWN_MIGRATIONS, migrateTo } from '../../src/store/migrate.js';
import { BIN, freshStorage, serve } from '../helpers/processes.js';
import { createTestDatabase, DIALECTS, tempDir } from '../helpers/server.js';

const run = promisify(execFile);
const tributary = (args: string[]) => run(process.execPath, [BIN, ...args]);
const failed = (args: string[]) =>
  tributary(args).then(
    (r) => ({ code: 0, stderr: r.stderr, stdout: r.stdout }),
    (e: { code: number; stderr: string; stdout: string }) => ({ code: e.code, stderr: e.stderr, stdout: e.stdout }),
  );

/** The storage flags as openStore takes them. */
function where(args: string[]): { dataDir: string; databaseUrl: string | undefined } {
  const at = (flag: string) => (args.includes(flag) ? args[args.indexOf(flag) + 1] : undefined);
  return { dataDir: at('--data-dir')!, databaseUrl: at('--database-url') };
}

describe.each(DIALECTS)('upgrades on %s', (dialect) => {
  const cleanups = cleanupsAfterAll();

  it('migrate --status lists applied and pending migrations; migrate applies the pending ones', async () => {
    const storage = await freshStorage(dialect);
    cleanups(storage.cleanup);
    const store = await openStore({ ...where(storage.args), migrate: false });
    await migrateTo(store.db, dialect, '005-queue-key');
    await store.close();

    const status = JSON.parse((await tributary(['migrate', '--status', '--json', ...storage.args])).stdout);
    expect(status.applied.map((m: { name: string }) => m.name)).toEqual(KNOWN_MIGRATIONS.slice(0, 5));
    expect(status.pending).toEqual(KNOWN_MIGRATIONS.slice(5));
    expect(status.unknown).toEqual([]);
    expect(status.version).toBe('0.1.0');
    const text = (await tributary(['migrate', '--status', ...storage.args])).stdout;
    expect(text).toContain('applied  005-queue-key');
    expect(text).toContain('pending  006-published-components');
    expect(text).toContain(`5 applied, ${KNOWN_MIGRATIONS.length - 5} pending`);

    const applied = await tributary(['migrate', ...storage.args]);
    expect(applied.stdout).toContain(`applied ${KNOWN_MIGRATIONS.length - 5} migrations: 006-published-components`);
    expect((await tributary(['migrate', ...storage.args])).stdout).toBe('applied 0 migrations\n');
    const after = JSON.parse((await tributary(['migrate', '--status', '--json', ...storage.args])).stdout);
    expect(after.pending).toEqual([]);
    expect(after.applied).toHaveLength(KNOWN_MIGRATIONS.length);
  });

  it('refuses to start on a database written by a newer Tributary, naming its migration and this version', async () => {
    const storage = await freshStorage(dialect);
    cleanups(storage.cleanup);
    await tributary(['migrate', ...storage.args]);
    const store = await openStore({ ...where(storage.args), migrate: false });
    await sql`insert into kysely_migration (name, timestamp) values ('999-from-the-future', ${new Date().toISOString()})`.execute(store.db);
    await store.close();

    const started = await failed(['serve', '--port', '0', ...storage.args]);
    expect(started.code).toBe(1);
    expect(started.stderr).toContain(
      `the database has migration 999-from-the-future which this Tributary (0.1.0) does not know (it knows up to ${KNOWN_MIGRATIONS.at(-1)}): it was written by a newer version; upgrade this one`,
    );
    expect(started.stderr).not.toContain('    at ');
    expect((await failed(['users', 'list', ...storage.args])).code).toBe(1);
    const status = await failed(['migrate', '--status', ...storage.args]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('applied  999-from-the-future');
    expect(status.stdout).toContain('1 unknown: upgrade this Tributary');
  });
});

describe.skipIf(!process.env.TRIBUTARY_TEST_DATABASE_URL)('three nodes started at once on a fresh PostgreSQL database', () => {
  const children: ChildProcess[] = [];
  let drop: (() => Promise<void>) | undefined;
  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await drop?.();
  });

  it('all start, and each migration runs once', async () => {
    const database = await createTestDatabase();
    drop = database.drop;
    const nodes = await Promise.all(
      [1, 2, 3].map(async () => {
        const node = await serve(['--database-url', database.url, '--data-dir', tempDir(), '--secret-key', 'shared']);
        children.push(node.child);
        return node;
      }),
    );
    expect(nodes).toHaveLength(3);
    const store = await openStore({ dataDir: '/nonexistent', databaseUrl: database.url, migrate: false });
    try {
      const rows = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(store.db);
      expect(rows.rows.map((r) => r.name)).toEqual([...KNOWN_MIGRATIONS]);
    } finally {
      await store.close();
    }
  });
});
