// How long the client commands wait (--timeout, TRIBUTARY_TIMEOUT): a server that takes the connection and never
// answers, or stops in the middle of an answer, ends the command with one line naming its URL and the limit (exit
// 6), while a live stream and a save's progress stream, once answered, run on past the limit. An answer cut off is
// said as a broken connection (exit 5).
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, emitsOf } from '../helpers/account.js';
import { runCli, startCli } from '../helpers/cli.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const LONGER = 'wait longer with --timeout <seconds> or TRIBUTARY_TIMEOUT, 0 for no limit';

async function listening(server: net.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

describe('tributary --timeout', () => {
  let dir: string;
  let env: Record<string, string>;
  /** Takes every connection and never says a word. */
  let silent: net.Server;
  let silentUrl: string;
  const sockets: net.Socket[] = [];

  beforeAll(async () => {
    dir = tempDir('tributary-timeouts-');
    env = { PATH: process.env.PATH ?? '', HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'config') };
    silent = net.createServer((socket) => {
      sockets.push(socket);
      socket.on('error', () => undefined);
    });
    silentUrl = await listening(silent);
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const tributary = (args: string[], extra: Record<string, string> = {}) => runCli(args, { env: { ...env, ...extra }, cwd: dir });

  /**
   * Resolves once a command given `--timeout <seconds>` against the silent server has given up: proof, without a
   * sleep, that at least that long has passed since it was started.
   */
  const timePassed = async (seconds: number) => {
    const given = await tributary(['whoami', '--timeout', String(seconds), '--url', silentUrl, '--key', 'trb_x']);
    expect(given.code, given.stderr).toBe(6);
  };

  it('ends a command the server never answers with one line naming the URL and the limit, exit 6', async () => {
    const listed = await tributary(['list', 'sources', '--timeout', '1', '--url', silentUrl, '--key', 'trb_x']);
    expect(listed).toEqual({
      code: 6,
      stdout: '',
      stderr: `error: ${silentUrl} did not answer GET /v1/users/me/sources?limit=100 within 1 s; ${LONGER} (timeout)\n`,
    });
  });

  it('takes TRIBUTARY_TIMEOUT (the flag wins), and says a write may have been done all the same', async () => {
    const ran = await tributary(['run', 'dc_00000000000000000000000000'], { TRIBUTARY_URL: silentUrl, TRIBUTARY_KEY: 'trb_x', TRIBUTARY_TIMEOUT: '0.5' });
    expect(ran).toEqual({
      code: 6,
      stdout: '',
      stderr:
        `error: ${silentUrl} did not answer POST /v1/sources/dc_00000000000000000000000000/run within 0.5 s; ${LONGER} (timeout)\n` +
        'hint: the server may have done it all the same: see tributary list (or describe) before trying again\n',
    });
    const flagWins = await tributary(['describe', 'dc_00000000000000000000000000', '--timeout', '1'], {
      TRIBUTARY_URL: silentUrl,
      TRIBUTARY_KEY: 'trb_x',
      TRIBUTARY_TIMEOUT: '600',
    });
    expect(flagWins.code).toBe(6);
    expect(flagWins.stderr).toBe(`error: ${silentUrl} did not answer GET /v1/sources/dc_00000000000000000000000000 within 1 s; ${LONGER} (timeout)\n`);
  });

  it('holds a save to the limit until its progress stream answers (deploy against the silent server)', async () => {
    fs.writeFileSync(path.join(dir, 'plain.mjs'), 'export default { name: "plain", version: "0.1.0", async run() {} };\n');
    const deployed = await tributary(['deploy', 'plain.mjs', '--timeout', '1', '--url', silentUrl, '--key', 'trb_x']);
    expect(deployed.code).toBe(6);
    expect(deployed.stderr.split('\n').slice(-3)).toEqual([
      `error: ${silentUrl} did not answer POST /v1/components/stream within 1 s; ${LONGER} (timeout)`,
      'hint: the server may have done it all the same: see tributary list (or describe) before trying again',
      '',
    ]);
  });

  it('ends an answer that stops half-way through with the limit, exit 6', async () => {
    const halting = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"data":');
    });
    const url = await listening(halting);
    try {
      const shown = await tributary(['describe', 'dc_00000000000000000000000000', '--timeout', '1', '--url', url, '--key', 'trb_x']);
      expect(shown).toEqual({
        code: 6,
        stdout: '',
        stderr: `error: ${url} sent nothing for 1 s in the middle of its answer to GET /v1/sources/dc_00000000000000000000000000; ${LONGER} (timeout)\n`,
      });
    } finally {
      halting.closeAllConnections();
      await new Promise((resolve) => halting.close(resolve));
    }
  });

  it('says an answer cut off half-way through as the connection broken, exit 5 (it was a bare "error: terminated", exit 1)', async () => {
    const cutting = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"data":', () => res.socket!.destroy());
    });
    const url = await listening(cutting);
    try {
      const shown = await tributary(['describe', 'dc_00000000000000000000000000', '--url', url, '--key', 'trb_x']);
      expect(shown).toEqual({
        code: 5,
        stdout: '',
        stderr:
          `error: the connection to ${url} broke during its answer to GET /v1/sources/dc_00000000000000000000000000: other side closed (unreachable)\n` +
          'hint: is the server running there? check the URL with tributary whoami, or pass --url\n',
      });
    } finally {
      await new Promise((resolve) => cutting.close(resolve));
    }
  });

  it('refuses a --timeout or TRIBUTARY_TIMEOUT that is not seconds, exit 2, before any request', async () => {
    const before = sockets.length;
    for (const [args, extra, name, value] of [
      [['--timeout', 'soon'], {}, '--timeout', 'soon'],
      [['--timeout', '-1'], {}, '--timeout', '-1'],
      [[], { TRIBUTARY_TIMEOUT: '1e3' }, 'TRIBUTARY_TIMEOUT', '1e3'],
      [['--timeout', '86401'], {}, '--timeout', '86401'],
    ] as const) {
      const refused = await tributary(['list', ...args, '--url', silentUrl, '--key', 'trb_x'], extra);
      expect(refused).toEqual({ code: 2, stdout: '', stderr: `error: ${name} takes seconds, from 0 (no limit) to 86400, not "${value}"\n` });
    }
    expect(sockets.length).toBe(before);
  });

  describe('against a real server', () => {
    let server: TestServer;

    beforeAll(async () => {
      server = await startTestServer('sqlite');
    });
    afterAll(async () => {
      await server?.destroy();
    });

    it('keeps following a source whose live stream stays quiet past the limit, and shows what comes after', async () => {
      const a = await account(server);
      const source = await a.deploy();
      const cli = startCli(['events', source, '-f', '--timeout', '1'], { env: { ...env, TRIBUTARY_URL: server.url, TRIBUTARY_KEY: a.key }, cwd: dir });
      try {
        await cli.waitForOutput(/following dc_\w+ \(Ctrl-C to stop\)\n/, 'stderr');
        // The stream says nothing but its handshake for twice the limit.
        await timePassed(2);
        await a.runAndWait(source, emitsOf([{ event: { n: 'after the limit' } }]));
        await cli.waitForOutput(/\{"n":"after the limit"\}\n/);
        // Cut at the limit, it would have said so as it reconnected.
        expect(cli.stderr()).toBe(`following ${source} (Ctrl-C to stop)\n`);
        cli.child.kill('SIGINT');
        expect(await cli.exit).toBe(0);
      } finally {
        if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
      }
    });

    it("lets a save's progress stream run past the limit once it has answered (an install that takes long)", async () => {
      const a = await account(server);
      // Passes everything to the server; of a progress stream, only its first frame (the handshake) until released.
      let release = () => {};
      const released = new Promise<void>((resolve) => (release = resolve));
      let held = false;
      const proxy = http.createServer((req, res) => {
        const forwarded = http.request(new URL(req.url!, server.url), { method: req.method, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode!, answer.headers);
          if (!req.url!.endsWith('/stream')) return void answer.pipe(res);
          let first = true;
          answer.on('data', (chunk: Buffer) => {
            const text = chunk.toString();
            const cut = first && text.startsWith(':sse-handshake\n\n') ? ':sse-handshake\n\n'.length : 0;
            first = false;
            if (cut) res.write(text.slice(0, cut));
            held = true;
            void released.then(() => res.write(text.slice(cut)));
          });
          answer.on('end', () => void released.then(() => res.end()));
        });
        req.pipe(forwarded);
      });
      const url = await listening(proxy);
      fs.writeFileSync(
        path.join(dir, 'quiet.mjs'),
        'export default { name: "quiet", version: "0.1.0", props: { http: "$.interface.http" }, async run() {} };\n',
      );
      const cli = startCli(['deploy', 'quiet.mjs', '--timeout', '1', '--url', url, '--key', a.key], { env, cwd: dir });
      try {
        await waitFor(
          async () => held,
          (h) => h,
          { what: 'the progress stream to be held' },
        );
        await timePassed(2);
        release();
        expect(await cli.exit, cli.stderr()).toBe(0);
        expect(cli.stdout()).toMatch(/^deployed dc_\w+ "quiet"\nendpoint: /);
      } finally {
        if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
        proxy.closeAllConnections();
        await new Promise((resolve) => proxy.close(resolve));
      }
    });
  });
});
