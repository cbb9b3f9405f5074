// The real `tributary` binary as client tests run it: to its end, or started and watched until its output says something.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll } from 'vitest';
import { BIN } from './processes.js';
import { startTestServer, tempDir, type TestServer } from './server.js';
import { waitFor } from './wait.js';

const execFileAsync = promisify(execFile);

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A running command whose output can be waited on. */
export interface RunningCli {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  waitForOutput: (pattern: RegExp, stream?: 'stdout' | 'stderr') => Promise<RegExpExecArray>;
  exit: Promise<number | null>;
}

/** Runs `tributary <args>` to its end with exactly `env` (nothing of the test's own environment but what it passes). */
export function runCli(args: string[], options: { env: Record<string, string>; cwd: string; input?: string }): Promise<CliResult> {
  const child = execFileAsync(process.execPath, [BIN, ...args], { env: options.env, cwd: options.cwd });
  if (options.input !== undefined) child.child.stdin!.end(options.input);
  return child.then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

/** Starts `tributary <args>` and collects its output. */
export function startCli(args: string[], options: { env: Record<string, string>; cwd: string }): RunningCli {
  const child = spawn(process.execPath, [BIN, ...args], { env: options.env, cwd: options.cwd });
  const output = { stdout: '', stderr: '' };
  child.stdout!.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    stdout: () => output.stdout,
    stderr: () => output.stderr,
    exit,
    waitForOutput: async (pattern, stream = 'stdout') => {
      let match: RegExpExecArray | null = null;
      await waitFor(
        async () => (match = pattern.exec(output[stream])),
        (m) => m !== null,
        { what: `${pattern} on ${stream}; stdout: ${output.stdout}; stderr: ${output.stderr}`, timeoutMs: 30_000 },
      );
      return match!;
    },
  };
}

/** What clientFixture sets up, read once its beforeAll has run. */
export interface ClientFixture {
  server: TestServer;
  /** The API key of the account it made. */
  key: string;
  /** The commands' working and home directory. */
  dir: string;
  /** Exactly the environment the commands get: PATH, HOME, a config dir in `dir` and, `signedIn`, the URL and key. */
  env: Record<string, string>;
  /** Runs `tributary <args>` to its end in that directory and environment. */
  run: (args: string[]) => Promise<CliResult>;
}

/**
 * A SQLite test server with one account and a temp directory for the client's commands, for the file's tests (made
 * before them, removed after them). `signedIn`: the commands get TRIBUTARY_URL and TRIBUTARY_KEY.
 */
export function clientFixture(prefix: string, options: { signedIn: boolean }): ClientFixture {
  const fixture: ClientFixture = {
    server: undefined as unknown as TestServer,
    key: '',
    dir: '',
    env: {},
    run: (args) => runCli(args, { env: fixture.env, cwd: fixture.dir }),
  };
  beforeAll(async () => {
    fixture.server = await startTestServer('sqlite');
    fixture.key = (await fixture.server.createUser()).apiKey;
    fixture.dir = tempDir(prefix);
    fixture.env = { PATH: process.env.PATH ?? '', HOME: fixture.dir, XDG_CONFIG_HOME: path.join(fixture.dir, 'config') };
    if (options.signedIn) Object.assign(fixture.env, { TRIBUTARY_URL: fixture.server.url, TRIBUTARY_KEY: fixture.key });
  });
  afterAll(async () => {
    await fixture.server?.destroy();
    if (fixture.dir) fs.rmSync(fixture.dir, { recursive: true, force: true });
  });
  return fixture;
}
