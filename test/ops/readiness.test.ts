// GET /readyz: ready when migrations, database and a worker are; 503 naming what is not, and from the moment a stop begins.
import { execFileSync, spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client, request } from '../helpers/client.js';
import { createAccount, freshStorage, killHard, serve } from '../helpers/processes.js';
import { SQLITE_DRIVER_PATH } from '../../src/store/sqlite-file.js';

const HELD = `module.exports = {
  name: "Held",
  version: "0.0.1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run() {
    const held = await (await fetch("HOLD_URL")).text();
    this.http.respond({ status: 201, body: { held } });
  },
};`;

/** Reads from a socket until `done` says the text so far is complete. */
function readUntil(socket: net.Socket, done: (text: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      if (done(text)) {
        socket.off('data', onData);
        resolve(text);
      }
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.once('close', () => resolve(text));
  });
}

describe.each(DIALECTS)('readiness on %s', (dialect) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(dialect);
  });
  afterAll(() => server?.destroy());

  it('answers 200 with every check ok, without a key, once a worker could start', async () => {
    const res = await request('GET', `${server.url}/readyz`);
    expect(res.status).toBe(200);
    const disk = dialect === 'sqlite' ? 'ok' : 'unchecked';
    expect(res.body).toEqual({ status: 'ready', checks: { database: 'ok', migrations: 'ok', worker: 'ok', worker_nodes: 'ok', disk, stopping: false } });
  });

  it('answers 503 naming the migrations when one is missing', async () => {
    const { sql } = await import('kysely');
    const db = server.running.services.store.db;
    const [last] = (await sql<{ name: string; timestamp: string }>`select name, timestamp from kysely_migration order by name desc limit 1`.execute(db)).rows;
    await sql`delete from kysely_migration where name = ${last!.name}`.execute(db);
    try {
      const res = await request('GET', `${server.url}/readyz`);
      expect([res.status, res.headers.get('retry-after')]).toEqual([503, '5']);
      expect(res.body).toMatchObject({ status: 'not_ready', not_ready: ['migrations'], checks: { migrations: 'pending', database: 'ok' } });
    } finally {
      await sql`insert into kysely_migration (name, timestamp) values (${last!.name}, ${last!.timestamp})`.execute(db);
    }
    expect((await request('GET', `${server.url}/readyz`)).status).toBe(200);
  });
});

describe('readiness during a stop', () => {
  it('answers 503 once close() begins, while a request in flight still finishes', async () => {
    // The run in flight waits on this server until the test lets it answer.
    let release!: () => void;
    let started!: () => void;
    const runStarted = new Promise<void>((resolve) => (started = resolve));
    const hold = http.createServer((_req, res) => {
      started();
      release = () => res.end('held');
    });
    await new Promise<void>((resolve) => hold.listen(0, '127.0.0.1', resolve));
    const holdUrl = `http://127.0.0.1:${(hold.address() as net.AddressInfo).port}/`;
    const server = await startTestServer('sqlite', { allowPrivateNetwork: true });
    try {
      const account = await server.createUser({ plan: 'paid' });
      const api = client(server.url, account.apiKey);
      const deployed = await api.post('/v1/sources', { component_code: HELD.replace('HOLD_URL', holdUrl), name: 'held' });
      expect(deployed.status).toBe(200);
      const endpoint = new URL(deployed.body.data.configured_props.http.endpoint_url);
      expect((await request('GET', `${server.url}/readyz`)).status).toBe(200);

      const { port } = new URL(server.url);
      const socket = net.connect(Number(port), '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      const answers = readUntil(socket, (text) => (text.match(/HTTP\/1\.1 /g) ?? []).length >= 2 && text.endsWith('}'));
      socket.write(`GET ${endpoint.pathname} HTTP/1.1\r\nHost: x\r\n\r\n`);
      await runStarted;

      const closing = server.running.close();
      expect(await server.running.services.health.readiness()).toMatchObject({ ready: false, failing: ['stopping'] });
      // A readiness probe behind the request in flight, on the same connection.
      socket.write('GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n');
      release();
      const text = await answers;
      const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
      expect(statuses).toEqual([201, 503]);
      expect(text).toContain('{"held":"held"}');
      socket.destroy();
      await closing;
    } finally {
      await server.destroy();
      hold.close();
    }
  });
});

describe("readiness while another process holds SQLite's write lock", () => {
  it('turns not ready once a write gave up on the lock, liveness staying ok, and ready again once the lock is free', { timeout: 30_000 }, async () => {
    const server = await startTestServer('sqlite');
    const holder = spawn(process.execPath, [
      '-e',
      `const D = require(${JSON.stringify(SQLITE_DRIVER_PATH)}); const d = new D(${JSON.stringify(path.join(server.dataDir, 'tributary.db'))});` +
        ` process.stdin.once('data', () => { d.exec('begin exclusive'); console.log('locked'); });` +
        ` process.stdin.once('end', () => process.exit(0));`,
    ]);
    const holderExited = new Promise((resolve) => holder.once('exit', resolve));
    try {
      const api = client(server.url, (await server.createUser()).apiKey);
      holder.stdin.write('lock\n');
      await new Promise((resolve) => holder.stdout.once('data', resolve));
      // Reads go on through the lock, and nothing has failed on it yet: still ready.
      expect((await request('GET', `${server.url}/readyz`)).status).toBe(200);

      const refused = await api.post(`/v1/webhooks?url=${encodeURIComponent('https://example.com/hook')}`, {});
      expect(refused.status).toBe(503);
      const ready = await request('GET', `${server.url}/readyz`);
      expect([ready.status, ready.headers.get('retry-after')]).toEqual([503, '5']);
      expect(ready.body).toMatchObject({ status: 'not_ready', not_ready: ['database'], checks: { database: 'locked', migrations: 'ok' } });
      // Liveness is not readiness: the process and its database answer, a restart would not help.
      expect((await request('GET', `${server.url}/healthz`)).body).toEqual({ status: 'ok', database: 'ok' });
      // Still locked: asking again does not make it ready.
      expect((await request('GET', `${server.url}/readyz`)).status).toBe(503);

      // The lock given up, with no write since (a load balancer sends none to a node that is not ready): ready again.
      holder.stdin.end();
      await holderExited;
      const again = await request('GET', `${server.url}/readyz`);
      expect([again.status, again.body.checks.database]).toEqual([200, 'ok']);
      expect((await api.post(`/v1/webhooks?url=${encodeURIComponent('https://example.com/hook')}`, {})).status).toBe(200);
    } finally {
      holder.kill('SIGKILL');
      await server.destroy();
    }
  });
});

/** Sets a process's soft file size limit (util-linux's prlimit): past it, each write fails with EFBIG. */
function setFileSizeLimit(pid: number, bytes: number | 'unlimited'): void {
  execFileSync('prlimit', [`--pid=${pid}`, `--fsize=${bytes}:`]);
}

describe("readiness while the file system refuses SQLite's writes", () => {
  it('turns not ready once a write failed, liveness staying ok, and ready again once writes go through', { timeout: 30_000 }, async () => {
    const storage = await freshStorage('sqlite');
    const apiKey = await createAccount(storage.args, 'refused');
    const { child, url } = await serve(storage.args);
    const hook = `/v1/webhooks?url=${encodeURIComponent('https://example.com/hook')}`;
    try {
      const api = client(url, apiKey);
      expect((await request('GET', `${url}/readyz`)).status).toBe(200);
      // Every write of the log now lies past the limit: SQLite says SQLITE_IOERR_WRITE, as on a read-only remount.
      setFileSizeLimit(child.pid!, 4096);
      expect((await request('GET', `${url}/readyz`)).status).toBe(200);
      const refused = await api.post(hook, {});
      expect([refused.status, refused.headers.get('retry-after'), refused.body]).toEqual([
        503,
        '5',
        { error: "the file system refused the database's write (disk I/O error): nothing was written; try again shortly", code: 'unavailable' },
      ]);
      const ready = await request('GET', `${url}/readyz`);
      expect([ready.status, ready.headers.get('retry-after')]).toEqual([503, '5']);
      expect(ready.body).toMatchObject({ status: 'not_ready', not_ready: ['database'], checks: { database: 'write_error', migrations: 'ok' } });
      expect((await request('GET', `${url}/healthz`)).body).toEqual({ status: 'ok', database: 'ok' });
      // Each probe tries a write of its own, which fails too: still not ready.
      expect((await request('GET', `${url}/readyz`)).body.checks.database).toBe('write_error');

      // Writes go through again, with none from a client since: the probe's own write makes it ready.
      setFileSizeLimit(child.pid!, 'unlimited');
      const again = await request('GET', `${url}/readyz`);
      expect([again.status, again.body.checks.database]).toEqual([200, 'ok']);
      expect((await api.post(hook, {})).status).toBe(200);
    } finally {
      await killHard(child);
      await storage.cleanup();
    }
  });
});
