// backup and restore run by a user whose file permissions stop them: one line naming what they could not read or write,
// why, and what to do, exit code 2, and nothing written; never Node's or SQLite's bare words.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createAccount } from '../helpers/processes.js';
import { tempDir } from '../helpers/server.js';
import { openSqliteFile } from '../../src/store/sqlite-file.js';
import { AS_ROOT, readOnlyForOtherUser, runAsOtherUser, writableByOtherUser } from '../helpers/other-user.js';

describe('backup and restore as a user the file permissions stop', () => {
  it('restore of a backup this user cannot read refuses --from on one line, and restores nothing', async () => {
    const served = tempDir();
    await createAccount(['--data-dir', served], 'unreadable');
    const folder = tempDir();
    const backup = path.join(folder, 'b1.db');
    fs.copyFileSync(path.join(served, 'tributary.db'), backup);
    fs.chmodSync(backup, 0o000);
    fs.chmodSync(folder, 0o755);
    const target = tempDir();
    writableByOtherUser(target);
    expect(await runAsOtherUser(['restore', '--from', backup, '--data-dir', target])).toEqual({
      code: 2,
      stdout: '',
      stderr: `error: --from: ${backup} cannot be read by this user (permission denied, on the file or a folder above it): nothing was restored; run restore as a user who may read it\n`,
    });
    // A folder on the way that this user may not enter stops the read as well, and is not taken for a missing file.
    fs.chmodSync(backup, 0o644);
    fs.chmodSync(folder, 0o700);
    if (process.getuid?.() !== 0) fs.chmodSync(folder, 0o000);
    expect(await runAsOtherUser(['restore', '--from', backup, '--data-dir', target])).toMatchObject({
      code: 2,
      stderr: `error: --from: ${backup} cannot be read by this user (permission denied, on the file or a folder above it): nothing was restored; run restore as a user who may read it\n`,
    });
    fs.chmodSync(folder, 0o755);
    expect(fs.readdirSync(target)).toEqual([]);
  });

  it('backup by a user who may read the data directory but not write in it says why on one line (the -shm), and writes nothing', async () => {
    const dataDir = tempDir();
    await createAccount(['--data-dir', dataDir], 'reader');
    const database = path.join(dataDir, 'tributary.db');
    const release = readOnlyForOtherUser(dataDir);
    const folder = tempDir();
    writableByOtherUser(folder);
    const out = path.join(folder, 'b.db');
    try {
      // No server: no -shm beside the database, and SQLite must create one to read it.
      expect(fs.readdirSync(dataDir)).toEqual(['tributary.db']);
      expect(await runAsOtherUser(['backup', '--data-dir', dataDir, '--out', out])).toEqual({
        code: 2,
        stdout: '',
        stderr:
          `error: this user cannot read the database ${database}: SQLite must create tributary.db-shm beside a database in WAL mode to read it, ` +
          `and this user may not write in ${dataDir}: run backup as the user the server runs as, or give this user write permission on ${dataDir}\n`,
      });
      expect(fs.readdirSync(folder)).toEqual([]);
      expect(fs.readdirSync(dataDir)).toEqual(['tributary.db']);

      // With a -shm there (a server, here another connection, has the database open), it reads through it when it may.
      const open = openSqliteFile(database, { readonly: true });
      open.prepare('select count(*) from users').get();
      try {
        if (AS_ROOT) {
          fs.chmodSync(`${database}-shm`, 0o600);
          expect(await runAsOtherUser(['backup', '--data-dir', dataDir, '--out', out])).toEqual({
            code: 2,
            stdout: '',
            stderr: `error: this user cannot read the database ${database}: SQLite reads a database in WAL mode through tributary.db-shm beside it, which this user may not read: run backup as the user the server runs as\n`,
          });
          expect(fs.readdirSync(folder)).toEqual([]);
          fs.chmodSync(`${database}-shm`, 0o644);
        }
        const answer = await runAsOtherUser(['backup', '--data-dir', dataDir, '--out', out]);
        expect(answer.stdout).toMatch(/^backup written to /);
        expect(answer.code).toBe(0);
        expect(fs.readdirSync(folder)).toEqual(['b.db']);
      } finally {
        open.close();
      }
    } finally {
      release();
    }
  });

  it('backup of a database the user may not read says so, naming it, and leaves no partial copy', async () => {
    const dataDir = tempDir();
    await createAccount(['--data-dir', dataDir], 'stranger');
    const database = path.join(dataDir, 'tributary.db');
    fs.chmodSync(dataDir, 0o755);
    // As the server keeps it: its owner's alone.
    fs.chmodSync(database, AS_ROOT ? 0o600 : 0o000);
    const folder = tempDir();
    writableByOtherUser(folder);
    const out = path.join(folder, 'b.db');
    expect(await runAsOtherUser(['backup', '--data-dir', dataDir, '--out', out])).toEqual({
      code: 2,
      stdout: '',
      stderr: `error: this user cannot read the database ${database} (permission denied): run backup as the user the server runs as\n`,
    });
    expect(fs.readdirSync(folder)).toEqual([]);
    fs.chmodSync(database, 0o600);
  });

  it('backup into a folder the user may not write in says so, naming the folder, not its own partial file', async () => {
    const dataDir = tempDir();
    await createAccount(['--data-dir', dataDir], 'writer');
    writableByOtherUser(dataDir);
    fs.chmodSync(path.join(dataDir, 'tributary.db'), 0o644);
    const folder = tempDir();
    const release = readOnlyForOtherUser(folder);
    const out = path.join(folder, 'b.db');
    try {
      expect(await runAsOtherUser(['backup', '--data-dir', dataDir, '--out', out])).toEqual({
        code: 2,
        stdout: '',
        stderr: `error: this user cannot write in the folder of --out, ${folder} (permission denied): choose a folder it may write in\n`,
      });
      expect(fs.readdirSync(folder)).toEqual([]);
    } finally {
      release();
    }
  });
});
