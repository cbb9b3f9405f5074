// tributary backup and restore: a backup taken while a real server ingests, restored into a fresh data directory, serves the
// same key, the same endpoint URL and every event acknowledged before the backup began; and each refusal, with exit code 2.
import { execFile, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { restoreDatabase } from '../../src/ops/restore.js';
import { openSqliteFile } from '../../src/store/sqlite-file.js';
import { describe, expect, it } from 'vitest';
import { killedAfterAll } from '../helpers/cleanups.js';
import { BIN, createAccount, serve } from '../helpers/processes.js';
import { tempDir } from '../helpers/server.js';
import { client, request } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { mountTmpfs } from '../helpers/mounts.js';

const run = promisify(execFile);
const tributary = (args: string[]) => run(process.execPath, [BIN, ...args]);
/** Runs the command expecting it to fail; returns its exit code and standard error. */
const refused = (args: string[]) =>
  tributary(args).then(
    () => ({ code: 0, stderr: '' }),
    (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
  );

const EMITTER = `module.exports = { name: "Emitter", version: "0.0.1", props: { http: "$.interface.http" }, async run(event) { this.$emit({ n: event.body.n }); } };`;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** Every event of a source, all pages. */
async function allEvents(api: ReturnType<typeof client>, sourceId: string): Promise<{ id: string; event: { n: number } }[]> {
  const all: { id: string; event: { n: number } }[] = [];
  let after = '';
  for (;;) {
    const page = await api.get(`/v1/sources/${sourceId}/event_summaries?expand=event&limit=100${after ? `&after=${after}` : ''}`);
    all.push(...page.body.data);
    if (page.body.data.length < 100) return all;
    after = page.body.page_info.end_cursor;
  }
}

/**
 * Overwrites the events table's root page of the SQLite file, as a disk or a copy gone wrong would (SQLite's header
 * still reads); returns that page's number.
 */
function damageEventsRoot(file: string): number {
  const reader = openSqliteFile(file, { readonly: true });
  const { rootpage } = reader.prepare("select rootpage from sqlite_master where name = 'events'").get() as { rootpage: number };
  const pageSize = reader.pragma('page_size', { simple: true }) as number;
  reader.close();
  const fd = fs.openSync(file, 'r+');
  fs.writeSync(fd, Buffer.alloc(pageSize, 'X'), 0, pageSize, (rootpage - 1) * pageSize);
  fs.closeSync(fd);
  return rootpage;
}

describe('backup and restore', () => {
  const children = killedAfterAll();

  it('backs up under ingest load; the restored data directory serves the same key, endpoint URL and every event acknowledged before', async () => {
    const port = await freePort();
    const publicUrl = `http://127.0.0.1:${port}`;
    const dataDir = tempDir();
    const key = await createAccount(['--data-dir', dataDir], 'keeper');
    const server = await serve(['--data-dir', dataDir, '--port', String(port), '--public-url', publicUrl]);
    children.push(server.child);
    const api = client(publicUrl, key);
    const deployed = await api.post('/v1/sources', { component_code: EMITTER, name: 'emitter' });
    expect(deployed.status).toBe(200);
    const sourceId: string = deployed.body.data.id;
    const endpointUrl: string = deployed.body.data.configured_props.http.endpoint_url;

    // Eight clients post without pause until told to stop; each acknowledged number is recorded.
    const acknowledged = new Set<number>();
    let next = 0;
    let stop = false;
    const load = Array.from({ length: 8 }, async () => {
      while (!stop) {
        const n = ++next;
        const res = await request('POST', endpointUrl, { body: { n } });
        if (res.status === 200) acknowledged.add(n);
      }
    });
    await waitFor(
      () => Promise.resolve(acknowledged.size),
      (size) => size >= 200,
      { what: '200 acknowledged requests' },
    );

    const ackedBefore = [...acknowledged];
    const out = path.join(tempDir(), 'tributary-backup.db');
    const backup = await tributary(['backup', '--data-dir', dataDir, '--out', out]);
    const ackedDuring = acknowledged.size - ackedBefore.length;
    stop = true;
    await Promise.all(load);
    expect(ackedDuring).toBeGreaterThan(0);
    expect(backup.stdout).toMatch(new RegExp(`^backup written to ${out} \\(\\d+ bytes, \\d+ pages`));
    expect(backup.stdout).toContain('the secret key is not in it');
    // Not on a terminal: the final line only, no progress.
    expect(backup.stderr).toBe('');
    expect(fs.statSync(out).mode & 0o777).toBe(0o600);
    expect(fs.existsSync(path.join(path.dirname(out), 'secret.key'))).toBe(false);

    // Refusals while the server runs: the same --out again, a restore into its data directory, a move to PostgreSQL.
    expect(await refused(['backup', '--data-dir', dataDir, '--out', out])).toMatchObject({ code: 2, stderr: expect.stringContaining('exists') });
    // Each says what to do instead: stop the server first (another --data-dir is a second server's way out, not theirs).
    for (const [command, args] of [
      ['restore', ['--from', out, '--force']],
      ['migrate-store', ['--to', 'postgres://nobody@127.0.0.1:1/none']],
    ] as const) {
      const answer = await refused([command, '--data-dir', dataDir, ...args]);
      expect(answer.code).toBe(2);
      expect(answer.stderr).toBe(
        `error: another tributary serve (pid ${server.child.pid}) is using the data directory ${dataDir}; stop it first (SIGTERM, and wait until it has exited), then run ${command} again\n`,
      );
    }
    const exited = new Promise((resolve) => server.child.once('exit', resolve));
    server.child.kill('SIGKILL');
    await exited;

    const restoredDir = tempDir();
    fs.rmSync(restoredDir, { recursive: true });
    const restored = await tributary(['restore', '--from', out, '--data-dir', restoredDir]);
    expect(restored.stdout).toContain(`restored ${path.join(restoredDir, 'tributary.db')}`);
    // The backup is one self-contained file (rollback journal, not WAL): reading it writes nothing beside it, so a
    // backup kept read-only can be restored.
    const header = fs.readFileSync(out).subarray(18, 20);
    expect([...header]).toEqual([1, 1]);
    expect(fs.readdirSync(path.dirname(out)).filter((name) => name.startsWith(path.basename(out)))).toEqual([path.basename(out)]);
    expect(restored.stdout).toContain('has no secret.key');
    expect(await refused(['restore', '--from', out, '--data-dir', restoredDir])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('already holds a Tributary database'),
    });

    const again = await serve([
      '--data-dir',
      restoredDir,
      '--secret-key-file',
      path.join(dataDir, 'secret.key'),
      '--port',
      String(port),
      '--public-url',
      publicUrl,
    ]);
    children.push(again.child);
    expect((await api.get('/v1/users/me')).status).toBe(200);
    expect((await api.get(`/v1/sources/${sourceId}`)).body.data.configured_props.http.endpoint_url).toBe(endpointUrl);
    // Acknowledged before the backup: stored, or queued and run now.
    const events = await waitFor(
      () => allEvents(api, sourceId),
      (list) => ackedBefore.every((n) => list.some((e) => e.event.n === n)),
      { what: 'every event acknowledged before the backup' },
    );
    expect(new Set(events.map((e) => e.event.n)).size).toBe(events.length);
    expect((await request('POST', endpointUrl, { body: { n: -1 } })).status).toBe(200);
    await waitFor(
      () => allEvents(api, sourceId),
      (list) => list.some((e) => e.event.n === -1),
      { what: 'an event ingested after the restore' },
    );
  });

  it("backup refuses the running database's own files and anything else in its data directory as --out, by any path, even with --force", async () => {
    const dataDir = tempDir();
    const key = await createAccount(['--data-dir', dataDir], 'inplace');
    const server = await serve(['--data-dir', dataDir]);
    children.push(server.child);
    const database = path.join(dataDir, 'tributary.db');
    const inode = fs.statSync(database).ino;
    const elsewhere = tempDir();
    fs.symlinkSync(database, path.join(elsewhere, 'link.db'));
    fs.symlinkSync(dataDir, path.join(elsewhere, 'data'));
    fs.linkSync(database, path.join(elsewhere, 'hard.db'));
    const outs = [
      database,
      `${database}-wal`,
      `${database}-shm`,
      `${database}-journal`,
      path.join(elsewhere, 'link.db'),
      path.join(elsewhere, 'data', 'tributary.db'),
      path.join(elsewhere, 'hard.db'),
    ];
    for (const out of outs) {
      for (const force of [[], ['--force']]) {
        const answer = await refused(['backup', '--data-dir', dataDir, '--out', out, ...force]);
        expect(answer, out).toMatchObject({ code: 2, stderr: expect.stringMatching(/^error: --out .* is the database's own file /) });
      }
    }
    // The server's other files (its key, its lock) and anything else in the data directory, by any path.
    const keyFile = path.join(dataDir, 'secret.key');
    const keyBefore = fs.readFileSync(keyFile, 'utf8');
    for (const out of [keyFile, path.join(dataDir, 'tributary.lock'), path.join(elsewhere, 'data', 'secret.key'), path.join(dataDir, 'kept.db')]) {
      const answer = await refused(['backup', '--data-dir', dataDir, '--out', out, '--force']);
      expect(answer, out).toMatchObject({ code: 2, stderr: expect.stringMatching(/^error: --out .* is inside the data directory /) });
    }
    expect(fs.readFileSync(keyFile, 'utf8')).toBe(keyBefore);
    expect(fs.existsSync(path.join(dataDir, 'kept.db'))).toBe(false);
    expect(fs.statSync(database).ino).toBe(inode);
    expect(fs.existsSync(`${database}-journal`)).toBe(false);
    expect((await client(server.url, key).get('/v1/users/me')).status).toBe(200);
  });

  it('restore refuses what is not a Tributary database, and one written by a newer Tributary', async () => {
    const dir = tempDir();
    const notSqlite = path.join(dir, 'notes.txt');
    fs.writeFileSync(notSqlite, 'hello');
    expect(await refused(['restore', '--from', notSqlite, '--data-dir', tempDir()])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('is not an SQLite database'),
    });
    const otherSqlite = path.join(dir, 'other.db');
    openSqliteFile(otherSqlite).exec('create table t (x)');
    expect(await refused(['restore', '--from', otherSqlite, '--data-dir', tempDir()])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('not a Tributary one'),
    });
    expect(await refused(['restore', '--from', path.join(dir, 'missing.db'), '--data-dir', tempDir()])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('no such file'),
    });
    expect(await refused(['restore', '--from', dir, '--data-dir', tempDir()])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('is a folder; give the backup file'),
    });

    const source = tempDir();
    await createAccount(['--data-dir', source], 'newer');
    const newer = openSqliteFile(path.join(source, 'tributary.db'));
    newer.prepare('insert into kysely_migration (name, timestamp) values (?, ?)').run('999-from-the-future', new Date().toISOString());
    newer.close();
    const out = path.join(dir, 'newer.db');
    await tributary(['backup', '--data-dir', source, '--out', out]);
    const answer = await refused(['restore', '--from', out, '--data-dir', tempDir()]);
    expect(answer.code).toBe(2);
    expect(answer.stderr).toContain('999-from-the-future which this Tributary (0.1.0) does not know');
  });

  it('restore refuses a damaged or truncated backup, naming it, and leaves the database it would replace as it was', async () => {
    const served = tempDir();
    await createAccount(['--data-dir', served], 'damaged');
    const dir = tempDir();
    const backup = path.join(dir, 'good.db');
    await tributary(['backup', '--data-dir', served, '--out', backup]);
    const damaged = path.join(dir, 'damaged.db');
    fs.copyFileSync(backup, damaged);
    const rootpage = damageEventsRoot(damaged);
    const truncated = path.join(dir, 'truncated.db');
    fs.writeFileSync(truncated, fs.readFileSync(backup).subarray(0, fs.statSync(backup).size / 2));

    const target = tempDir();
    await createAccount(['--data-dir', target], 'kept');
    const before = fs.readFileSync(path.join(target, 'tributary.db'));
    const advice = 'nothing was restored; restore another backup, or make a new one with tributary backup';
    expect(await refused(['restore', '--from', damaged, '--data-dir', target, '--force'])).toEqual({
      code: 2,
      stderr: `error: --from: ${damaged} is damaged (SQLite's quick check: Tree ${rootpage} page ${rootpage}: btreeInitPage() returns error code 11): ${advice}\n`,
    });
    expect(await refused(['restore', '--from', truncated, '--data-dir', target, '--force'])).toEqual({
      code: 2,
      stderr: `error: --from: ${truncated} is damaged (SQLite: database disk image is malformed): ${advice}\n`,
    });
    expect(fs.readFileSync(path.join(target, 'tributary.db')).equals(before)).toBe(true);
    expect(fs.readdirSync(target).filter((name) => name.startsWith('tributary.db'))).toEqual(['tributary.db']);
  });

  // A full disk was said as a mistake in --from ('--from: could not copy …: ENOSPC', exit 2).
  it('restore into a data directory without room for its copy says so, with the room it needs, and leaves the database as it was', async (context) => {
    if (process.getuid?.() !== 0) return context.skip();
    const served = tempDir();
    await createAccount(['--data-dir', served], 'big');
    const alone = path.join(tempDir(), 'big.db');
    await tributary(['backup', '--data-dir', served, '--out', alone]);
    const db = openSqliteFile(alone);
    db.exec('create table ballast (x blob)');
    db.prepare('insert into ballast values (zeroblob(?))').run(6 * 1_048_576);
    db.close();
    // The same database as a hand copy with its -wal beside it: read from its staging copy into a second one.
    const withLog = path.join(tempDir(), 'big.db');
    fs.copyFileSync(alone, withLog);
    const writer = openSqliteFile(withLog);
    writer.pragma('journal_mode = WAL');
    writer.pragma('wal_autocheckpoint = 0');
    writer.prepare('update users set username = username').run();
    const copy = path.join(tempDir(), 'big.db');
    for (const suffix of ['', '-wal']) fs.copyFileSync(withLog + suffix, copy + suffix);
    writer.close();
    // 4 MB: no room for one copy; 10 MB: room for one, which is all a backup alone takes, not for two.
    for (const [backup, sizeMb, copies] of [
      [alone, 4, 'once'],
      [alone, 10, 'restored'],
      [copy, 4, 'twice'],
      [copy, 10, 'twice'],
    ] as const) {
      const what = `${backup === alone ? 'alone' : 'with its -wal'}, ${sizeMb} MB`;
      const megabytes = Math.ceil(fs.statSync(backup).size / 1_048_576);
      const target = tempDir();
      if (!mountTmpfs(target, sizeMb)) return context.skip();
      try {
        await createAccount(['--data-dir', target], 'kept');
        const before = fs.readFileSync(path.join(target, 'tributary.db'));
        const answer = await refused(['restore', '--from', backup, '--data-dir', target, '--force']);
        const kept = () => fs.readdirSync(target).filter((name) => !name.startsWith('tributary.lock') && name !== 'secret.key');
        if (copies === 'restored') {
          expect(answer, what).toEqual({ code: 0, stderr: '' });
          expect(kept(), what).toEqual(['tributary.db']);
          const restored = openSqliteFile(path.join(target, 'tributary.db'), { readonly: true });
          expect(restored.prepare('select username from users').all(), what).toEqual([{ username: 'big' }]);
          restored.close();
          continue;
        }
        const needs =
          copies === 'once' ? `${megabytes} MB (the database it puts in place)` : `${megabytes} MB twice (the copy it reads and the database it puts in place)`;
        expect(answer, what).toEqual({
          code: 1,
          stderr: `error: no room left in ${target} for the restore's copy of ${backup}: it needs about ${needs}; nothing was restored\n`,
        });
        expect(fs.readFileSync(path.join(target, 'tributary.db')).equals(before), what).toBe(true);
        expect(kept(), what).toEqual(['tributary.db']);
      } finally {
        execFileSync('umount', ['-l', target]);
      }
    }
  });

  it('backup of a damaged database says so on one line, naming it, and writes nothing', async () => {
    const served = tempDir();
    await createAccount(['--data-dir', served], 'broken');
    const database = path.join(served, 'tributary.db');
    const rootpage = damageEventsRoot(database);
    const out = path.join(tempDir(), 'b.db');
    expect(await refused(['backup', '--data-dir', served, '--out', out])).toEqual({
      code: 1,
      stderr:
        `error: the database ${database} is damaged (SQLite's quick check of its copy: Tree ${rootpage} page ${rootpage}: btreeInitPage() returns error code 11): ` +
        `nothing was written to ${out}; restore it from an earlier backup\n`,
    });
    expect(fs.readdirSync(path.dirname(out))).toEqual([]);
  });

  it('backup refuses PostgreSQL, pointing to pg_dump, and a data directory without a database', async () => {
    expect(await refused(['backup', '--out', path.join(tempDir(), 'x.db'), '--database-url', 'postgres://u@127.0.0.1/db'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('pg_dump'),
    });
    expect(await refused(['backup', '--out', path.join(tempDir(), 'x.db'), '--data-dir', tempDir()])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('no Tributary database'),
    });
    const served = tempDir();
    await createAccount(['--data-dir', served], 'folder');
    const folder = tempDir();
    expect(await refused(['backup', '--out', folder, '--force', '--data-dir', served])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('is a folder: give the path of the file to write'),
    });
    expect(fs.existsSync(`${folder}.partial`)).toBe(false);
  });

  it('restore refuses PostgreSQL too (flag or variable, as a cluster exports it), pointing to pg_restore, and writes nothing', async () => {
    const served = tempDir();
    await createAccount(['--data-dir', served], 'restored');
    const backup = path.join(tempDir(), 'b.db');
    await tributary(['backup', '--out', backup, '--data-dir', served]);
    const target = tempDir();
    const restore = ['restore', '--from', backup, '--data-dir', target];
    const byFlag = await refused([...restore, '--database-url', 'postgres://u@127.0.0.1/db']);
    const byVariable = await run(process.execPath, [BIN, ...restore], { env: { ...process.env, TRIBUTARY_DATABASE_URL: 'postgres://u@127.0.0.1/db' } }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
    );
    for (const answer of [byFlag, byVariable]) {
      expect(answer.code).toBe(2);
      expect(answer.stderr).toMatch(/^error: restore puts a SQLite backup in place in a data directory, but --database-url .*pg_restore.*\n$/);
    }
    expect(fs.existsSync(path.join(target, 'tributary.db'))).toBe(false);
  });

  it("a backup stopped by Ctrl-C or SIGTERM removes its partial copy (its owner's alone meanwhile) and exits 130 or 143", async () => {
    const dataDir = tempDir();
    await createAccount(['--data-dir', dataDir], 'interrupted');
    addBallast(path.join(dataDir, 'tributary.db'));
    const folder = path.join(tempDir(), 'my backups');
    fs.mkdirSync(folder);
    const out = path.join(folder, 'tributary.db');
    for (const [signal, code] of [
      ['SIGINT', 130],
      ['SIGTERM', 143],
    ] as const) {
      const child = spawn(process.execPath, [BIN, 'backup', '--data-dir', dataDir, '--out', out]);
      children.push(child);
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      await waitFor(
        async () => fs.statSync(`${out}.partial`, { throwIfNoEntry: false })?.size ?? 0,
        (size) => size > 0,
        { intervalMs: 5, what: 'the copy under way' },
      );
      // Hashed keys and sealed secrets: the owner's alone from the first page, not only once renamed.
      for (const file of [`${out}.partial`, `${out}.partial-journal`]) expect(fs.statSync(file).mode & 0o777, file).toBe(0o600);
      child.kill(signal);
      expect(await exited).toBe(code);
      expect(stderr).toBe(`error: the backup was interrupted: nothing was written to ${out} (stopped by ${signal})\n`);
      expect(fs.readdirSync(folder)).toEqual([]);
    }
  });

  it("a restore stopped by Ctrl-C or SIGTERM removes its partial copy (its owner's alone meanwhile) and its staging one, and exits 130 or 143", async () => {
    const dataDir = tempDir();
    await createAccount(['--data-dir', dataDir], 'restored');
    const alone = path.join(dataDir, 'tributary.db');
    addBallast(alone);
    // The same with its -wal beside it: copied whole into the staging folder, then read step by step into tributary.db.restoring.
    const writer = openSqliteFile(alone);
    writer.pragma('wal_autocheckpoint = 0');
    writer.prepare('update users set username = username').run();
    const withLog = path.join(tempDir(), 'hand-copy.db');
    for (const suffix of ['', '-wal']) fs.copyFileSync(alone + suffix, withLog + suffix);
    writer.close();
    const target = tempDir();
    const temporary = tempDir();
    for (const [from, signal, code] of [
      [alone, 'SIGINT', 130],
      [alone, 'SIGTERM', 143],
      [withLog, 'SIGINT', 130],
      [withLog, 'SIGTERM', 143],
    ] as const) {
      const child = spawn(process.execPath, [BIN, 'restore', '--from', from, '--data-dir', target], {
        env: { PATH: process.env.PATH ?? '', TMPDIR: temporary },
      });
      children.push(child);
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      // A backup alone is copied once, step by step, into the staging folder; one with a log, into tributary.db.restoring.
      const copying =
        from === alone
          ? [path.join(target, 'tributary.restore-staging', 'backup.db')]
          : [path.join(target, 'tributary.db.restoring'), path.join(target, 'tributary.db.restoring-journal')];
      await waitFor(
        async () => fs.statSync(copying[0]!, { throwIfNoEntry: false })?.size ?? 0,
        (size) => size > 0,
        { intervalMs: 5, what: 'the copy under way' },
      );
      // In a data directory others may read: the copy is its owner's alone from the first page, as the database.
      for (const file of copying) expect(fs.statSync(file).mode & 0o777, file).toBe(0o600);
      child.kill(signal);
      expect(await exited).toBe(code);
      expect(stderr).toBe(`error: the restore was interrupted: ${target} is as it was (stopped by ${signal})\n`);
      expect(fs.readdirSync(target)).toEqual(['tributary.lock']);
      expect(fs.readdirSync(temporary)).toEqual([]);
    }
  });

  it('a backup that cannot read the database for its lock fails naming it, and writes no empty file', async () => {
    const dataDir = tempDir();
    await createAccount(['--data-dir', dataDir], 'locked');
    const database = path.join(dataDir, 'tributary.db');
    const holder = openSqliteFile(database);
    holder.pragma('locking_mode = exclusive');
    holder.exec('begin exclusive');
    holder.exec('create table held (x)');
    const folder = tempDir();
    const out = path.join(folder, 'tributary.db');
    try {
      const answer = await refused(['backup', '--data-dir', dataDir, '--out', out]);
      expect(answer).toEqual({
        code: 1,
        stderr:
          `error: the database ${database} is locked by another process: the backup waited 5 s to read it, and nothing was written\n` +
          'hint: a process holds it exclusively (a sqlite3 shell with locking_mode=exclusive, or left in a transaction on a database not in WAL mode): end that process or its transaction, then try again\n',
      });
      expect(fs.readdirSync(folder)).toEqual([]);
    } finally {
      holder.exec('rollback');
      holder.close();
    }
  });

  it('restore reports its progress, step by step, up to the whole database', async () => {
    const live = tempDir();
    await createAccount(['--data-dir', live], 'first');
    const seen: Array<{ totalPages: number; remainingPages: number }> = [];
    const restoredDir = tempDir();
    const result = await restoreDatabase({
      from: path.join(live, 'tributary.db'),
      dataDir: restoredDir,
      force: false,
      onProgress: (progress) => seen.push(progress),
    });
    expect(result.file).toBe(path.join(restoredDir, 'tributary.db'));
    const pages = fs.statSync(result.file).size / 4096;
    expect(seen.at(-1)).toEqual({ totalPages: pages, remainingPages: 0 });
  });

  it('restores a WAL-mode database (a hand copy, with its -wal) from a read-only folder, with what the -wal holds', async (context) => {
    const live = tempDir();
    await createAccount(['--data-dir', live], 'first');
    const db = path.join(live, 'tributary.db');
    expect([...fs.readFileSync(db).subarray(18, 20)]).toEqual([2, 2]);
    // A reader's open snapshot keeps the second account's writes in the -wal: the hand copy takes both files.
    const reader = openSqliteFile(db, { readonly: true });
    reader.prepare('begin').run();
    reader.prepare('select count(*) from users').get();
    try {
      await createAccount(['--data-dir', live], 'second');
      // Without its -wal, the main file has only the first account: the second is in the -wal alone.
      const mainOnly = path.join(tempDir(), 'main-only.db');
      fs.copyFileSync(db, mainOnly);
      const main = openSqliteFile(mainOnly, { readonly: true });
      expect(main.prepare('select username from users').all()).toEqual([{ username: 'first' }]);
      main.close();
      const folder = readOnlyFolderWith([db, `${db}-wal`]);
      if (!folder) return context.skip('cannot make a read-only folder here (root without mount)');
      try {
        const copy = path.join(folder.dir, 'tributary.db');
        expect(() => fs.writeFileSync(path.join(folder.dir, 'probe'), '')).toThrow();
        const restoredDir = tempDir();
        const restored = await tributary(['restore', '--from', copy, '--data-dir', restoredDir]);
        expect(restored.stdout).toContain(`restored ${path.join(restoredDir, 'tributary.db')}`);
        const check = openSqliteFile(path.join(restoredDir, 'tributary.db'), { readonly: true });
        const names = check.prepare('select username from users order by username').all();
        check.close();
        expect(names).toEqual([{ username: 'first' }, { username: 'second' }]);
        expect(fs.readdirSync(folder.dir).sort()).toEqual(['tributary.db', 'tributary.db-wal']);
      } finally {
        folder.release();
      }
    } finally {
      reader.prepare('rollback').run();
      reader.close();
    }
  });
});

/** Adds 192 MB to a database: copying it takes many steps, so that a signal comes while one is on its way. */
function addBallast(database: string): void {
  const db = openSqliteFile(database);
  db.exec('create table ballast (x blob)');
  const insert = db.prepare('insert into ballast values (zeroblob(1048576))');
  db.transaction(() => {
    for (let i = 0; i < 192; i++) insert.run();
  })();
  db.close();
}

/**
 * A folder holding copies of `files` that this process cannot write to: a tmpfs remounted read-only as root (where
 * file modes do not stop writes), a folder without write permission otherwise. Undefined when neither can be made.
 */
function readOnlyFolderWith(files: string[]): { dir: string; release: () => void } | undefined {
  const dir = tempDir();
  const copyIn = () => {
    for (const file of files) fs.copyFileSync(file, path.join(dir, path.basename(file)));
  };
  if (process.getuid?.() !== 0) {
    copyIn();
    fs.chmodSync(dir, 0o555);
    return { dir, release: () => fs.chmodSync(dir, 0o755) };
  }
  if (!mountTmpfs(dir, 16)) return undefined;
  copyIn();
  execFileSync('mount', ['-o', 'remount,ro', dir]);
  return { dir, release: () => execFileSync('umount', ['-l', dir]) };
}
