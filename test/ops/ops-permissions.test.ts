// backup and restore run by a user whose file permissions stop them: one line naming what they could not read or write,
// why, and what to do, exit code 2, and nothing written; never Node's or SQLite's bare words.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createAccount } from '../helpers/processes.js';
import { tempDir } from '../helpers/server.js';
import { runAsOtherUser, writableByOtherUser } from '../helpers/other-user.js';

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
});
