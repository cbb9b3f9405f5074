// Two nodes on one PostgreSQL database: a live stream on either node sees events committed on the other, also those
// committed while its node's connection to the database was lost, or while its LISTEN connection had gone silent.
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';
import { proxyInFrontOf } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait.js';
import { account, emitsOf, openStream } from './helpers.js';

/** Waits until `stream` is open and has the event `before` the source then emitted: its node hears the source. */
async function firstEventThrough(a: Awaited<ReturnType<typeof account>>, source: string, stream: ReturnType<typeof openStream>): Promise<void> {
  await stream.opened;
  await a.runAndWait(source, emitsOf([{ event: 'before' }]));
  await waitFor(
    async () => stream.messages.length,
    (n) => n === 1,
    { what: 'the first event' },
  );
}

describe.skipIf(!DIALECTS.includes('postgres'))('live streams across nodes (PostgreSQL)', () => {
  let first: TestServer;
  let second: TestServer;

  beforeAll(async () => {
    first = await startTestServer('postgres');
    second = await startTestServer('postgres', { databaseUrl: first.databaseUrl });
  });
  afterAll(async () => {
    // The second node shares the first's database, which the first drops.
    await second?.stop();
    await first?.destroy();
  });

  type Stream = ReturnType<typeof openStream>;

  /** A fresh account's source with a live stream open on each node, closed after `use`. */
  async function withStreamsOnBothNodes(use: (a: Awaited<ReturnType<typeof account>>, source: string, here: Stream, there: Stream) => Promise<void>) {
    const a = await account(first);
    const source = await a.deploy();
    const here = openStream(`${first.url}/sources/${source}/sse`, a.key);
    const there = openStream(`${second.url}/v1/sources/${source}/sse`, a.key);
    try {
      await Promise.all([here.opened, there.opened]);
      await use(a, source, here, there);
    } finally {
      here.source.close();
      there.source.close();
    }
  }

  /** Each stream gets exactly `expected` (the events' payloads), in order. */
  async function expectStreamed(streams: Stream[], expected: unknown[]): Promise<void> {
    for (const stream of streams) {
      await waitFor(
        async () => stream.messages.length,
        (n) => n >= expected.length,
        { what: `${expected.length} events` },
      );
      expect(stream.data().map((e) => e.event)).toEqual(expected);
    }
  }

  it('delivers every event to clients of both nodes, in order, whichever node ran the source', async () => {
    await withStreamsOnBothNodes(async (a, source, here, there) => {
      for (let run = 1; run <= 3; run++) await a.runAndWait(source, emitsOf([{ event: `${run}a` }, { event: `${run}b` }]));
      await expectStreamed([here, there], ['1a', '1b', '2a', '2b', '3a', '3b']);
      expect(there.data()).toEqual(here.data());
    });
  });

  it('streams every event of a commit larger than retention on the other node too (a backlog run at once)', async () => {
    await withStreamsOnBothNodes(async (a, source, here, there) => {
      // 150 events in one commit, retention 100: the oldest 50 are past retention before the other node reads them.
      const expected = Array.from({ length: 150 }, (_, i) => i);
      await a.runAndWait(source, emitsOf(expected.map((event) => ({ event }))));
      await expectStreamed([here, there], expected);
      // Readers of the API still see the newest 100.
      expect((await a.eventsOf(source, 100)).map((e: { event: number }) => e.event)).toEqual(expected.slice(50).reverse());
    });
  });

  it('a source deleted through one node ends its streams on the other', async () => {
    const a = await account(first);
    const source = await a.deploy();
    const there = openStream(`${second.url}/v1/sources/${source}/sse`, a.key);
    try {
      await there.opened;
      expect(second.running.services.sse.clientCount(source)).toBe(1);
      expect((await a.api.delete(`/v1/sources/${source}`)).status).toBe(204);
      await waitFor(
        async () => second.running.services.sse.clientCount(source),
        (n) => n === 0,
        { what: 'the stream on the other node to end' },
      );
    } finally {
      there.source.close();
    }
  });

  it("an api node records an error a hook's leftover timer threw on the source's $errors, as a worker node does", async () => {
    // An api node runs deploy hooks, not runs: the activate() timer throws in the api node's worker, and only there.
    const apiNode = await startTestServer('postgres', { role: 'api', databaseUrl: first.databaseUrl });
    try {
      expect(apiNode.running.config.role).toBe('api');
      const user = await apiNode.createUser();
      const api = client(apiNode.url, user.apiKey);
      const deployed = await api.post('/v1/sources', {
        component_code: `module.exports = { name: "late activate", version: "0.0.1",
          hooks: { async activate() { setTimeout(() => { throw new Error("after activate"); }, 1); } },
          async run() {} };`,
      });
      expect(deployed.status).toBe(200);
      const errors = await waitFor(
        () => api.get(`/v1/sources/${deployed.body.data.id}/$errors/event_summaries?expand=event`),
        (res) => res.body.data.length > 0,
        { what: "the hook's late error" },
      );
      expect(errors.body.data.map((e: { event: unknown }) => e.event)).toEqual([
        {
          error: { name: 'Error', message: 'after activate', stack: expect.stringContaining('Error: after activate'), code: 'Error' },
          original_event: null,
          original_context: { id: expect.stringMatching(/^hi_/), ts: expect.any(String), source_id: deployed.body.data.id, trigger: 'after_run' },
        },
      ]);
    } finally {
      await apiNode.stop();
    }
  });

  it('a node that lost its connection to the database catches its live streams up with what was committed meanwhile', async () => {
    const a = await account(first);
    const source = await a.deploy();
    // An api node (it runs nothing) whose every connection to PostgreSQL goes through a proxy the test cuts.
    const { proxy, url } = await proxyInFrontOf(first.databaseUrl!);
    const cutOff = await startTestServer('postgres', { role: 'api', databaseUrl: url });
    const streamUrl = `${cutOff.url}/v1/sources/${source}/sse`;
    const early = openStream(streamUrl, a.key);
    let late: ReturnType<typeof openStream> | undefined;
    try {
      await firstEventThrough(a, source, early);
      // A client that has had no event yet: it is owed what was committed after it connected.
      late = openStream(streamUrl, a.key);
      await late.opened;
      proxy.cut();
      // Committed and announced on the first node while the cut-off node hears nothing.
      await a.runAndWait(source, emitsOf([{ event: 'during 1' }, { event: 'during 2' }]));
      proxy.restore();
      await waitFor(
        async () => early.messages.length,
        (n) => n === 3,
        { what: 'the events committed while the node was cut off', timeoutMs: 15_000 },
      );
      await a.runAndWait(source, emitsOf([{ event: 'after' }]));
      for (const stream of [early, late]) {
        await waitFor(
          async () => stream.data().at(-1)?.event,
          (last) => last === 'after',
          { what: 'the event committed after the connection came back' },
        );
      }
      expect(early.data().map((e) => e.event)).toEqual(['before', 'during 1', 'during 2', 'after']);
      expect(late.data().map((e) => e.event)).toEqual(['during 1', 'during 2', 'after']);
    } finally {
      early.source.close();
      late?.source.close();
      await cutOff.stop();
      await proxy.close();
    }
  });

  it('a stream that stayed connected gets every event committed while its node was cut off, more than --event-retention too', async () => {
    // Both nodes keep 3 events per stream; a cut-off node reads back what it missed within the 10 s every event is held.
    const runner = await startTestServer('postgres', { databaseUrl: first.databaseUrl, eventRetention: 3 });
    const { proxy, url } = await proxyInFrontOf(first.databaseUrl!);
    const cutOff = await startTestServer('postgres', { role: 'api', databaseUrl: url, eventRetention: 3 });
    const a = await account(runner);
    const source = await a.deploy();
    const stream = openStream(`${cutOff.url}/v1/sources/${source}/sse`, a.key);
    try {
      await firstEventThrough(a, source, stream);
      proxy.cut();
      const during = ['during 1', 'during 2', 'during 3', 'during 4', 'during 5', 'during 6'];
      await a.runAndWait(source, emitsOf(during.map((event) => ({ event }))));
      proxy.restore();
      await a.runAndWait(source, emitsOf([{ event: 'after' }]));
      await waitFor(
        async () => stream.data().at(-1)?.event,
        (last) => last === 'after',
        { what: 'the event committed after the connection came back', timeoutMs: 15_000 },
      );
      expect(stream.data().map((e) => e.event)).toEqual(['before', ...during, 'after']);
    } finally {
      stream.source.close();
      await cutOff.stop();
      await runner.stop();
      await proxy.close();
    }
  });

  it('a node whose LISTEN connection went silent (dropped by the link without a word) notices, listens anew and catches its live streams up', async () => {
    const a = await account(first);
    const source = await a.deploy();
    // An api node whose connections go through a proxy; the test freezes its live events' LISTEN connection alone.
    const { proxy, url } = await proxyInFrontOf(first.databaseUrl!);
    const through = new URL(url);
    through.searchParams.set('application_name', 'silent-listen');
    const lines: Array<{ level: number; msg: string; err?: { message: string } }> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const deaf = await startTestServer('postgres', { role: 'api', databaseUrl: through.toString() }, { listenCheckMs: 500, logger });
    const stream = openStream(`${deaf.url}/v1/sources/${source}/sse`, a.key);
    try {
      await firstEventThrough(a, source, stream);
      const before = lines.length;
      expect(proxy.freezeOne(await listenerPort(first.databaseUrl!, 'silent-listen', 'tributary_events'))).toBe(true);
      // Announced on a connection whose notifications no longer arrive, and which says nothing of it.
      await a.runAndWait(source, emitsOf([{ event: 'during' }]));
      await waitFor(
        async () => stream.data().at(-1)?.event,
        (last) => last === 'during',
        { what: 'the event announced while the LISTEN connection was silent' },
      );
      await a.runAndWait(source, emitsOf([{ event: 'after' }]));
      await waitFor(
        async () => stream.data().at(-1)?.event,
        (last) => last === 'after',
        { what: 'the event announced on the new LISTEN connection' },
      );
      expect(stream.data().map((e) => e.event)).toEqual(['before', 'during', 'after']);
      // Said once as the lost LISTEN connection it is, with why, and once as back: never as a database outage.
      expect(lines.slice(before).map((l) => [l.level, l.msg, l.err?.message])).toEqual([
        [
          40,
          'lost the LISTEN connection to PostgreSQL (the database itself answers): until it is back this node polls its queues every second and its live streams read what they miss from the database',
          'the LISTEN connection on tributary_events did not answer within 500 ms; connecting again',
        ],
        [30, 'the LISTEN connection to PostgreSQL is back: this node stops polling every second, after looking once for what it missed', undefined],
      ]);
    } finally {
      stream.source.close();
      await deaf.stop();
      await proxy.close();
    }
  });
});

/** The client port (as PostgreSQL sees it) of the session of `name` listening on `channel`. */
async function listenerPort(databaseUrl: string, name: string, channel: string): Promise<number> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query('select client_port from pg_stat_activity where datname = current_database() and application_name = $1 and query = $2', [
      name,
      `LISTEN ${channel}`,
    ]);
    if (rows.length !== 1) throw new Error(`expected one session of ${name} listening on ${channel}, found ${rows.length}`);
    return rows[0].client_port as number;
  } finally {
    await db.end();
  }
}
