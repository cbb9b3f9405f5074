// Live streams: auth, the id/data format, Last-Event-ID replay, $logs and $errors, heartbeats, many and slow clients.
import net from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { request } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { DEFAULT_SSE_OPTIONS } from '../../src/delivery/sse-requests.js';
import { account, emitsOf, openStream } from './helpers.js';

/** Emits `count` events of about `size` bytes each. */
const BULK_SOURCE = `
module.exports = {
  name: "Bulk",
  version: "0.0.1",
  async run(event) {
    for (let i = 0; i < event.count; i++) this.$emit({ i, pad: "x".repeat(event.size) });
  },
};
`;

setFlagsFromString('--expose-gc');
/** A full garbage collection, so that the heap measured holds only what is still referenced. */
const collectGarbage = runInNewContext('gc') as () => void;

describe.each(DIALECTS)('live streams on %s', (dialect) => {
  let server: TestServer;
  const streams: Array<{ source: { close(): void } }> = [];
  const open = (...args: Parameters<typeof openStream>) => {
    const stream = openStream(...args);
    streams.push(stream);
    return stream;
  };

  beforeAll(async () => {
    server = await startTestServer(dialect);
  });
  afterEach(() => {
    for (const stream of streams.splice(0)) stream.source.close();
    server.running.services.sse.configure(DEFAULT_SSE_OPTIONS);
  });
  afterAll(() => server?.destroy());

  it("needs a key and answers 404 for another account's source, on both addresses", async () => {
    const a = await account(server);
    const b = await account(server);
    const source = await a.deploy();
    for (const path of [`/sources/${source}/sse`, `/v1/sources/${source}/sse`]) {
      const anonymous = await request('GET', `${server.url}${path}`);
      expect(anonymous.status, path).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
      expect(anonymous.body).toEqual({ error: expect.stringContaining('missing Authorization header'), code: 'unauthorized' });
      expect((await request('GET', `${server.url}${path}`, { key: 'trb_wrong' })).status).toBe(401);
      const foreign = await request('GET', `${server.url}${path}`, { key: b.key });
      expect(foreign.status).toBe(404);
      expect(foreign.body.code).toBe('not_found');
    }
  });

  it('streams each event as id: and data: with the event summary', async () => {
    const a = await account(server);
    const source = await a.deploy();
    const stream = open(`${server.url}/sources/${source}/sse`, a.key);
    await stream.opened;
    await waitFor(
      async () => server.running.services.sse.clientCount(source),
      (n) => n === 1,
    );
    await a.runAndWait(
      source,
      emitsOf([
        { event: { hello: 'live' }, meta: { summary: 'hi' } },
        { event: 2, meta: { name: 'chan' } },
      ]),
    );
    await waitFor(
      async () => stream.messages.length,
      (n) => n === 2,
      { what: 'two live events' },
    );
    const stored = (await a.eventsOf(source, 2)).reverse();
    expect(stream.data()).toEqual(stored);
    expect(stream.messages.map((m) => m.lastEventId)).toEqual(stored.map((e) => e.id));
    stream.source.close();
    await waitFor(
      async () => server.running.services.sse.clientCount(source),
      (n) => n === 0,
      { what: 'the closed client to be removed' },
    );
  });

  it('replays retained events after Last-Event-ID, then goes live', async () => {
    const a = await account(server);
    const source = await a.deploy();
    await a.runAndWait(source, emitsOf([1, 2, 3].map((n) => ({ event: n }))));
    const [, , first] = await a.eventsOf(source, 3);
    const stream = open(`${server.url}/v1/sources/${source}/sse`, a.key, { 'last-event-id': first.id });
    await waitFor(
      async () => stream.messages.length,
      (n) => n === 2,
      { what: 'the replay' },
    );
    await a.runAndWait(source, emitsOf([{ event: 4 }]));
    await waitFor(
      async () => stream.messages.length,
      (n) => n === 3,
      { what: 'the live event after the replay' },
    );
    expect(stream.data().map((e) => e.event)).toEqual([2, 3, 4]);
  });

  it('replays only retained events after a Last-Event-ID that has fallen out of retention', async () => {
    const a = await account(server);
    const source = await a.deploy();
    await a.runAndWait(source, emitsOf(Array.from({ length: 100 }, (_, i) => ({ event: i }))));
    const third = (await a.eventsOf(source, 100))[97];
    expect(third.event).toBe(2);
    // 105 stored, the newest 100 retained: events 0 to 4 are gone for readers, though not yet trimmed.
    await a.runAndWait(source, emitsOf(Array.from({ length: 5 }, (_, i) => ({ event: 100 + i }))));
    const stream = open(`${server.url}/v1/sources/${source}/sse`, a.key, { 'last-event-id': third.id });
    await waitFor(
      async () => stream.messages.length,
      (n) => n >= 100,
      { what: 'the replay' },
    );
    const replayed = stream.data().map((e) => e.event);
    expect([replayed.length, replayed[0], replayed[99]]).toEqual([100, 5, 104]);
  });

  it('refuses a Last-Event-ID that is no event id with 400, instead of going live without the replay asked for', async () => {
    const a = await account(server);
    const source = await a.deploy();
    for (const lastEventId of ['garbage', '1795740007009']) {
      const res = await fetch(`${server.url}/v1/sources/${source}/sse`, { headers: { authorization: `Bearer ${a.key}`, 'last-event-id': lastEventId } });
      expect([res.status, await res.json()]).toEqual([
        400,
        { error: `Last-Event-ID "${lastEventId}" is not an event id (<epoch_ms>-<seq>)`, code: 'invalid_request' },
      ]);
    }
  });

  it('goes live on a Last-Event-ID after the newest event id, instead of holding back every live event until ids pass it', async () => {
    const a = await account(server);
    const source = await a.deploy();
    await a.runAndWait(source, emitsOf([{ event: 1 }, { event: 2 }]));
    const [newest] = await a.eventsOf(source, 2);
    // An hour past the newest emit is past every event of the source, its $logs too; the newest id itself resumes.
    const ahead = [`${Number(newest.id.split('-')[0]) + 3_600_000}-0`, '9999999999999-0', newest.id];
    const streams = ahead.flatMap((id) =>
      [`/v1/sources/${source}/sse`, `/sources/${source}/sse`].map((path) => open(`${server.url}${path}`, a.key, { 'last-event-id': id })),
    );
    await Promise.all(streams.map((stream) => stream.opened));
    await a.runAndWait(source, emitsOf([{ event: 3 }]));
    for (const stream of streams) {
      await waitFor(
        async () => stream.messages.length,
        (n) => n === 1,
        { what: 'the live event after a Last-Event-ID past the newest' },
      );
      expect(stream.data().map((e) => e.event)).toEqual([3]);
    }
  });

  it('streams $logs or $errors instead of the emits with event_name', async () => {
    const a = await account(server);
    const source = await a.deploy();
    const logs = open(`${server.url}/sources/${source}/sse?event_name=$logs`, a.key);
    const errors = open(`${server.url}/sources/${source}/sse?event_name=%24errors`, a.key);
    await Promise.all([logs.opened, errors.opened]);
    await waitFor(
      async () => server.running.services.sse.clientCount(source),
      (n) => n === 2,
    );
    await a.runAndWait(source, emitsOf([{ event: 'not a log' }]));
    await a.runAndWait(source, { fail: 'bad input' });
    await waitFor(
      async () => logs.messages.length,
      (n) => n === 2,
      { what: 'two log lines' },
    );
    await waitFor(
      async () => errors.messages.length,
      (n) => n === 1,
      { what: 'one error' },
    );
    expect(logs.data().map((e) => [e.metadata.name, e.event.msg])).toEqual([
      ['$logs', 'run 1'],
      ['$logs', 'run 2'],
    ]);
    expect(errors.data().map((e) => [e.metadata.name, e.event.error.message])).toEqual([['$errors', 'bad input']]);
  });

  it('sends a :sse-handshake comment at connect and on every heartbeat', async () => {
    const a = await account(server);
    const source = await a.deploy();
    server.running.services.sse.configure({ heartbeatMs: 50 });
    const abort = new AbortController();
    const res = await fetch(`${server.url}/sources/${source}/sse`, { headers: { authorization: `Bearer ${a.key}` }, signal: abort.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache, no-transform');
    const reader = res.body!.getReader();
    let text = '';
    while ((text.match(/:sse-handshake\n\n/g) ?? []).length < 3) text += new TextDecoder().decode((await reader.read()).value);
    expect(text.startsWith(':sse-handshake\n\n')).toBe(true);
    abort.abort();
    await waitFor(
      async () => server.running.services.sse.clientCount(source),
      (n) => n === 0,
      { what: 'the aborted client to be removed' },
    );
  });

  it('fans one event out to 200 clients of one source', async () => {
    const a = await account(server);
    const source = await a.deploy();
    const clients = Array.from({ length: 200 }, () => open(`${server.url}/sources/${source}/sse`, a.key));
    await Promise.all(clients.map((c) => c.opened));
    await waitFor(
      async () => server.running.services.sse.clientCount(source),
      (n) => n === 200,
      { what: '200 connected clients' },
    );
    await a.runAndWait(source, emitsOf([{ event: 'to everyone' }]));
    await waitFor(
      async () => clients.filter((c) => c.messages.length === 1).length,
      (n) => n === 200,
      { what: 'every client to receive the event' },
    );
    expect(new Set(clients.map((c) => c.messages[0]!.data)).size).toBe(1);
  });

  it('cuts off a client that does not read, while a reading client gets everything', async () => {
    const a = await account(server);
    const source = await a.deploy(BULK_SOURCE);
    // No heartbeat (an earlier test set 50 ms): it checks backlogs too, and could catch the reader mid-run.
    server.running.services.sse.configure({ maxBufferedBytes: 256 * 1024, heartbeatMs: 3_600_000 });
    const reader = open(`${server.url}/sources/${source}/sse`, a.key);
    await reader.opened;
    // A raw connection that sends its request and then never reads a byte.
    const { port, hostname } = new URL(server.url);
    const stalled = net.connect(Number(port), hostname);
    await new Promise<void>((resolve) => stalled.once('connect', resolve));
    stalled.write(`GET /sources/${source}/sse HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${a.key}\r\n\r\n`);
    stalled.pause();
    await waitFor(
      async () => server.running.services.sse.clientCount(source),
      (n) => n === 2,
      { what: 'both clients connected' },
    );
    // Far more than the kernel's socket buffers hold, so that output piles up for the stalled client.
    // The reader has read each run's events before the next run, so its backlog is empty whenever the hub checks.
    for (let run = 1; run <= 3; run++) {
      await a.runAndWait(source, { count: 7, size: 1_000_000 });
      await waitFor(
        async () => reader.messages.length,
        (n) => n === 7 * run,
        { what: `the events of run ${run} at the reading client` },
      );
    }
    await waitFor(
      async () => server.running.services.sse.clientCount(source),
      (n) => n === 1,
      { what: 'the stalled client to be cut off' },
    );
    expect(reader.data().map((e) => e.event.i)).toEqual([0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6]);
    stalled.destroy();
  });

  it('cuts off a client that stops reading during its Last-Event-ID replay once the live events held for it pass the bound', async () => {
    const a = await account(server);
    const source = await a.deploy(BULK_SOURCE);
    server.running.services.sse.configure({ maxBufferedBytes: 256 * 1024, heartbeatMs: 3_600_000 });
    // Far more retained than the kernel's socket buffers hold, so that the replay waits for a drain that never comes.
    for (let run = 1; run <= 3; run++) await a.runAndWait(source, { count: 7, size: 1_000_000 });
    const { port, hostname } = new URL(server.url);
    const stalled = net.connect(Number(port), hostname);
    await new Promise<void>((resolve) => stalled.once('connect', resolve));
    stalled.write(`GET /sources/${source}/sse HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${a.key}\r\nLast-Event-ID: 0-0\r\n\r\n`);
    stalled.pause();
    await waitFor(
      async () => server.running.services.sse.clientCount(source),
      (n) => n === 1,
      { what: 'the stalled client connected' },
    );
    // Each run's events are held for it while the replay waits: the first run's pass the bound, the second's cut it.
    for (let run = 1; run <= 2; run++) await a.runAndWait(source, { count: 7, size: 1_000_000 });
    await waitFor(
      async () => server.running.services.sse.clientCount(source),
      (n) => n === 0,
      { what: 'the stalled client to be cut off' },
    );
    stalled.destroy();
  });

  it('holds no more than a page of a Last-Event-ID replay for clients that stop reading it', async () => {
    const a = await account(server);
    const source = await a.deploy(BULK_SOURCE);
    server.running.services.sse.configure({ heartbeatMs: 3_600_000 });
    // The 100 retained events, 1 MB each: a replay from the first holds them all if it reads them at once.
    for (let run = 1; run <= 15; run++) await a.runAndWait(source, { count: 7, size: 1_000_000 });
    const heapUsed = () => {
      collectGarbage();
      collectGarbage();
      return process.memoryUsage().heapUsed;
    };
    const before = heapUsed();
    // Four clients that read until their replay's first event arrives, then no more.
    const { port, hostname } = new URL(server.url);
    const stalled = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const socket = net.connect(Number(port), hostname);
        await new Promise<void>((resolve) => socket.once('connect', resolve));
        socket.write(`GET /sources/${source}/sse HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${a.key}\r\nLast-Event-ID: 0-0\r\n\r\n`);
        let received = '';
        await new Promise<void>((resolve) => {
          const read = (chunk: Buffer) => {
            received += chunk.toString('latin1');
            if (!received.includes('\nid: ')) return;
            socket.off('data', read);
            socket.pause();
            resolve();
          };
          socket.on('data', read);
        });
        return socket;
      }),
    );
    // Each held its whole replay, 100 MB, for as long as it stayed connected: 400 MB here, 100 GB for the 1,000
    // streams one account may open. What it has not read now waits in the database, not in the server's memory.
    await waitFor(
      async () => heapUsed() - before,
      (grown) => grown < 64 * 1024 * 1024,
      { what: "the server's heap to hold no stalled replay" },
    );
    expect(server.running.services.sse.clientCount(source)).toBe(4);
    for (const socket of stalled) socket.destroy();
  });

  it('ends the streams of a deleted source', async () => {
    const a = await account(server);
    const source = await a.deploy();
    const stream = open(`${server.url}/sources/${source}/sse`, a.key);
    await stream.opened;
    expect((await a.api.delete(`/v1/sources/${source}`)).status).toBe(204);
    await waitFor(
      async () => server.running.services.sse.clientCount(source),
      (n) => n === 0,
      { what: 'the stream to end' },
    );
  });
});

describe.each(DIALECTS)('live streams one account may hold open on %s', (dialect) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(dialect, {}, { maxStreamsPerAccount: 2 });
  });
  afterAll(async () => {
    await server?.destroy();
  });

  it('answers a HEAD request with the headers of a stream and ends it, holding no stream', async () => {
    const a = await account(server);
    const source = await a.deploy();
    const workflow = await a.api.post('/v1/workflows', { name: 'quiet', steps: [{ name: 'noop', component_code: 'module.exports = { async run() {} };' }] });
    expect(workflow.status, JSON.stringify(workflow.body)).toBe(200);
    for (const path of [`/sources/${source}/sse`, `/v1/sources/${source}/sse?event_name=$logs`, `/v1/workflows/${workflow.body.data.id}/sse?channel=a`]) {
      const head = await request('HEAD', `${server.url}${path}`, { key: a.key });
      expect([head.status, head.headers.get('content-type'), head.text], path).toEqual([200, 'text/event-stream; charset=utf-8', '']);
    }
    expect((await request('HEAD', `${server.url}/sources/dc_unknown/sse`, { key: a.key })).status).toBe(404);
    expect((await request('HEAD', `${server.url}/sources/${source}/sse`, { key: a.key, headers: { 'last-event-id': 'nope' } })).status).toBe(400);
    expect(server.running.services.sse.clientCount(source) + server.running.services.sse.clientCount(workflow.body.data.id)).toBe(0);
  });

  it('answers a GET with the headers its HEAD gives, the rate limit they count against among them', async () => {
    const a = await account(server);
    const source = await a.deploy();
    // The connection's own headers (and the length of HEAD's empty body) are Node's, not the route's.
    const NODE_OWN = ['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'];
    const routeHeaders = (headers: Headers) => [...headers.keys()].filter((name) => !NODE_OWN.includes(name)).sort();
    const head = await request('HEAD', `${server.url}/v1/sources/${source}/sse`, { key: a.key });
    const stream = new AbortController();
    const get = await fetch(`${server.url}/v1/sources/${source}/sse`, { headers: { authorization: `Bearer ${a.key}` }, signal: stream.signal });
    stream.abort();
    expect(routeHeaders(get.headers)).toEqual(routeHeaders(head.headers));
    expect(routeHeaders(get.headers)).toEqual([
      'cache-control',
      'content-type',
      'x-accel-buffering',
      'x-ratelimit-limit',
      'x-ratelimit-remaining',
      'x-ratelimit-reset',
      'x-request-id',
    ]);
    expect(Number(get.headers.get('x-ratelimit-remaining'))).toBe(Number(head.headers.get('x-ratelimit-remaining')) - 1);
    await waitFor(
      async () => server.running.services.sse.clientCount(source),
      (n) => n === 0,
      { what: 'the stream to close' },
    );
  });

  it('answers 429 past the bound, counts each account apart, and makes room as streams close', async () => {
    const a = await account(server);
    const b = await account(server);
    const source = await a.deploy();
    const first = openStream(`${server.url}/v1/sources/${source}/sse`, a.key);
    const second = openStream(`${server.url}/sources/${source}/sse`, a.key);
    await Promise.all([first.opened, second.opened]);
    const refused = await request('GET', `${server.url}/v1/sources/${source}/sse`, { headers: { authorization: `Bearer ${a.key}` } });
    expect([refused.status, refused.headers.get('retry-after')]).toEqual([429, '5']);
    expect(refused.body).toEqual({
      error: 'this account has 2 live streams open on this server, the most it may: close one first',
      code: 'too_many_streams',
    });
    // Another account's streams are its own.
    const other = openStream(`${server.url}/v1/sources/${await b.deploy()}/sse`, b.key);
    await other.opened;
    first.source.close();
    await waitFor(
      async () => server.running.services.sse.clientCount(source),
      (n) => n === 1,
      { what: 'the closed stream to be gone' },
    );
    const third = openStream(`${server.url}/v1/sources/${source}/sse`, a.key);
    await third.opened;
    for (const stream of [second, other, third]) stream.source.close();
  });

  it('holds to the bound when many streams are asked for at once, and HEAD requests hold no room', async () => {
    const a = await account(server);
    const source = await a.deploy();
    const streams = new AbortController();
    const url = `${server.url}/v1/sources/${source}/sse`;
    // Each request reads where its stream starts before it opens: all of them at once must not pass the bound together.
    const answers = await Promise.all(Array.from({ length: 40 }, () => fetch(url, { headers: { authorization: `Bearer ${a.key}` }, signal: streams.signal })));
    const statuses = answers.map((answer) => answer.status);
    streams.abort();
    expect([statuses.filter((status) => status === 200).length, statuses.filter((status) => status === 429).length]).toEqual([2, 38]);
    await waitFor(
      async () => server.running.services.sse.clientCount(source),
      (n) => n === 0,
      { what: 'the streams to close' },
    );
    for (let i = 0; i < 3; i++) expect((await request('HEAD', url, { key: a.key })).status).toBe(200);
    // Nothing is left counted, by the streams refused or closed or by the HEAD requests: the account opens its two again.
    const again = [openStream(url, a.key), openStream(`${server.url}/sources/${source}/sse`, a.key)];
    await Promise.all(again.map((stream) => stream.opened));
    for (const stream of again) stream.source.close();
  });

  it('counts no stream whose client left while it was being prepared', async () => {
    const a = await account(server);
    const accountId: string = (await a.api.get('/v1/users/me')).body.data.id;
    const source = await a.deploy();
    const url = `${server.url}/v1/sources/${source}/sse`;
    // Each client sends its request and leaves at once: on PostgreSQL, while the server still reads where its stream starts.
    for (let i = 0; i < 10; i++) {
      await new Promise<void>((resolve) => {
        const socket = net.connect(Number(new URL(server.url).port), '127.0.0.1', () => {
          socket.write(`GET /v1/sources/${source}/sse HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.key}\r\nLast-Event-ID: 0-0\r\n\r\n`);
          setImmediate(() => {
            socket.destroy();
            resolve();
          });
        });
      });
    }
    // Streams that opened before their client left close with it, and those still being prepared end: none is left held.
    await waitFor(
      async () => [server.running.services.live.streamsHeldBy(accountId), server.running.services.sse.clientCount(source)],
      ([held, clients]) => held === 0 && clients === 0,
      { what: 'no stream left held' },
    );
    const again = [openStream(url, a.key), openStream(`${server.url}/sources/${source}/sse`, a.key)];
    await Promise.all(again.map((stream) => stream.opened));
    for (const stream of again) stream.source.close();
  });
});
