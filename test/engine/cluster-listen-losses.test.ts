// A cluster node whose LISTEN connections are lost while PostgreSQL stays up (their backends terminated): the log
// says so once, as a warning, not as a database outage; and a custom response relayed to it while its answer
// connection was down still reaches the request waiting on it, read back from the database once it listens again.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { client, request } from '../helpers/client.js';
import { createTestDatabase, DIALECTS, startTestServer } from '../helpers/server.js';
import { proxyInFrontOf } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'cluster-listen-losses-secret';

/** The same database URL, its sessions named `name` in pg_stat_activity so that the test can end a node's alone. */
function named(url: string, name: string): string {
  const next = new URL(url);
  next.searchParams.set('application_name', name);
  return next.toString();
}

/** Ends the sessions of `name` whose query is `LISTEN …` (`channel`: that channel's only); how many were ended. */
async function terminateListeners(url: string, name: string, channel = '%'): Promise<number> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    const ended = await db.query(
      'select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and application_name = $1 and query like $2',
      [name, `LISTEN ${channel}`],
    );
    return ended.rowCount ?? 0;
  } finally {
    await db.end();
  }
}

describe.skipIf(!DIALECTS.includes('postgres'))('LISTEN connections lost while the database stays up (PostgreSQL)', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('is logged once, as a warning saying what happened, then that it is back; never as the database being unreachable', async () => {
    const database = await createTestDatabase();
    cleanups.push(database.drop);
    const lines: Array<{ level: number; msg: string }> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const node = await startTestServer('postgres', { role: 'api', secretKey: SECRET, databaseUrl: named(database.url, 'lost-listen') }, { logger });
    cleanups.push(() => node.stop());
    const before = lines.length;

    // Its three: live events, signals, answers.
    expect(await terminateListeners(database.url, 'lost-listen')).toBe(3);
    await waitFor(
      async () => lines.slice(before).filter((l) => l.msg.startsWith('the LISTEN connection to PostgreSQL is back')).length,
      (n) => n === 1,
      { what: 'the node to listen again' },
    );
    expect(lines.slice(before).map((l) => [l.level, l.msg])).toEqual([
      [
        40,
        'lost the LISTEN connection to PostgreSQL (the database itself answers): until it is back this node polls its queues every second and its live streams read what they miss from the database',
      ],
      [30, 'the LISTEN connection to PostgreSQL is back: this node stops polling every second, after looking once for what it missed'],
    ]);
  });

  it('a custom response relayed while the waiting node could not hear it reaches its request once that node listens again', async () => {
    const database = await createTestDatabase();
    cleanups.push(database.drop);
    // The api node reaches PostgreSQL through a proxy the test freezes, so that its answer connection stays down
    // (its reconnection held) until the worker's answer has gone out.
    const { proxy, url: proxied } = await proxyInFrontOf(database.url);
    cleanups.push(() => proxy.close());
    const api = await startTestServer('postgres', { role: 'api', secretKey: SECRET, databaseUrl: named(proxied, 'waiting-api'), runTimeout: 20 });
    cleanups.push(() => api.stop());
    const worker = await startTestServer('postgres', { role: 'worker', secretKey: SECRET, databaseUrl: database.url, allowPrivateNetwork: true });
    cleanups.push(() => worker.stop());

    // The run calls the gate and answers only once the test lets the gate answer.
    let arrived = false;
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    const gate = http.createServer((_req, res) => {
      arrived = true;
      void opened.then(() => res.end('go'));
    });
    await new Promise<void>((resolve) => gate.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => gate.close(() => resolve())));
    const gateUrl = `http://127.0.0.1:${(gate.address() as AddressInfo).port}/`;

    const key = (await api.createUser({ plan: 'paid' })).apiKey;
    const deployed = await client(api.url, key).post('/v1/sources', {
      component_code: `export default { name: "gated", version: "0.0.1", props: { http: { type: "$.interface.http", customResponse: true } },
        async run(event) { await (await fetch(${JSON.stringify(gateUrl)})).text(); this.http.respond({ status: 201, body: { made: event.body.n } }); } };`,
    });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    const endpoint: string = deployed.body.data.configured_props.http.endpoint_url;

    // What goes out on the answers channel, heard directly.
    const heard: string[] = [];
    const listener = new pg.Client({ connectionString: database.url });
    await listener.connect();
    cleanups.push(() => listener.end());
    listener.on('notification', (message) => heard.push(message.payload ?? ''));
    await listener.query('LISTEN tributary_answers');

    const answer = request('POST', endpoint, { body: { n: 7 } });
    await waitFor(
      async () => arrived,
      (yes) => yes,
      { what: 'the run to wait at the gate' },
    );
    proxy.freeze();
    expect(await terminateListeners(database.url, 'waiting-api', 'tributary_answers')).toBe(1);
    open();
    await waitFor(
      async () => heard.length,
      (n) => n === 1,
      { what: "the worker's answer to go out" },
    );
    proxy.thaw();
    const got = await answer;
    expect([got.status, got.body]).toEqual([201, { made: 7 }]);
  });
});
