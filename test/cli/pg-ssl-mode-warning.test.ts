// A database URL with sslmode=require: pg's nine-line process warning is said on one line of the command's own; other warnings are left to Node.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { createAccount } from '../helpers/processes.js';
import { tempDir } from '../helpers/server.js';

const run = promisify(execFile);
const WARNING_MODULE = pathToFileURL(path.resolve(import.meta.dirname, '../../dist/cli/pg-ssl-mode-warning.js')).href;

const warningFor = (mode: string) =>
  `warning: sslmode=${mode} in the database URL is taken as verify-full by this build's PostgreSQL driver (the server's certificate is checked against trusted CAs and its host name); ` +
  `write sslmode=verify-full to keep that, or add uselibpqcompat=true to the URL for libpq's meaning of sslmode=${mode}\n`;

describe('sslmode=require in a database URL', () => {
  const env = { PATH: process.env.PATH ?? '' };

  it('migrate-store and migrate say what it means on one line, then their own error', async () => {
    const dataDir = tempDir();
    await createAccount(['--data-dir', dataDir], 'moved');
    // Nothing listens on port 1: the warning comes as the URL is read, before any connection.
    const moved = await runCli(['migrate-store', '--data-dir', dataDir, '--to', 'postgres://nobody@127.0.0.1:1/none?sslmode=require'], { env, cwd: dataDir });
    expect(moved).toEqual({
      code: 2,
      stdout: '',
      stderr: `${warningFor('require')}error: cannot connect to the --to database: connect ECONNREFUSED 127.0.0.1:1\n`,
    });
    const status = await runCli(['migrate', '--status', '--database-url', 'postgres://nobody@127.0.0.1:1/none?sslmode=prefer'], { env, cwd: dataDir });
    expect(status.code).toBe(1);
    expect(status.stderr.startsWith(`${warningFor('prefer')}error: cannot open the database at postgres://nobody@127.0.0.1:1/none?sslmode=prefer`)).toBe(true);
    expect(status.stderr.split('\n')).toHaveLength(3);
  });

  it('every other process warning is printed by Node as before', async () => {
    const script = `
      import { sayPgSslModeWarningOnOneLine } from ${JSON.stringify(WARNING_MODULE)};
      sayPgSslModeWarningOnOneLine();
      process.emitWarning('an old way', 'DeprecationWarning');
      process.emitWarning(new Error('something else'));`;
    const { stderr } = await run(process.execPath, ['--input-type=module', '-e', script], { env });
    expect(stderr).toMatch(/^\(node:\d+\) DeprecationWarning: an old way\n/);
    expect(stderr).toMatch(/\n\(node:\d+\) Error: something else\n$/);
  });
});
