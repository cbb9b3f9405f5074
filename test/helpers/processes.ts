// The real `tributary` binary as tests of crashes and restarts use it: a server process to kill, and accounts made by the CLI.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { createTestDatabase, tempDir, type Dialect } from './server.js';

export const BIN = path.resolve(import.meta.dirname, '../../bin/tributary.js');
const run = promisify(execFile);

/** Starts `tributary serve` on a free port with `args` (and `nodeArgs` before the script); resolves once it listens. */
export function serve(args: string[], nodeArgs: string[] = []): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(
    process.execPath,
    [...nodeArgs, BIN, 'serve', '--port', '0', '--log-level', 'error', '--event-retention', '100000', '--rate-limit', '0', ...args],
    {
      env: { PATH: process.env.PATH ?? '' },
    },
  );
  let output = '';
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening at (http:\/\/\S+) /.exec(output);
      if (match) resolve({ child, url: match[1]! });
    });
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${output}`)));
  });
}

/** Kills a server process at once (no graceful stop) and waits until it is gone. */
export async function killHard(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/** Storage flags for a fresh data folder (and, on PostgreSQL, a fresh database, dropped by `cleanup`). */
export async function freshStorage(dialect: Dialect): Promise<{ args: string[]; cleanup: () => Promise<void> }> {
  const args = ['--data-dir', tempDir()];
  if (dialect !== 'postgres') return { args, cleanup: async () => undefined };
  const database = await createTestDatabase();
  args.push('--database-url', database.url);
  return { args, cleanup: database.drop };
}

/** Creates a paid account with the CLI on that storage; returns its API key. */
export async function createAccount(storage: string[], username: string): Promise<string> {
  const { stdout } = await run(process.execPath, [
    BIN,
    'users',
    'create',
    '--username',
    username,
    '--email',
    `${username}@example.test`,
    '--plan',
    'paid',
    '--json',
    ...storage,
  ]);
  return JSON.parse(stdout.trim()).api_key as string;
}
