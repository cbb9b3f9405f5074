// An empty path given to an operations command (`--data-dir "$DIR"` with DIR unset) is refused as such, not taken as the current folder.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { BIN, createAccount } from '../helpers/processes.js';
import { tempDir } from '../helpers/server.js';

const run = promisify(execFile);

describe('empty paths', () => {
  const env = { PATH: process.env.PATH ?? '' };

  it('restore, backup and users refuse an empty --data-dir, --from or --out with exit 2, and write nothing where they run', async () => {
    const served = tempDir();
    await createAccount(['--data-dir', served], 'restored');
    const backup = path.join(tempDir(), 'b.db');
    await run(process.execPath, [BIN, 'backup', '--data-dir', served, '--out', backup]);
    const cwd = tempDir();
    const emptyDataDir = 'error: --data-dir (TRIBUTARY_DATA_DIR): expected the path of a folder, got an empty value\n';
    // It restored into the folder it ran in: tributary.db there, and 'restored /that/folder/tributary.db'.
    expect(await runCli(['restore', '--from', backup, '--data-dir', ''], { env, cwd })).toEqual({ code: 2, stdout: '', stderr: emptyDataDir });
    expect(await runCli(['users', 'list'], { env: { ...env, TRIBUTARY_DATA_DIR: '' }, cwd })).toEqual({ code: 2, stdout: '', stderr: emptyDataDir });
    expect(await runCli(['restore', '--from', ' ', '--data-dir', tempDir()], { env, cwd })).toEqual({
      code: 2,
      stdout: '',
      stderr: 'error: --from: expected the path of a backup file, got an empty value\n',
    });
    expect(await runCli(['backup', '--out', '', '--data-dir', served], { env, cwd })).toEqual({
      code: 2,
      stdout: '',
      stderr: 'error: --out: expected the path of the file to write, got an empty value\n',
    });
    expect(fs.readdirSync(cwd)).toEqual([]);
  });
});
