// The README's cluster started on an empty PostgreSQL database: the first account's key is printed by a node that
// serves the API, not by whichever worker node happened to start first.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanupsAfterAll, killedAfterAll } from '../helpers/cleanups.js';
import { client } from '../helpers/client.js';
import { runCli, startCli } from '../helpers/cli.js';
import { BIN } from '../helpers/processes.js';
import { createTestDatabase, DIALECTS, tempDir } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

describe.skipIf(!DIALECTS.includes('postgres'))('a cluster started on an empty database (PostgreSQL)', () => {
  const cleanups = cleanupsAfterAll();
  const children = killedAfterAll();

  /** `tributary serve` with `args`; resolves with its banner, which it writes in one piece ending with `storage: …`. */
  async function start(databaseUrl: string, args: string[], logLevel = 'warn'): Promise<string> {
    return (await startNode(databaseUrl, args, logLevel)).banner;
  }

  async function startNode(databaseUrl: string, args: string[], logLevel: string) {
    const storage = ['--data-dir', tempDir(), '--database-url', databaseUrl, '--secret-key', 'shared'];
    const child = spawn(process.execPath, [BIN, 'serve', '--log-level', logLevel, ...storage, ...args], { env: { PATH: process.env.PATH ?? '' } });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const banner = await waitFor(
      async () => output,
      (text) => text.includes('storage: ') || child.exitCode !== null,
      { what: `the banner of serve ${args.join(' ')}` },
    );
    return { banner, child, output: () => output };
  }

  it('a worker node told to stop says it stops claiming work (it takes no requests), and exits 0', async () => {
    const database = await createTestDatabase();
    cleanups(database.drop);
    const worker = await startNode(database.url, ['--role', 'worker'], 'info');
    const exited = new Promise<number | null>((resolve) => worker.child.once('exit', (code) => resolve(code)));
    worker.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const stopping = worker
      .output()
      .split('\n')
      .filter((line) => line.includes('shutting down'))
      .map((line) => (JSON.parse(line) as { msg: string }).msg);
    expect(stopping).toEqual(['shutting down: no new work claimed, finishing in-flight work']);
  });

  it('a worker node started first creates no account; the api node started after it does, and prints its key', async () => {
    const database = await createTestDatabase();
    cleanups(database.drop);
    const worker = await start(database.url, ['--role', 'worker']);
    expect(worker).toContain('Tributary worker node is running');
    expect(worker).not.toContain('API key');

    const api = await start(database.url, ['--role', 'api', '--port', '0']);
    expect(api).toContain('The database was empty, so an account was created:');
    const url = /listening at (http:\/\/\S+) /.exec(api)![1]!;
    const key = /API key \(shown once, store it now\): (\S+)/.exec(api)![1]!;
    const me = await client(url, key).get('/v1/users/me');
    expect([me.status, me.body.data.username]).toEqual([200, 'admin']);
  });

  it('the client pointed at an api node with no worker node alive says that a run stays queued; once a worker is alive it says nothing', async () => {
    const database = await createTestDatabase();
    cleanups(database.drop);
    const api = await start(database.url, ['--role', 'api', '--port', '0']);
    const url = /listening at (http:\/\/\S+) /.exec(api)![1]!;
    const key = /API key \(shown once, store it now\): (\S+)/.exec(api)![1]!;
    const deployed = await client(url, key).post('/v1/sources', {
      component_code: 'export default { name: "tick", version: "0.0.1", async run(event) { this.$emit(event); } };',
    });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    const id: string = deployed.body.data.id;
    const cli = { env: { PATH: process.env.PATH ?? '', HOME: tempDir() }, cwd: tempDir() };
    const server = ['--url', url, '--key', key];
    const note = (waiting: string) => `note: no worker node of this cluster is alive (${url}/readyz says "worker_nodes":"none"): ${waiting} until one starts\n`;

    const queued = await runCli(['run', id, ...server], cli);
    expect({ code: queued.code, stderr: queued.stderr }).toEqual({ code: 0, stderr: note('the run stays queued') });

    await start(database.url, ['--role', 'worker']);
    await waitFor(
      () => client(url, key).get('/readyz'),
      (r) => r.body.checks.worker_nodes === 'ok',
      { what: 'the api node to see the worker node' },
    );
    const ran = await runCli(['run', id, ...server], cli);
    expect({ code: ran.code, stderr: ran.stderr }).toEqual({ code: 0, stderr: '' });
  });

  it('events -f, logs -f and dev pointed at an api node with no worker node alive say that runs stay queued; once a worker is alive they say nothing', async () => {
    const database = await createTestDatabase();
    cleanups(database.drop);
    const api = await start(database.url, ['--role', 'api', '--port', '0']);
    const url = /listening at (http:\/\/\S+) /.exec(api)![1]!;
    const key = /API key \(shown once, store it now\): (\S+)/.exec(api)![1]!;
    const code = 'export default { name: "tick", version: "0.0.1", async run(event) { this.$emit(event); } };';
    const id: string = (await client(url, key).post('/v1/sources', { component_code: code })).body.data.id;
    const cwd = tempDir();
    fs.writeFileSync(path.join(cwd, 'tick.mjs'), code);
    const cli = { env: { PATH: process.env.PATH ?? '', HOME: tempDir() }, cwd };
    const server = ['--url', url, '--key', key];
    const note = (waiting: string) => `note: no worker node of this cluster is alive (${url}/readyz says "worker_nodes":"none"): ${waiting} until one starts`;

    /** What the command says on standard error once it follows, and until Ctrl-C ends it (exit 0). */
    async function saidWhileFollowing(args: string[], live: RegExp): Promise<string[]> {
      const running = startCli([...args, ...server], cli);
      try {
        await running.waitForOutput(live, 'stderr');
        running.child.kill('SIGINT');
        expect(await running.exit, running.stderr()).toBe(0);
        return running.stderr().split('\n');
      } finally {
        if (running.child.exitCode === null) running.child.kill('SIGKILL');
      }
    }

    expect(await saidWhileFollowing(['events', id, '-f'], /following dc_\w+ \(Ctrl-C to stop\)/)).toEqual([
      note('its runs stay queued, and no new events come,'),
      `following ${id} (Ctrl-C to stop)`,
      '',
    ]);
    expect((await saidWhileFollowing(['logs', id, '-f', '--errors'], /following dc_/))[0]).toBe(note('its runs stay queued, and no new errors come,'));
    const dev = await saidWhileFollowing(['dev', 'tick.mjs', '--keep'], /no worker node/);
    const live = dev.findIndex((line) => /^following dc_\w+: events, logs and errors/.test(line));
    expect(dev[live + 1]).toBe(note("the source's runs stay queued, and no events, logs or errors come,"));

    await start(database.url, ['--role', 'worker']);
    await waitFor(
      () => client(url, key).get('/readyz'),
      (r) => r.body.checks.worker_nodes === 'ok',
      { what: 'the api node to see the worker node' },
    );
    expect(await saidWhileFollowing(['events', id, '-f'], /following dc_\w+ \(Ctrl-C to stop\)/)).toEqual([`following ${id} (Ctrl-C to stop)`, '']);
    const quiet = await saidWhileFollowing(['dev', 'tick.mjs', '--keep'], /following dc_\w+: events, logs and errors/);
    expect(quiet.filter((line) => line.startsWith('note:'))).toEqual([]);
  });
});
