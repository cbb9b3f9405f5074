// Live streams honour include and exclude as every endpoint does: checked before the stream opens, applied to each frame.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { account, emitsOf, openStream } from './helpers.js';

const PATTERN = '^\\s*([A-Za-z0-9_$]+\\s*(,\\s*[A-Za-z0-9_$]+\\s*)*)?$';

describe('include and exclude on live streams', () => {
  let server: TestServer;
  const streams: Array<{ source: { close(): void } }> = [];
  const open = (...args: Parameters<typeof openStream>) => {
    const stream = openStream(...args);
    streams.push(stream);
    return stream;
  };
  /** A GET of a stream that should be refused: a stream answered 200 instead is let go at once rather than read forever. */
  const refusal = async (url: string, key: string) => {
    const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
    if (res.status === 400) return [res.status, await res.json()];
    await res.body?.cancel();
    return [res.status, res.headers.get('content-type')];
  };
  const messagesOf = (stream: ReturnType<typeof openStream>, n: number, what: string) =>
    waitFor(
      async () => stream.messages.length,
      (count) => count === n,
      { what },
    );

  beforeAll(async () => {
    server = await startTestServer('sqlite');
  });
  afterEach(() => {
    for (const stream of streams.splice(0)) stream.source.close();
  });
  afterAll(() => server?.destroy());

  it('refuses a malformed include or exclude with the 400 every endpoint gives, on every live stream, before it opens', async () => {
    const a = await account(server);
    const source = await a.deploy();
    const workflow = await a.api.post('/v1/workflows', { name: 'w', steps: [{ name: 's', component_code: 'module.exports = { run() {} };' }] });
    expect(workflow.status).toBe(200);
    const ordinary = await a.api.get(`/v1/sources/${source}/event_summaries?include=a.b`);
    const expected = {
      error: `invalid querystring: include must match pattern "${PATTERN}"`,
      code: 'invalid_request',
      details: [{ in: 'querystring', field: 'include', message: `must match pattern "${PATTERN}"` }],
    };
    expect([ordinary.status, ordinary.body]).toEqual([400, expected]);
    const workflowId = workflow.body.data.id;
    for (const path of [`/sources/${source}/sse`, `/v1/sources/${source}/sse`, `/workflows/${workflowId}/sse`, `/v1/workflows/${workflowId}/sse`]) {
      expect(await refusal(`${server.url}${path}?include=a.b`, a.key), path).toEqual([400, expected]);
      expect(await refusal(`${server.url}${path}?exclude=a%20b`, a.key), path).toEqual([
        400,
        {
          error: `invalid querystring: exclude must match pattern "${PATTERN}"`,
          code: 'invalid_request',
          details: [{ in: 'querystring', field: 'exclude', message: `must match pattern "${PATTERN}"` }],
        },
      ]);
    }
    expect(server.running.services.sse.clientCount(source) + server.running.services.sse.clientCount(workflowId)).toBe(0);
  });

  it('trims live and replayed events to include or exclude, while an unfiltered client of the source gets full summaries', async () => {
    const a = await account(server);
    const source = await a.deploy();
    await a.runAndWait(source, emitsOf([{ event: 1 }, { event: 2 }]));
    const [, first] = await a.eventsOf(source, 2);
    const included = open(`${server.url}/sources/${source}/sse?include=id`, a.key, { 'last-event-id': first.id });
    const excluded = open(`${server.url}/v1/sources/${source}/sse?exclude=event, metadata`, a.key, { 'last-event-id': first.id });
    const full = open(`${server.url}/v1/sources/${source}/sse`, a.key, { 'last-event-id': first.id });
    await messagesOf(included, 1, 'the replayed event, trimmed to include');
    await messagesOf(excluded, 1, 'the replayed event, trimmed by exclude');
    await messagesOf(full, 1, 'the replayed event, in full');
    await a.runAndWait(source, emitsOf([{ event: 3 }]));
    for (const stream of [included, excluded, full]) await messagesOf(stream, 2, 'the live event');
    const stored = (await a.eventsOf(source, 3)).slice(0, 2).reverse();
    expect(included.messages.map((m) => m.data)).toEqual(stored.map((e) => JSON.stringify({ id: e.id })));
    expect(excluded.data()).toEqual(stored.map((e) => ({ id: e.id, indexed_at_ms: e.indexed_at_ms })));
    expect(full.data()).toEqual(stored);
    expect(stored.map((e) => e.event)).toEqual([2, 3]);
    // The id: line still carries the event id, so a trimmed stream resumes with Last-Event-ID as any does.
    for (const stream of [included, excluded]) expect(stream.messages.map((m) => m.lastEventId)).toEqual(stored.map((e) => e.id));
  });

  it("trims a workflow's $.send.sse payloads, live and replayed", async () => {
    const a = await account(server);
    const api = client(server.url, a.key);
    const code = 'module.exports = { async run({ steps, $ }) { $.send.sse({ channel: "c", payload: steps.trigger.event.n }); } };';
    const workflow = (await api.post('/v1/workflows', { name: 'live', steps: [{ name: 'push', component_code: code }] })).body.data.id;
    const live = open(`${server.url}/v1/workflows/${workflow}/sse?channel=c&include=id,event`, a.key);
    await live.opened;
    await api.post(`/v1/workflows/${workflow}/run`, { n: 1 });
    await messagesOf(live, 1, 'the live payload');
    await api.post(`/v1/workflows/${workflow}/run`, { n: 2 });
    await messagesOf(live, 2, 'the second live payload');
    const ids = live.messages.map((m) => m.lastEventId);
    expect(live.data()).toEqual([
      { id: ids[0], event: 1 },
      { id: ids[1], event: 2 },
    ]);
    const replayed = open(`${server.url}/workflows/${workflow}/sse?exclude=metadata,indexed_at_ms`, a.key, { 'last-event-id': ids[0]! });
    await messagesOf(replayed, 1, 'the replayed payload');
    expect(replayed.data()).toEqual([{ id: ids[1], event: 2 }]);
  });
});
