// `tributary dev` in a real terminal: util-linux `script` runs it in a pseudo-terminal and passes it what the test
// types, so a Ctrl-C is the byte a keyboard sends (the terminal turns it into the signal) and the answer a typed line.
// One Ctrl-C asks whether to delete the development source: yes deletes it, no keeps it, a second Ctrl-C keeps it too.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../helpers/client.js';
import { BIN } from '../helpers/processes.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const CTRL_C = '\x03';

/** A command running in a pseudo-terminal: what the terminal shows (line ends as `\n`), and a keyboard. */
interface Terminal {
  child: ChildProcess;
  screen: () => string;
  type: (keys: string) => void;
  waitFor: (pattern: RegExp) => Promise<RegExpExecArray>;
  /** The command's exit code, once it has exited (a failure naming what the terminal shows if it does not). */
  exited: () => Promise<number | null>;
}

/** Every terminal a test starts; one still running after its test (a failed one) is killed. */
const started = new Set<ChildProcess>();

const quote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;

function inTerminal(args: string[], options: { env: Record<string, string>; cwd: string }): Terminal {
  // -q: no start and end notes; -f: flush each write; -e: exit with the command's code; -c: the command; /dev/null: no
  // typescript file. `script` copies its standard input to the terminal's keyboard side.
  const command = [process.execPath, BIN, ...args].map(quote).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], { env: options.env, cwd: options.cwd });
  let shown = '';
  child.stdout!.on('data', (chunk: Buffer) => (shown += chunk.toString().replace(/\r/g, '')));
  child.stderr!.on('data', (chunk: Buffer) => (shown += chunk.toString().replace(/\r/g, '')));
  started.add(child);
  let code: number | null | undefined;
  child.once('exit', (exitCode) => (code = exitCode));
  return {
    child,
    screen: () => shown,
    exited: async () => {
      await waitFor(
        async () => code,
        (c) => c !== undefined,
        { what: `the command to exit; the terminal shows:\n${shown}`, timeoutMs: 30_000 },
      );
      return code!;
    },
    type: (keys) => void child.stdin!.write(keys),
    waitFor: async (pattern) => {
      let match: RegExpExecArray | null = null;
      await waitFor(
        async () => (match = pattern.exec(shown)),
        (m) => m !== null,
        { what: `${pattern} in the terminal, which shows:\n${shown}`, timeoutMs: 30_000 },
      );
      return match!;
    },
  };
}

describe('tributary dev in a terminal, on Ctrl-C', () => {
  let server: TestServer;
  let key: string;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    key = (await server.createUser()).apiKey;
    dir = tempDir('tributary-dev-terminal-');
    env = {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      XDG_CONFIG_HOME: path.join(dir, 'config'),
      TERM: 'dumb',
      TRIBUTARY_URL: server.url,
      TRIBUTARY_KEY: key,
    };
    fs.writeFileSync(
      path.join(dir, 'watched.mjs'),
      'export default { name: "watched", version: "0.1.0", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body); } };\n',
    );
  });
  afterEach(() => {
    for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    started.clear();
  });
  afterAll(async () => {
    await server?.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const api = () => client(server.url, key);

  /** Starts dev in a terminal and waits until it follows its source; returns the terminal and the source id. */
  async function devSession(name: string): Promise<{ terminal: Terminal; id: string }> {
    const terminal = inTerminal(['dev', 'watched.mjs', '--name', name], { env, cwd: dir });
    const [, id] = await terminal.waitFor(/following (dc_\w+): events, logs and errors \(Ctrl-C to stop\)\n/);
    expect((await api().get(`/v1/sources/${id}`)).body.data.name).toBe(name);
    return { terminal, id: id! };
  }

  it('asks on Ctrl-C, and deletes the source when the answer is yes', async () => {
    const { terminal, id } = await devSession('answer-yes');
    terminal.type(CTRL_C);
    await terminal.waitFor(new RegExp(`\ndelete the development source ${id}\\? \\[y/N\\] $`));
    terminal.type('y\r');
    expect(await terminal.exited()).toBe(0);
    expect(terminal.screen()).toMatch(new RegExp(`\\[y/N\\] y\n+deleted ${id}\n$`));
    expect(await api().get(`/v1/sources/${id}`)).toMatchObject({ status: 404, body: { code: 'not_found' } });
  });

  it('asks on Ctrl-C, and keeps the source when the answer is no', async () => {
    const { terminal, id } = await devSession('answer-no');
    terminal.type(CTRL_C);
    await terminal.waitFor(/\[y\/N\] $/);
    terminal.type('n\r');
    expect(await terminal.exited()).toBe(0);
    expect(terminal.screen()).toMatch(new RegExp(`\\[y/N\\] n\n+kept ${id}; delete it with tributary delete ${id}\n$`));
    const kept = await api().get(`/v1/sources/${id}`);
    expect(kept.status).toBe(200);
    expect(kept.body.data).toMatchObject({ id, name: 'answer-no', active: true });
  });

  it('stops at once, deploying nothing, on a Ctrl-C while it asks for a missing prop', async () => {
    fs.writeFileSync(
      path.join(dir, 'needs-prop.mjs'),
      'export default { name: "needs prop", version: "0.1.0", props: { channel: { type: "string", label: "Channel", options: ["general", "random"] } }, async run() {} };\n',
    );
    const terminal = inTerminal(['dev', 'needs-prop.mjs', '--name', 'never-deployed'], { env, cwd: dir });
    await terminal.waitFor(/ {2}2\) random\n.*$/);
    terminal.type(CTRL_C);
    expect(await terminal.exited()).toBe(0);
    expect(terminal.screen()).not.toMatch(/deployed|error|kept|delete/);
    const sources = await api().get('/v1/users/me/sources?limit=100');
    expect(sources.body.data.map((s: { name: string }) => s.name)).not.toContain('never-deployed');
  });

  it('keeps the source when a second Ctrl-C comes instead of an answer', async () => {
    const { terminal, id } = await devSession('second-ctrl-c');
    terminal.type(CTRL_C);
    await terminal.waitFor(/\[y\/N\] $/);
    terminal.type(CTRL_C);
    expect(await terminal.exited()).toBe(0);
    expect(terminal.screen()).toMatch(new RegExp(`\\[y/N\\] \n+kept ${id}; delete it with tributary delete ${id}\n$`));
    expect((await api().get(`/v1/sources/${id}`)).status).toBe(200);
  });
});
