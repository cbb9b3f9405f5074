// `serve` started before its PostgreSQL answers (a cluster node coming up before the database, or during a restart):
// it waits, saying why, and starts once the database answers; with --database-wait 0, or past it, it gives up.
import { spawn, type ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { cleanupsAfterAll, killedAfterAll } from '../helpers/cleanups.js';
import { request } from '../helpers/client.js';
import { BIN } from '../helpers/processes.js';
import { createTestDatabase, DIALECTS, tempDir } from '../helpers/server.js';
import { proxyInFrontOf } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait.js';

/** `tributary serve` on PostgreSQL at `databaseUrl`, its output collected as it comes. */
function serveOn(databaseUrl: string, wait: string): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const args = ['serve', '--port', '0', '--log-level', 'info', '--log-format', 'json', '--data-dir', tempDir(), '--database-url', databaseUrl];
  const child = spawn(process.execPath, [BIN, ...args, '--database-wait', wait], { env: { PATH: process.env.PATH ?? '' } });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

describe.skipIf(!DIALECTS.includes('postgres'))('serve waits for PostgreSQL at start (--database-wait)', () => {
  const children = killedAfterAll();
  const cleanups = cleanupsAfterAll();

  /** `serve` on a fresh database behind a proxy that refuses every connection, as a PostgreSQL that is down. */
  async function serveOnUnreachable(wait: string) {
    const database = await createTestDatabase();
    cleanups(database.drop);
    const { proxy, url } = await proxyInFrontOf(database.url);
    cleanups(() => proxy.close());
    proxy.cut();
    const server = serveOn(url, wait);
    children.push(server.child);
    return { proxy, server };
  }

  it('waits while the database refuses connections, says so with the cause, and starts once it answers', async () => {
    const { proxy, server } = await serveOnUnreachable('60');
    const waiting = await waitFor(
      async () => server.output(),
      (output) => output.includes('waiting for it'),
      { what: 'serve to say that it waits for the database' },
    );
    const warning = JSON.parse(waiting.split('\n').find((line) => line.includes('waiting for it'))!);
    expect(warning.level).toBe(40);
    expect(warning.msg).toMatch(
      /^cannot open the database at postgres:\/\/postgres@127\.0\.0\.1:\d+\/\S+: .+; waiting for it \(1 failed try, giving up in (60|59) s; --database-wait sets how long\)$/,
    );
    expect(server.output()).not.toContain('listening at');

    proxy.restore();
    const started = await waitFor(
      async () => server.output(),
      (output) => /listening at (http:\/\/\S+) /.test(output),
      { what: 'serve to start once the database answers' },
    );
    expect(started).toMatch(/"msg":"the database answered after \d+ failed tr(y|ies); starting"/);
    const key = /API key \(shown once, store it now\): (\S+)/.exec(started)?.[1];
    const me = await request('GET', `${/listening at (http:\/\/\S+) /.exec(started)![1]}/v1/users/me`, { key: key! });
    expect(me.status).toBe(200);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });

  it.each([
    ['0', 'gives up at once'],
    ['1', 'gives up once that time has passed'],
    ['3', 'gives up once that time has passed'],
  ])('with --database-wait %s, %s: error: on one line, exit code 1', async (wait) => {
    const { server } = await serveOnUnreachable(wait);
    expect(await server.exited).toBe(1);
    if (wait !== '0') {
      // Not sooner: the last try is made at the deadline (it once came up to a retry's length, 2 s, before it).
      const gaveUp = /"msg":"gave up waiting for the database after (\d+\.\d) s and \d+ failed tries"/.exec(server.output());
      expect(Number(gaveUp?.[1])).toBeGreaterThanOrEqual(Number(wait));
    }
    if (wait === '0') expect(server.output()).not.toContain('waiting for it');
    else expect(server.output()).toContain(`giving up in ${wait} s`);
    expect(server.output()).toMatch(/^error: cannot open the database at postgres:\/\/postgres@127\.0\.0\.1:\d+\/\S+: /m);
  });
});
