// The queue hands each invocation to exactly one run, in arrival order, however it was queued (HTTP requests,
// listener runs) and whether or not the next batch runs while the previous one commits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { request } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { account } from '../delivery/helpers.js';

/** An HTTP source that emits what reached it: the request body, or for a listener run the event it was given. */
const RECORDER = `
module.exports = {
  name: "Recorder",
  version: "0.0.1",
  props: { http: "$.interface.http" },
  async run(event) {
    if (event && event.method) this.$emit({ via: "http", n: event.body.n });
    else this.$emit({ via: "listener", n: event.event.n });
  },
};
`;

/** Counts its runs in its db: a run that read the db before the previous batch committed would repeat a number. */
const COUNTER = `
module.exports = {
  name: "Counter",
  version: "0.0.1",
  props: { http: "$.interface.http", db: "$.service.db" },
  async run() {
    const count = (this.db.get("count") || 0) + 1;
    this.db.set("count", count);
    this.$emit({ count });
  },
};
`;

/** Every event of a source's default stream, oldest first, once there are `n`. */
async function allEvents(a: Awaited<ReturnType<typeof account>>, sourceId: string, n: number): Promise<any[]> {
  await waitFor(
    () => a.api.get(`/v1/sources/${sourceId}/event_summaries?limit=1`),
    (r) => r.body.page_info?.total_count >= n,
    { what: `${n} events on ${sourceId}` },
  );
  const events: any[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await a.api.get(`/v1/sources/${sourceId}/event_summaries?expand=event&limit=100${after ? `&after=${after}` : ''}`);
    expect(page.status).toBe(200);
    events.push(...page.body.data);
    after = page.body.page_info.end_cursor;
    if (!after || page.body.data.length < 100) break;
  }
  return events.reverse().map((e) => e.event);
}

async function deployHttp(a: Awaited<ReturnType<typeof account>>, code: string): Promise<{ id: string; url: string }> {
  const res = await a.api.post('/v1/sources', { component_code: code });
  expect(res.status).toBe(200);
  return { id: res.body.data.id, url: res.body.data.configured_props.http.endpoint_url };
}

async function post(url: string, body: unknown): Promise<void> {
  const res = await request('POST', url, { body });
  expect(res.status).toBe(200);
}

describe.each(DIALECTS)('the invocation queue on %s', (dialect) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(dialect, { eventRetention: 1000, batchWindow: 50 });
  });
  afterAll(() => server?.destroy());

  it('runs HTTP requests and listener runs that reach one source together exactly once, requests in arrival order', async () => {
    const a = await account(server);
    const emitter = await deployHttp(a, RECORDER);
    const listener = await deployHttp(a, RECORDER);
    await a.subscribe(emitter.id, listener.id);
    const count = 40;
    for (let n = 0; n < count; n++) {
      // Both at once: the listener's own request and the listener run the emitter's event queues.
      await Promise.all([post(emitter.url, { n }), post(listener.url, { n })]);
    }
    // The emitter's events reach the listener after the emitter's own run, so wait for all of them.
    const events = await allEvents(a, listener.id, 2 * count);
    expect(events).toHaveLength(2 * count);
    const numbers = (via: string) => events.filter((e) => e.via === via).map((e) => e.n);
    const inOrder = Array.from({ length: count }, (_, n) => n);
    expect(numbers('http')).toEqual(inOrder);
    expect(numbers('listener')).toEqual(inOrder);
  });

  it("runs every request once and each client's requests in order while a loaded source's batches wait to fill", async () => {
    // 20 clients keep batches at 10 or more, so that the next batch waits (up to the server's 50 ms window).
    const a = await account(server);
    const recorder = await deployHttp(a, RECORDER);
    const clients = 20;
    const perClient = 15;
    await Promise.all(
      Array.from({ length: clients }, async (_, client) => {
        for (let i = 0; i < perClient; i++) await post(recorder.url, { n: client * 1000 + i });
      }),
    );
    const events = await allEvents(a, recorder.id, clients * perClient);
    expect(events).toHaveLength(clients * perClient);
    for (let client = 0; client < clients; client++) {
      const mine = events.map((e) => e.n).filter((n) => Math.floor(n / 1000) === client);
      expect(mine).toEqual(Array.from({ length: perClient }, (_, i) => client * 1000 + i));
    }
  });

  it('gives each run of a source with a db the state the previous run left, under concurrent requests', async () => {
    const a = await account(server);
    const counter = await deployHttp(a, COUNTER);
    const count = 120;
    // Ten clients at once, so that runs arrive while earlier batches are still running and committing.
    await Promise.all(
      Array.from({ length: 10 }, async (_, client) => {
        for (let i = client; i < count; i += 10) await post(counter.url, { i });
      }),
    );
    const events = await allEvents(a, counter.id, count);
    expect(events.map((e) => e.count)).toEqual(Array.from({ length: count }, (_, i) => i + 1));
  });
});
