// tributary restore killed (SIGKILL) at each point of its work: what it leaves in the data directory and in the system's
// temporary folder, and what the next restore or server start makes of it.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSqliteFile } from '../../src/store/sqlite-file.js';
import { killedAfterAll } from '../helpers/cleanups.js';
import { runCli } from '../helpers/cli.js';
import { BIN, createAccount, killHard, serve } from '../helpers/processes.js';
import { tempDir } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

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
      await waitFor(
        async () => fs.statSync(path.join(target, 'tributary.db.restoring'), { throwIfNoEntry: false })?.size ?? 0,
        (size) => size > 0,
        { intervalMs: 5, what: 'the copy into the data directory under way' },
      );
      await killHard(child);
      // The staging copy is in the data directory, where the next restore or server finds it; none in TMPDIR.
      expect(fs.readdirSync(temporary)).toEqual([]);
      expect(fs.statSync(path.join(staging, 'backup.db')).size).toBe(fs.statSync(from).size);
      fs.rmSync(path.join(target, 'tributary.db.restoring'));
      fs.rmSync(path.join(target, 'tributary.db.restoring-journal'), { force: true });
    };

    await killDuringCopy();
    const again = await runCli(['restore', '--from', from, '--data-dir', target], { env: { ...env, TMPDIR: temporary }, cwd: target });
    expect(again).toEqual({
      code: 0,
      stdout:
        `removed ${staging}, the copy of a backup that a killed restore had left\n` +
        `restored ${path.join(target, 'tributary.db')} (18 migrations applied in the backup)\n` +
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
});
