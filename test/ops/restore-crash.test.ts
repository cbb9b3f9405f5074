// tributary restore killed (SIGKILL) at each point of its work: what it leaves in the data directory and in the system's
// temporary folder, and what the next restore or server start makes of it.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { KNOWN_MIGRATIONS } from '../../src/store/migrate.js';
import { openSqliteFile } from '../../src/store/sqlite-file.js';
import { killedAfterAll } from '../helpers/cleanups.js';
import { runCli, startCli } from '../helpers/cli.js';
import { BIN, createAccount, killHard, serve } from '../helpers/processes.js';
import { tempDir } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const run = promisify(execFile);
const RESTORE_MODULE = pathToFileURL(path.resolve(import.meta.dirname, '../../dist/ops/restore.js')).href;

/**
 * Runs a real restore (`--force`) in a process of its own that kills itself (SIGKILL) as the swap reaches `step`:
 * what it leaves is what a crash or a kill -9 at that instant leaves. Resolves with the signal it ended by.
 */
async function restoreKilledAt(from: string, dataDir: string, step: string): Promise<string | null> {
  const script = `
    import { restoreDatabase } from ${JSON.stringify(RESTORE_MODULE)};
    const [from, dataDir, step] = process.argv.slice(1);
    await restoreDatabase({ from, dataDir, force: true, onSwapStep: (reached) => { if (reached === step) process.kill(process.pid, 'SIGKILL'); } });`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, from, dataDir, step], { stdio: 'inherit' });
  return new Promise((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
}

/**
 * Runs the real restore in a child process that stops at `step` until its standard input ends: `paused` settles once
 * it is there; `resume()` lets it finish and resolves with its exit code.
 */
function restorePausedAt(
  from: string,
  dataDir: string,
  step: string,
  children: import('node:child_process').ChildProcess[],
): { paused: Promise<void>; resume: () => Promise<number | null> } {
  // The step's callback is synchronous: it blocks on a read of standard input until that ends.
  const script = `
    import fs from 'node:fs';
    import { restoreDatabase } from ${JSON.stringify(RESTORE_MODULE)};
    const [from, dataDir, step] = process.argv.slice(1);
    const untilStdinEnds = () => {
      for (;;) {
        try {
          if (fs.readSync(0, Buffer.alloc(1)) === 0) return;
        } catch (error) {
          if (error.code !== 'EAGAIN') throw error;
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
        }
      }
    };
    await restoreDatabase({ from, dataDir, force: true, onSwapStep: (reached) => {
      if (reached !== step) return;
      fs.writeSync(1, 'paused\\n');
      untilStdinEnds();
    } });`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, from, dataDir, step], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const paused = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('paused') && resolve());
    void exited.then(() => reject(new Error('the restore ended before it paused')));
  });
  const resume = () => {
    child.stdin!.end();
    return exited;
  };
  return { paused, resume };
}

/**
 * A data directory as a server killed outright leaves it: user `kept` committed, but in `tributary.db-wal` alone
 * (the main file has only `first`). Made by copying both files while a reader's snapshot keeps the log from being
 * folded in: at an instant between two commits, which is all a crash can leave.
 */
async function crashedServerDirectory(): Promise<string> {
  const live = tempDir();
  await createAccount(['--data-dir', live], 'first');
  const database = path.join(live, 'tributary.db');
  const reader = openSqliteFile(database, { readonly: true });
  reader.prepare('begin').run();
  reader.prepare('select count(*) from users').get();
  try {
    await createAccount(['--data-dir', live], 'kept');
    const crashed = tempDir();
    for (const suffix of ['', '-wal']) fs.copyFileSync(database + suffix, path.join(crashed, `tributary.db${suffix}`));
    return crashed;
  } finally {
    reader.prepare('rollback').run();
    reader.close();
  }
}

/** The users of the database in `dir`, read from copies of its files, so that reading changes nothing there. */
function usersOnDisk(dir: string, name = 'tributary.db'): string[] {
  const copy = tempDir();
  for (const suffix of ['', '-wal', '-journal']) {
    const file = path.join(dir, name + suffix);
    if (fs.existsSync(file)) fs.copyFileSync(file, path.join(copy, `tributary.db${suffix}`));
  }
  return usernames(path.join(copy, 'tributary.db'));
}

/** Starts `serve` on `dataDir`: its exit code and error output if it refuses, 'served' if it starts (and is then stopped). */
async function serveOnce(dataDir: string, children: import('node:child_process').ChildProcess[]): Promise<{ code: number | null; stderr: string } | 'served'> {
  const server = startCli(['serve', '--data-dir', dataDir, '--port', '0', '--log-level', 'error'], { env: { PATH: process.env.PATH ?? '' }, cwd: dataDir });
  children.push(server.child);
  const listening = server.waitForOutput(/listening at/).then(() => 'served' as const);
  const outcome = await Promise.race([listening, server.exit.then((code) => ({ code, stderr: server.stderr() }))]);
  listening.catch(() => undefined);
  if (outcome === 'served') await killHard(server.child);
  return outcome;
}

/** A hand copy of the database in `dir` with its -wal beside it, holding a commit (a write changing nothing) the main file lacks. */
function handCopyWithLog(dir: string): string {
  const database = path.join(dir, 'tributary.db');
  const db = openSqliteFile(database);
  try {
    db.pragma('wal_autocheckpoint = 0');
    db.prepare('update users set username = username').run();
    const copy = path.join(tempDir(), 'hand-copy.db');
    for (const suffix of ['', '-wal']) fs.copyFileSync(database + suffix, copy + suffix);
    expect(fs.statSync(`${copy}-wal`).size).toBeGreaterThan(0);
    return copy;
  } finally {
    db.close();
  }
}

function listing(dir: string): string[] {
  return fs.readdirSync(dir).sort();
}

/** Adds `megabytes` to a database: copying it takes many steps, so that a kill comes while one is on its way. */
function addBallast(database: string, megabytes: number): void {
  const db = openSqliteFile(database);
  db.exec('create table ballast (x blob)');
  const insert = db.prepare('insert into ballast values (zeroblob(1048576))');
  db.transaction(() => {
    for (let i = 0; i < megabytes; i++) insert.run();
  })();
  db.close();
}

function usernames(database: string): string[] {
  const db = openSqliteFile(database, { readonly: true });
  try {
    return (db.prepare('select username from users order by username').all() as { username: string }[]).map((r) => r.username);
  } finally {
    db.close();
  }
}

describe('restore killed on its way', () => {
  const children = killedAfterAll();
  const env = { PATH: process.env.PATH ?? '' };

  it('killed during its copy, it leaves nothing in the temporary folder; the next restore, or serve, removes its staging copy', async () => {
    const source = tempDir();
    await createAccount(['--data-dir', source], 'restored');
    const from = path.join(source, 'tributary.db');
    addBallast(from, 128);
    const target = tempDir();
    const temporary = tempDir();
    const staging = path.join(target, 'tributary.restore-staging');
    const killDuringCopy = async () => {
      const child = spawn(process.execPath, [BIN, 'restore', '--from', from, '--data-dir', target], { env: { ...env, TMPDIR: temporary } });
      children.push(child);
      // A backup alone is copied once, into the staging folder, step by step: the kill comes while that copy is on its way.
      await waitFor(
        async () => fs.statSync(path.join(staging, 'backup.db'), { throwIfNoEntry: false })?.size ?? 0,
        (size) => size > 0,
        { intervalMs: 5, what: 'the copy into the data directory under way' },
      );
      await killHard(child);
      // The staging copy is in the data directory, where the next restore or server finds it; none in TMPDIR.
      expect(fs.readdirSync(temporary)).toEqual([]);
      expect(fs.statSync(path.join(staging, 'backup.db')).size).toBeLessThan(fs.statSync(from).size);
      expect(fs.existsSync(path.join(target, 'tributary.db.restoring'))).toBe(false);
    };

    await killDuringCopy();
    const again = await runCli(['restore', '--from', from, '--data-dir', target], { env: { ...env, TMPDIR: temporary }, cwd: target });
    expect(again).toEqual({
      code: 0,
      stdout:
        `removed what a killed restore had left: ${staging}\n` +
        `restored ${path.join(target, 'tributary.db')} (${KNOWN_MIGRATIONS.length} migrations applied in the backup)\n` +
        'the data directory has no secret.key: put the key file you kept there, or start the server with the --secret-key or --secret-key-file it used; ' +
        'without it, sealed secrets (secret props, connected accounts, webhook secrets) cannot be opened\n',
      stderr: '',
    });
    expect(fs.readdirSync(target).sort()).toEqual(['tributary.db', 'tributary.lock']);
    expect(fs.readdirSync(temporary)).toEqual([]);

    // A server started on the data directory removes it too, under the lock that keeps a restore from working meanwhile.
    fs.rmSync(path.join(target, 'tributary.db'));
    await killDuringCopy();
    fs.copyFileSync(from, path.join(target, 'tributary.db'));
    const server = await serve(['--data-dir', target]);
    children.push(server.child);
    expect(fs.existsSync(staging)).toBe(false);
    await killHard(server.child);
    expect(usernames(path.join(target, 'tributary.db'))).toEqual(['restored']);
  });

  // A backup alone is renamed into place from its checked copy; one with a -wal beside it is read into another copy.
  it.for(['a backup alone', 'a hand copy with its -wal'])(
    '%s, killed at each point of putting the copy in place: a whole database is on disk (the old one with what its -wal held, or the new one); serve refuses while the copy lies there; restore again finishes',
    { timeout: 120_000 },
    async (kind) => {
      const crashed = await crashedServerDirectory();
      expect(listing(crashed)).toEqual(['tributary.db', 'tributary.db-wal']);
      const mainFileOnly = tempDir();
      fs.copyFileSync(path.join(crashed, 'tributary.db'), path.join(mainFileOnly, 'tributary.db'));
      expect(usernames(path.join(mainFileOnly, 'tributary.db'))).toEqual(['first']);
      expect(usersOnDisk(crashed)).toEqual(['first', 'kept']);
      const source = tempDir();
      await createAccount(['--data-dir', source], 'restored');
      let backup = path.join(tempDir(), 'b.db');
      if (kind === 'a backup alone') await run(process.execPath, [BIN, 'backup', '--data-dir', source, '--out', backup]);
      else backup = handCopyWithLog(source);
      for (const point of ['staged', 'copied', 'folded', 'logs-removed', 'renamed']) {
        const step = `${point} (${kind})`;
        const dataDir = tempDir();
        for (const name of fs.readdirSync(crashed)) fs.copyFileSync(path.join(crashed, name), path.join(dataDir, name));
        expect(await restoreKilledAt(backup, dataDir, point), step).toBe('SIGKILL');
        const restoring = path.join(dataDir, 'tributary.db.restoring');
        if (point === 'staged') {
          // Checked in the staging folder, nothing beside the database yet: the old one whole; serve starts on it.
          expect(
            listing(dataDir).filter((name) => !name.startsWith('tributary.lock') && name !== 'tributary.pid'),
            step,
          ).toEqual(['tributary.db', 'tributary.db-wal', 'tributary.restore-staging']);
          expect(usersOnDisk(dataDir), step).toEqual(['first', 'kept']);
          expect(await serveOnce(dataDir, children), step).toBe('served');
          expect(fs.existsSync(path.join(dataDir, 'tributary.restore-staging')), step).toBe(false);
        } else if (point === 'renamed') {
          // The new database, and no log of the old one beside it for SQLite to replay into it.
          expect(
            listing(dataDir).filter((name) => !name.startsWith('tributary.lock') && name !== 'tributary.pid'),
            step,
          ).toEqual(['tributary.db', 'tributary.restore-staging']);
          expect(usersOnDisk(dataDir), step).toEqual(['restored']);
        } else {
          // The old database whole, with what its -wal held (folded into the file from 'folded' on).
          expect(usersOnDisk(dataDir), step).toEqual(['first', 'kept']);
          expect(usersOnDisk(dataDir, 'tributary.db.restoring'), step).toEqual(['restored']);
          // A backup alone was copied once: its checked copy is the one beside the database (one copy's room, not two).
          expect(fs.existsSync(path.join(dataDir, 'tributary.restore-staging', 'backup.db')), step).toBe(kind !== 'a backup alone');
          const databaseFiles = () => listing(dataDir).filter((name) => name.startsWith('tributary.db'));
          const before = databaseFiles();
          expect(await serveOnce(dataDir, children), step).toEqual({
            code: 1,
            stderr:
              `error: a restore into ${dataDir} was interrupted before it put its database in place (it left tributary.db.restoring): ` +
              `run the same tributary restore again, or delete ${restoring} to go on with tributary.db as it is (the restore had not replaced it)\n`,
          });
          // migrate-store would move the database the restore did not replace: it refuses the same way, before any connection.
          const moved = await runCli(['migrate-store', '--data-dir', dataDir, '--to', 'postgres://nobody@127.0.0.1:1/none'], { env, cwd: dataDir });
          expect(moved, step).toEqual({
            code: 1,
            stdout: '',
            stderr:
              `error: a restore into ${dataDir} was interrupted before it put its database in place (it left tributary.db.restoring): ` +
              `run the same tributary restore again, or delete ${restoring} to go on with tributary.db as it is (the restore had not replaced it)\n`,
          });
          // Nor do the commands that take no lock of their own: users create made an account that the restore would replace.
          const created = await runCli(['users', 'create', '--username', 'lost', '--email', 'lost@x.test', '--data-dir', dataDir], { env, cwd: dataDir });
          expect([created.code, created.stderr], step).toEqual([
            1,
            `error: a restore into ${dataDir} was interrupted before it put its database in place (it left tributary.db.restoring): ` +
              `run the same tributary restore again, or delete ${restoring} to go on with tributary.db as it is (the restore had not replaced it)\n`,
          ]);
          expect(databaseFiles(), step).toEqual(before);
        }
        const again = await runCli(['restore', '--from', backup, '--data-dir', dataDir, '--force'], { env, cwd: dataDir });
        expect(again.code, again.stderr).toBe(0);
        if (point === 'staged') expect(again.stdout, step).not.toContain('removed what a killed restore had left');
        else
          expect(again.stdout, step).toContain(
            // serve removed the staging copy where it ran; the copy it refused for is restore's to remove.
            `removed what a killed restore had left: ${point === 'renamed' ? path.join(dataDir, 'tributary.restore-staging') : restoring}\n`,
          );
        // The server started after 'staged' left its own files (its key, its code folders); none of restore's.
        const serversFiles = point === 'staged' ? ['code', 'packages', 'secret.key'] : [];
        expect(listing(dataDir), step).toEqual(['tributary.db', 'tributary.lock', ...serversFiles].sort());
        expect(usernames(path.join(dataDir, 'tributary.db')), step).toEqual(['restored']);
      }
    },
  );

  it('while a restore is at work, users create and migrate refuse, saying so, and write nothing the restore would replace', async () => {
    const source = tempDir();
    await createAccount(['--data-dir', source], 'restored');
    const backup = path.join(tempDir(), 'b.db');
    await run(process.execPath, [BIN, 'backup', '--data-dir', source, '--out', backup]);
    const dataDir = tempDir();
    await createAccount(['--data-dir', dataDir], 'first');
    const restore = restorePausedAt(backup, dataDir, 'copied', children);
    await restore.paused;
    const refusal = `error: a restore is replacing the database in ${dataDir}: wait until it has finished, then run this command again\n`;
    const created = await runCli(['users', 'create', '--username', 'lost', '--email', 'lost@x.test', '--data-dir', dataDir], { env, cwd: dataDir });
    expect([created.code, created.stderr]).toEqual([1, refusal]);
    const migrated = await runCli(['migrate', '--data-dir', dataDir], { env, cwd: dataDir });
    expect([migrated.code, migrated.stderr]).toEqual([1, refusal]);
    expect(await restore.resume()).toBe(0);
    expect(usernames(path.join(dataDir, 'tributary.db'))).toEqual(['restored']);
    // Once it is done, they work again.
    const after = await runCli(['users', 'create', '--username', 'later', '--email', 'later@x.test', '--data-dir', dataDir], { env, cwd: dataDir });
    expect(after.code, after.stderr).toBe(0);
  });

  it('a database whose -wal cannot be folded into it (damaged) is kept aside with that -wal, linked before the -wal leaves, and the message names it', async () => {
    const crashed = await crashedServerDirectory();
    const source = tempDir();
    await createAccount(['--data-dir', source], 'restored');
    const backup = path.join(tempDir(), 'b.db');
    await run(process.execPath, [BIN, 'backup', '--data-dir', source, '--out', backup]);
    /** A crashed server's data directory whose database file was cut to half its size: SQLite finds it malformed. */
    const damagedCopy = () => {
      const dataDir = tempDir();
      for (const name of fs.readdirSync(crashed)) fs.copyFileSync(path.join(crashed, name), path.join(dataDir, name));
      const database = path.join(dataDir, 'tributary.db');
      fs.truncateSync(database, fs.statSync(database).size / 2);
      return { dataDir, files: ['', '-wal'].map((suffix) => fs.readFileSync(`${database}${suffix}`)) };
    };
    const keptAsBefore = (dataDir: string, files: Buffer[], name: string) => {
      ['', '-wal'].forEach((suffix, i) => {
        expect(fs.readFileSync(path.join(dataDir, `${name}${suffix}`)).equals(files[i]!), `${name}${suffix}`).toBe(true);
      });
    };

    const { dataDir, files } = damagedCopy();
    const restored = await runCli(['restore', '--from', backup, '--data-dir', dataDir, '--force'], { env, cwd: dataDir });
    const aside = path.join(dataDir, 'tributary.db.before-restore');
    expect(restored.stdout).toContain(
      `the database it replaced could not be checkpointed (it is damaged, or another process has it open), so its log was not folded into it: it is kept, with its log, as ${aside}; delete those files once you no longer need them`,
    );
    expect(listing(dataDir)).toEqual(['tributary.db', 'tributary.db.before-restore', 'tributary.db.before-restore-wal', 'tributary.lock']);
    keptAsBefore(dataDir, files, 'tributary.db.before-restore');
    expect(usernames(path.join(dataDir, 'tributary.db'))).toEqual(['restored']);
    // A second such restore keeps the first one's files and picks the next name.
    fs.copyFileSync(path.join(crashed, 'tributary.db-wal'), path.join(dataDir, 'tributary.db-wal'));
    fs.writeFileSync(path.join(dataDir, 'tributary.db'), files[0]!);
    await runCli(['restore', '--from', backup, '--data-dir', dataDir, '--force'], { env, cwd: dataDir });
    expect(listing(dataDir)).toEqual([
      'tributary.db',
      'tributary.db.before-restore',
      'tributary.db.before-restore-wal',
      'tributary.db.before-restore.2',
      'tributary.db.before-restore.2-wal',
      'tributary.lock',
    ]);
    keptAsBefore(dataDir, files, 'tributary.db.before-restore.2');

    for (const step of ['kept-aside', 'logs-removed']) {
      const { dataDir, files } = damagedCopy();
      expect(await restoreKilledAt(backup, dataDir, step), step).toBe('SIGKILL');
      // The old files are whole under the kept name from the moment the -wal leaves tributary.db.
      keptAsBefore(dataDir, files, 'tributary.db.before-restore');
      expect(fs.existsSync(path.join(dataDir, 'tributary.db-wal')), step).toBe(step === 'kept-aside');
      const answer = await serveOnce(dataDir, children);
      expect(answer, step).toMatchObject({ code: 1 });
      expect((answer as { stderr: string }).stderr, step).toMatch(
        /; the database as it was before a restore, with its log, is kept as tributary\.db\.before-restore\n$/,
      );
      const again = await runCli(['restore', '--from', backup, '--data-dir', dataDir, '--force'], { env, cwd: dataDir });
      expect(again.code, again.stderr).toBe(0);
      expect(usernames(path.join(dataDir, 'tributary.db')), step).toEqual(['restored']);
      expect(fs.existsSync(path.join(dataDir, 'tributary.db-wal')), step).toBe(false);
      keptAsBefore(dataDir, files, 'tributary.db.before-restore');
    }
  });

  it('a restore into an empty data directory killed before its copy was in place: serve refuses rather than start a new, empty database', async () => {
    const source = tempDir();
    await createAccount(['--data-dir', source], 'restored');
    const backup = path.join(tempDir(), 'b.db');
    await run(process.execPath, [BIN, 'backup', '--data-dir', source, '--out', backup]);
    const dataDir = tempDir();
    expect(await restoreKilledAt(backup, dataDir, 'copied')).toBe('SIGKILL');
    const restoring = path.join(dataDir, 'tributary.db.restoring');
    expect(await serveOnce(dataDir, children)).toEqual({
      code: 1,
      stderr:
        `error: a restore into ${dataDir} was interrupted before it put its database in place (it left tributary.db.restoring): ` +
        `run the same tributary restore again, or delete ${restoring} to start with a new, empty database\n`,
    });
    expect(fs.existsSync(path.join(dataDir, 'tributary.db'))).toBe(false);
    // A restore refused (this backup is not Tributary's) leaves it there: serve would still start on nothing.
    const other = path.join(tempDir(), 'other.db');
    const foreign = openSqliteFile(other);
    foreign.exec('create table t (x)');
    foreign.close();
    const refused = await runCli(['restore', '--from', other, '--data-dir', dataDir], { env, cwd: dataDir });
    expect(refused).toMatchObject({ code: 2, stdout: '' });
    expect(fs.existsSync(restoring)).toBe(true);
    // Without --force: there is no database to replace, only the killed one's copy.
    const again = await runCli(['restore', '--from', backup, '--data-dir', dataDir], { env, cwd: dataDir });
    expect(again.stdout).toContain(`removed what a killed restore had left: ${restoring}\n`);
    expect(usernames(path.join(dataDir, 'tributary.db'))).toEqual(['restored']);
  });
});
