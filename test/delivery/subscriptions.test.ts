// Subscriptions and auto-subscriptions: the API, stream matching, globs, listener sources and loop cut-off.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { request } from '../helpers/client.js';
import { MAX_LISTENER_DEPTH } from '../../src/commit/router.js';
import { account, emitsOf, startReceiver, type Receiver } from './helpers.js';

/** Emits the run's body, or throws with its `fail` message. */
const EMIT_OR_FAIL_STEP = `module.exports = { async run({ steps, $ }) {
  const body = steps.trigger.event;
  if (body.fail) throw new Error(body.fail);
  $.send.emit({ raw_event: body });
} };`;

describe.each(DIALECTS)('subscriptions on %s', (dialect) => {
  let server: TestServer;
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = await startReceiver();
    server = await startTestServer(dialect, { allowPrivateNetwork: true, webhookRetrySchedule: [] });
  });
  afterAll(async () => {
    await server?.destroy();
    await receiver?.close();
  });

  it("creates idempotently ('' and 'default' are one stream), lists without pagination, and deletes exactly the triple", async () => {
    const a = await account(server);
    const emitter = await a.deploy();
    const listener = await a.deploy();
    const first = await a.api.post(`/v1/subscriptions?emitter_id=${emitter}&listener_id=${listener}`);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ data: { id: expect.stringMatching(/^sub_[0-9a-z]{26}$/), emitter_id: emitter, listener_id: listener, event_name: '' } });
    const again = await a.api.post(`/v1/subscriptions?emitter_id=${emitter}&listener_id=${listener}`);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    // 'default' is the stream made without a name: the same subscription, answered as it was stored.
    const named = await a.api.post(`/v1/subscriptions?emitter_id=${emitter}&listener_id=${listener}&event_name=default`);
    expect(named.status).toBe(200);
    expect(named.body).toEqual(first.body);
    const errors = await a.subscribe(emitter, listener, '$errors');

    const listed = await a.api.get('/v1/users/me/subscriptions');
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ data: [errors, first.body.data] });

    const deleted = await a.api.delete(`/v1/subscriptions?emitter_id=${emitter}&listener_id=${listener}&event_name=`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    const missing = await a.api.delete(`/v1/subscriptions?emitter_id=${emitter}&listener_id=${listener}&event_name=`);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ error: expect.stringContaining('not found'), code: 'not_found' });
    expect((await a.api.delete(`/v1/subscriptions?emitter_id=${emitter}&listener_id=${listener}&event_name=default`)).status).toBe(404);
    expect((await a.api.delete(`/v1/subscriptions?emitter_id=${emitter}&listener_id=${listener}&event_name=$errors`)).status).toBe(204);
    expect((await a.api.get('/v1/users/me/subscriptions')).body).toEqual({ data: [] });

    // Made as 'default', it is found and removed as '' too; an auto-subscription likewise.
    const asDefault = await a.api.post(`/v1/subscriptions?emitter_id=${emitter}&listener_id=${listener}&event_name=default`);
    expect(asDefault.body.data.event_name).toBe('default');
    expect((await a.api.post(`/v1/subscriptions?emitter_id=${emitter}&listener_id=${listener}&event_name=`)).body).toEqual(asDefault.body);
    expect((await a.api.get('/v1/users/me/subscriptions')).body).toEqual({ data: [asDefault.body.data] });
    expect((await a.api.delete(`/v1/subscriptions?emitter_id=${emitter}&listener_id=${listener}&event_name=`)).status).toBe(204);
    expect((await a.api.get('/v1/users/me/subscriptions')).body).toEqual({ data: [] });
    const auto = await a.api.post(`/v1/auto_subscriptions?event_name=&listener_id=${listener}`);
    expect((await a.api.post(`/v1/auto_subscriptions?event_name=default&listener_id=${listener}`)).body).toEqual(auto.body);
    expect((await a.api.get('/v1/users/me/auto_subscriptions')).body.data).toEqual([{ ...auto.body.data, created_at: expect.any(Number) }]);
    expect((await a.api.delete(`/v1/auto_subscriptions?event_name=default&listener_id=${listener}`)).status).toBe(204);
    expect((await a.api.get('/v1/users/me/auto_subscriptions')).body).toEqual({ data: [] });
  });

  it('answers 404 for emitters and listeners outside the account, and 400 for malformed requests', async () => {
    const a = await account(server);
    const b = await account(server);
    const mine = await a.deploy();
    const theirs = await b.deploy();
    const theirHook = await b.createWebhook(`${receiver.url}/theirs`);
    const post = (q: string) => a.api.post(`/v1/subscriptions?${q}`);
    for (const [query, what] of [
      [`emitter_id=${theirs}&listener_id=${mine}`, `emitter "${theirs}"`],
      [`emitter_id=${mine}&listener_id=${theirs}`, `listener "${theirs}"`],
      [`emitter_id=${mine}&listener_id=${theirHook.id}`, `listener "${theirHook.id}"`],
      [`emitter_id=dc_00000000000000000000000000&listener_id=${mine}`, 'emitter "dc_00000000000000000000000000"'],
      [`emitter_id=${mine}&listener_id=p_01hzzzzzzzzzzzzzzzzzzzzzzz`, 'listener "p_01hzzzzzzzzzzzzzzzzzzzzzzz"'],
      [`emitter_id=p_01hzzzzzzzzzzzzzzzzzzzzzzz&listener_id=${mine}`, 'emitter "p_01hzzzzzzzzzzzzzzzzzzzzzzz"'],
      // The same id as emitter and listener is looked up first: outside the account it is a 404 as well.
      [`emitter_id=${theirs}&listener_id=${theirs}`, `emitter "${theirs}"`],
      [`emitter_id=dc_00000000000000000000000000&listener_id=dc_00000000000000000000000000`, 'emitter "dc_00000000000000000000000000"'],
    ]) {
      const res = await post(query!);
      expect(res.status, query).toBe(404);
      expect(res.body).toEqual({ error: `${what} not found`, code: 'not_found' });
    }
    expect((await post(`emitter_id=p_*&listener_id=${mine}`)).status).toBe(200);
    const glob = await post(`emitter_id=${mine}&listener_id=dc_*`);
    expect(glob.status).toBe(400);
    expect(glob.body.code).toBe('invalid_request');
    for (const pattern of ['dc_*', 'p_*']) {
      expect((await post(`emitter_id=${pattern}&listener_id=${pattern}`)).body, pattern).toEqual({
        error: `listener_id must be one source (dc_), workflow (p_) or webhook (wh_), not the glob "${pattern}"`,
        code: 'invalid_request',
      });
    }
    for (const pattern of ['x_*', 'dc_abc*', '*']) {
      expect([(await post(`emitter_id=${encodeURIComponent(pattern)}&listener_id=${mine}`)).body, pattern]).toEqual([
        { error: `emitter_id "${pattern}" is no glob this server knows: dc_* (all sources) or p_* (all workflows)`, code: 'invalid_request' },
        pattern,
      ]);
    }
    const missing = await post(`listener_id=${mine}`);
    expect(missing.status).toBe(400);
    expect(missing.body.details).toEqual([expect.objectContaining({ in: 'querystring', field: 'emitter_id' })]);
    expect((await a.api.post(`/v1/auto_subscriptions?event_name=default&listener_id=${theirs}`)).status).toBe(404);
    expect((await a.api.post(`/v1/auto_subscriptions?listener_id=${mine}`)).status).toBe(400);
  });

  it('selects streams: "" and default the default stream, a channel name that channel, $errors and $logs those', async () => {
    const a = await account(server);
    const emitter = await a.deploy();
    const names = ['', 'default', 'orders', '$errors', '$logs'];
    for (const [i, name] of names.entries()) {
      const hook = await a.createWebhook(`${receiver.url}/streams-${dialect}-${i}`);
      await a.subscribe(emitter, hook.id, name);
    }
    await a.runAndWait(
      emitter,
      emitsOf([
        { event: 'plain' },
        // The channel `default` is the default stream (named ""), not a channel no subscription can select.
        { event: 'named default', meta: { name: 'default' } },
        { event: 'order', meta: { name: 'orders' } },
        { event: 'other', meta: { name: 'misc' } },
      ]),
    );
    await a.runAndWait(emitter, { fail: 'broken' });
    const bodies = async (i: number, n: number) => {
      const got = await waitFor(
        async () => receiver.on(`/streams-${dialect}-${i}`),
        (r) => r.length >= n,
        { what: `${n} deliveries for "${names[i]}"` },
      );
      return got.map((r) => JSON.parse(r.body));
    };
    for (const i of [0, 1]) {
      expect((await bodies(i, 2)).map((s) => [s.event, s.metadata.name]).sort()).toEqual([
        ['named default', ''],
        ['plain', ''],
      ]);
    }
    expect((await bodies(2, 1)).map((s) => [s.event, s.metadata.name])).toEqual([['order', 'orders']]);
    const [error] = await bodies(3, 1);
    expect(error.metadata.name).toBe('$errors');
    expect(error.event.error.message).toBe('broken');
    // Deliveries to one webhook run concurrently, so their arrival order is not promised.
    expect((await bodies(4, 2)).map((s) => [s.metadata.name, s.event.msg]).sort()).toEqual([
      ['$logs', 'run 1'],
      ['$logs', 'run 2'],
    ]);
    // Nothing else arrived: each webhook got exactly its stream (checked after the last expected delivery).
    const logs = await a.api.get(`/v1/sources/${emitter}/$logs/event_summaries`);
    expect(logs.body.page_info.total_count).toBe(2);
    expect(receiver.requests.filter((r) => r.path.startsWith(`/streams-${dialect}-`))).toHaveLength(8);
    const summaries = await a.api.get(`/v1/sources/${emitter}/event_summaries`);
    expect(summaries.body.data.map((s: { metadata: { name: string } }) => s.metadata.name).sort()).toEqual(['', '', 'misc', 'orders']);
  });

  it('lets a source emit only on channels as long as a subscription may name: 200 characters, counted as code points', async () => {
    const a = await account(server);
    const emitter = await a.deploy();
    const longest = `${'é'.repeat(100)}${'😀'.repeat(100)}`;
    const hook = await a.createWebhook(`${receiver.url}/long-channel-${dialect}`);
    await a.subscribe(emitter, hook.id, longest);
    const tooLong = await a.api.post(`/v1/subscriptions?emitter_id=${emitter}&listener_id=${hook.id}&event_name=${encodeURIComponent(`${longest}x`)}`);
    expect([tooLong.status, tooLong.body.error]).toEqual([400, 'invalid querystring: event_name must NOT have more than 200 characters']);
    await a.runAndWait(emitter, emitsOf([{ event: 'fits', meta: { name: longest } }]));
    const [delivered] = await waitFor(
      async () => receiver.on(`/long-channel-${dialect}`),
      (r) => r.length >= 1,
      { what: 'the delivery on the 200-character channel' },
    );
    expect(JSON.parse(delivered?.body ?? '{}').metadata.name).toBe(longest);
    // One character more could be neither subscribed to nor streamed: the run fails instead of emitting it unreachably.
    await a.runAndWait(emitter, emitsOf([{ event: 'unreachable', meta: { name: `${longest}x` } }]));
    const [error] = await a.eventsOf(emitter, 1, '/$errors');
    expect(error.event.error.message).toBe('$emit name (the channel) may be at most 200 characters');
    const summaries = await a.api.get(`/v1/sources/${emitter}/event_summaries`);
    expect(summaries.body.data.map((e: { event: unknown }) => e.event)).toEqual(['fits']);
  });

  it('glob dc_* delivers events of every source of the account, including sources created later', async () => {
    const a = await account(server);
    const before = await a.deploy();
    const hook = await a.createWebhook(`${receiver.url}/glob-${dialect}`);
    await a.subscribe('dc_*', hook.id);
    const later = await a.deploy();
    const other = await account(server);
    const foreign = await other.deploy();
    await other.runAndWait(foreign, emitsOf([{ event: 'not mine' }]));
    await a.runAndWait(before, emitsOf([{ event: 'from before' }]));
    await a.runAndWait(later, emitsOf([{ event: 'from later' }]));
    const got = await waitFor(
      async () => receiver.on(`/glob-${dialect}`),
      (r) => r.length >= 2,
      { what: 'glob deliveries' },
    );
    const delivered = got.map((r) => JSON.parse(r.body)).map((s) => [s.metadata.emitter_id, s.event]);
    expect(delivered.sort((x, y) => x[1].localeCompare(y[1]))).toEqual([
      [before, 'from before'],
      [later, 'from later'],
    ]);
  });

  it('auto-subscriptions apply to sources created after them, and only to those', async () => {
    const a = await account(server);
    const hook = await a.createWebhook(`${receiver.url}/auto-${dialect}`);
    const existing = await a.deploy();
    const auto = await a.api.post(`/v1/auto_subscriptions?event_name=default&listener_id=${hook.id}`);
    expect(auto.status).toBe(200);
    expect(auto.body).toEqual({ data: { id: expect.stringMatching(/^sub_/), listener_id: hook.id, event_name: 'default' } });
    expect((await a.api.post(`/v1/auto_subscriptions?event_name=default&listener_id=${hook.id}`)).body).toEqual(auto.body);
    const created = await a.deploy();
    const listed = await a.api.get('/v1/users/me/subscriptions');
    expect(listed.body.data).toEqual([{ id: expect.stringMatching(/^sub_/), emitter_id: created, listener_id: hook.id, event_name: 'default' }]);
    await a.runAndWait(existing, emitsOf([{ event: 'old source' }]));
    await a.runAndWait(created, emitsOf([{ event: 'new source' }]));
    const got = await waitFor(
      async () => receiver.on(`/auto-${dialect}`),
      (r) => r.length >= 1,
      { what: 'auto-subscribed delivery' },
    );
    expect(got.map((r) => JSON.parse(r.body).event)).toEqual(['new source']);
    // Once removed, sources created afterwards are no longer subscribed.
    expect((await a.api.delete(`/v1/auto_subscriptions?event_name=default&listener_id=${hook.id}`)).status).toBe(204);
    await a.deploy();
    expect((await a.api.get('/v1/users/me/subscriptions')).body.data).toHaveLength(1);
  });

  it("lists the account's auto-subscriptions, newest first, and none of another account's; GET /users/me/subscriptions is unchanged", async () => {
    const a = await account(server);
    const other = await account(server);
    expect(await a.api.get('/v1/users/me/auto_subscriptions')).toMatchObject({ status: 200, body: { data: [] } });
    const hook = await a.createWebhook(`${receiver.url}/listed-${dialect}`);
    const workflow = (await a.api.post('/v1/workflows', { name: 'listener', steps: [{ name: 'emit', component_code: EMIT_OR_FAIL_STEP }] })).body.data.id;
    const first = (await a.api.post(`/v1/auto_subscriptions?event_name=default&listener_id=${hook.id}`)).body.data;
    const second = (await a.api.post(`/v1/auto_subscriptions?event_name=$errors&listener_id=${workflow}`)).body.data;
    const theirs = await other.createWebhook(`${receiver.url}/theirs-${dialect}`);
    expect((await other.api.post(`/v1/auto_subscriptions?event_name=default&listener_id=${theirs.id}`)).status).toBe(200);

    const listed = await a.api.get('/v1/users/me/auto_subscriptions');
    expect(listed.status).toBe(200);
    // What POST answered, and when it was made.
    const made = { created_at: expect.any(Number) };
    expect(listed.body).toEqual({
      data: [
        { ...second, ...made },
        { ...first, ...made },
      ],
    });
    expect(listed.body.data[0].created_at).toBeGreaterThan(1_700_000_000);
    expect(listed.body.data[0].created_at).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    // The specified list shows subscriptions only: none has been made from these yet.
    expect((await a.api.get('/v1/users/me/subscriptions')).body).toEqual({ data: [] });
    expect((await other.api.get('/v1/users/me/auto_subscriptions')).body).toEqual({
      data: [{ id: expect.stringMatching(/^sub_/), listener_id: theirs.id, event_name: 'default', created_at: expect.any(Number) }],
    });
    // Fields are selected as on every list.
    expect((await a.api.get('/v1/users/me/auto_subscriptions?include=id')).body).toEqual({ data: [{ id: second.id }, { id: first.id }] });

    // What the list shows is what DELETE takes: cleaning up from it empties it.
    for (const item of listed.body.data) {
      const query = new URLSearchParams({ event_name: item.event_name, listener_id: item.listener_id });
      expect((await a.api.delete(`/v1/auto_subscriptions?${query}`)).status).toBe(204);
    }
    expect((await a.api.get('/v1/users/me/auto_subscriptions')).body).toEqual({ data: [] });
    expect((await other.api.get('/v1/users/me/auto_subscriptions')).body.data).toHaveLength(1);
    // Deleting a listener removes its auto-subscriptions, and the list says so.
    expect((await other.api.delete(`/v1/webhooks/${theirs.id}`)).status).toBe(204);
    expect((await other.api.get('/v1/users/me/auto_subscriptions')).body).toEqual({ data: [] });
  });

  it('documents GET /users/me/auto_subscriptions in the OpenAPI document as an extension', async () => {
    const doc = (await request('GET', `${server.url}/v1/openapi.json`)).body;
    const operation = doc.paths['/v1/users/me/auto_subscriptions'].get;
    expect(operation.tags).toEqual(['subscriptions', 'extensions']);
    expect(operation.responses['200'].content['application/json'].schema.properties.data.items.required).toEqual([
      'id',
      'listener_id',
      'event_name',
      'created_at',
    ]);
  });

  it('auto-subscriptions apply to workflows created after them: their emitted events and $errors reach the webhook', async () => {
    const a = await account(server);
    const path = `/auto-workflow-${dialect}`;
    const hook = await a.createWebhook(`${receiver.url}${path}`);
    const createWorkflow = async (name: string) => {
      const res = await a.api.post('/v1/workflows', { name, steps: [{ name: 'emit', component_code: EMIT_OR_FAIL_STEP }] });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.data.id as string;
    };
    const existing = await createWorkflow('before');
    for (const eventName of ['default', '$errors']) {
      expect((await a.api.post(`/v1/auto_subscriptions?event_name=${eventName}&listener_id=${hook.id}`)).status).toBe(200);
    }
    const created = await createWorkflow('after');
    const listed = await a.api.get('/v1/users/me/subscriptions');
    expect(listed.body.data).toEqual([
      { id: expect.stringMatching(/^sub_/), emitter_id: created, listener_id: hook.id, event_name: expect.any(String) },
      { id: expect.stringMatching(/^sub_/), emitter_id: created, listener_id: hook.id, event_name: expect.any(String) },
    ]);
    expect(listed.body.data.map((s: { event_name: string }) => s.event_name).sort()).toEqual(['$errors', 'default']);

    for (const [workflowId, body] of [
      [existing, { n: 1 }],
      [existing, { fail: 'old workflow' }],
      [created, { n: 2 }],
      [created, { fail: 'new workflow' }],
    ] as const) {
      expect((await a.api.post(`/v1/workflows/${workflowId}/run`, body)).status).toBe(202);
    }
    const got = await waitFor(
      async () => receiver.on(path),
      (r) => r.length >= 2,
      { what: "the new workflow's event and error delivered" },
    );
    const summaries = got.map((r) => JSON.parse(r.body));
    expect(summaries.every((summary) => summary.metadata.emitter_id === created)).toBe(true);
    expect(summaries.map((summary) => summary.metadata.name).sort()).toEqual(['', '$errors']);
    expect(summaries.find((summary) => summary.metadata.name === '')!.event).toEqual({ raw_event: { n: 2 } });
    const failure = summaries.find((summary) => summary.metadata.name === '$errors')!.event;
    expect(failure.original_event).toEqual({ fail: 'new workflow' });
    expect(failure.error).toMatchObject({ message: 'new workflow' });
    // The workflow created before the auto-subscriptions finished its runs without a delivery.
    await waitFor(
      () => a.api.get(`/v1/workflows/${existing}/runs?limit=10`),
      (r) => r.body.data.filter((run: { status: string }) => run.status === 'succeeded' || run.status === 'failed').length === 2,
      { what: 'both runs of the older workflow finished' },
    );
    expect(receiver.on(path)).toHaveLength(2);
  });

  it('queues a run of a listener source with the event summary as its event', async () => {
    const a = await account(server);
    const emitter = await a.deploy();
    const listener = await a.deploy();
    await a.subscribe(emitter, listener);
    await a.runAndWait(emitter, emitsOf([{ event: { n: 1 }, meta: { id: 'k1', summary: 'first' } }]));
    const [emitted] = await a.eventsOf(emitter, 1);
    const [received] = await a.eventsOf(listener, 1);
    expect(received.event).toEqual(emitted);
    expect(received.metadata.emitter_id).toBe(listener);
    // An inactive listener gets nothing; the emitter's events still commit.
    expect((await a.api.patch(`/v1/sources/${listener}`, { active: false })).status).toBe(200);
    await a.runAndWait(emitter, emitsOf([{ event: { n: 2 } }]));
    await a.eventsOf(emitter, 2);
    expect(await server.running.services.store.db.selectFrom('invocations').select('id').where('source_id', '=', listener).execute()).toEqual([]);
    expect((await a.api.get(`/v1/sources/${listener}/event_summaries`)).body.page_info.total_count).toBe(1);
  });

  it('refuses a source listening to itself, and a glob never runs a source for its own events', async () => {
    const a = await account(server);
    const self = await a.deploy();
    const res = await a.api.post(`/v1/subscriptions?emitter_id=${self}&listener_id=${self}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: `${self} cannot listen to itself: each event it emits would run it again, without end`, code: 'invalid_request' });
    // Through dc_* the listener hears every other source of the account, but not itself.
    const other = await a.deploy();
    await a.subscribe('dc_*', self);
    await a.runAndWait(other, emitsOf([{ event: 'hello' }]));
    const [heard] = await a.eventsOf(self, 1);
    expect(heard.event.metadata.emitter_id).toBe(other);
    await waitFor(
      async () => (await server.running.services.store.db.selectFrom('invocations').select('id').where('source_id', '=', self).execute()).length,
      (n) => n === 0,
      { what: "the listener's runs to finish" },
    );
    expect((await a.api.get(`/v1/sources/${self}/event_summaries`)).body.page_info.total_count).toBe(1);
  });

  it(`cuts a loop through two sources after ${MAX_LISTENER_DEPTH} listener hops and reports it on $errors`, async () => {
    const a = await account(server);
    const ping = await a.deploy();
    const pong = await a.deploy();
    await a.subscribe(ping, pong);
    await a.subscribe(pong, ping);
    await a.runAndWait(ping, emitsOf([{ event: 'serve' }]));
    const [report] = await a.eventsOf(ping, 1, '/$errors');
    expect(report.metadata.name).toBe('$errors');
    expect(report.event).toMatchObject({
      error: { name: 'SubscriptionLoopError', code: 'subscription_loop', message: expect.stringContaining(`the most allowed is ${MAX_LISTENER_DEPTH}`) },
      original_context: { source_id: ping, trigger: 'listener' },
    });
    const queued = async () =>
      (await server.running.services.store.db.selectFrom('invocations').select('id').where('source_id', 'in', [ping, pong]).execute()).length;
    await waitFor(queued, (n) => n === 0, { what: 'the loop to end' });
    // The manual run and one run per allowed hop emitted; nothing ran after the cut.
    const count = async (id: string) => (await a.api.get(`/v1/sources/${id}/event_summaries`)).body.page_info.total_count;
    expect((await count(ping)) + (await count(pong))).toBe(MAX_LISTENER_DEPTH + 1);
  });

  it("cuts a loop of two sources listening to each other's $errors through errors their runs' timers throw later", async () => {
    const a = await account(server);
    const code = (name: string) => `module.exports = { name: "${name}", version: "0.0.1",
      async run(event) { setTimeout(() => { throw new Error("late ${name}"); }, 1); } };`;
    const ping = await a.deploy(code('ping'));
    const pong = await a.deploy(code('pong'));
    await a.subscribe(ping, pong, '$errors');
    await a.subscribe(pong, ping, '$errors');
    await a.runAndWait(ping, {});
    const errorsOf = async (id: string) =>
      (await a.api.get(`/v1/sources/${id}/$errors/event_summaries?expand=event&limit=100`)).body.data.map(
        (e: { event: { error: { name: string } } }) => e.event.error.name,
      );
    await waitFor(
      async () => [...(await errorsOf(ping)), ...(await errorsOf(pong))],
      (names) => names.includes('SubscriptionLoopError'),
      { what: 'the loop to be cut' },
    );
    const queued = async () =>
      (await server.running.services.store.db.selectFrom('invocations').select('id').where('source_id', 'in', [ping, pong]).execute()).length;
    await waitFor(queued, (n) => n === 0, { what: 'the loop to end' });
    // The manual run and one run per allowed hop each left one error; nothing ran after the cut.
    const names = [...(await errorsOf(ping)), ...(await errorsOf(pong))];
    expect(names.filter((name) => name === 'Error')).toHaveLength(MAX_LISTENER_DEPTH + 1);
    expect(names.filter((name) => name === 'SubscriptionLoopError')).toHaveLength(1);
  });

  it('counts each cut event once in the loop report, when it was on its way to a listener source and a workflow alike', async () => {
    const a = await account(server);
    const ping = await a.deploy();
    const pong = await a.deploy();
    const quiet = await a.api.post('/v1/workflows', { name: 'quiet', steps: [{ name: 'noop', component_code: 'module.exports = { async run() {} };' }] });
    expect(quiet.status, JSON.stringify(quiet.body)).toBe(200);
    await a.subscribe(ping, pong);
    await a.subscribe(pong, ping);
    await a.subscribe(ping, quiet.body.data.id);
    await a.runAndWait(ping, emitsOf([{ event: 'serve' }]));
    const [report] = await a.eventsOf(ping, 1, '/$errors');
    expect(report.event.error).toMatchObject({ name: 'SubscriptionLoopError', code: 'subscription_loop' });
    expect(report.event.error.message).toBe(
      `1 event(s) of ${ping} were not delivered to ${pong}, ${quiet.body.data.id}: they have passed through ${MAX_LISTENER_DEPTH} listener hops, ` +
        `the most allowed is ${MAX_LISTENER_DEPTH} (do subscriptions form a loop?)`,
    );
  });

  it('deleting a source or a webhook removes the subscriptions naming it', async () => {
    const a = await account(server);
    const one = await a.deploy();
    const two = await a.deploy();
    const hook = await a.createWebhook(`${receiver.url}/cascade`);
    await a.subscribe(one, two);
    await a.subscribe(two, one, '$errors');
    await a.subscribe(two, hook.id);
    const keep = await a.subscribe('dc_*', hook.id, '$logs');
    expect((await a.api.delete(`/v1/sources/${one}`)).status).toBe(204);
    expect((await a.api.get('/v1/users/me/subscriptions')).body.data.map((s: { emitter_id: string }) => s.emitter_id)).toEqual(['dc_*', two]);
    expect((await a.api.delete(`/v1/webhooks/${hook.id}`)).status).toBe(204);
    expect((await a.api.get('/v1/users/me/subscriptions')).body.data).toEqual([]);
    expect(keep.listener_id).toBe(hook.id);
  });
});

describe.each(DIALECTS)('the backlog of a listener source on %s', (dialect) => {
  let server: TestServer;

  beforeAll(async () => {
    // Three waiting runs at most, so that one run of five events overflows it.
    server = await startTestServer(dialect, {}, { maxQueuedListenerRuns: 3 });
  });
  afterAll(async () => {
    await server?.destroy();
  });

  it('queues listener runs up to the bound and reports the rest on the emitter $errors', async () => {
    const a = await account(server);
    const emitter = await a.deploy();
    const listener = await a.deploy();
    await a.subscribe(emitter, listener);
    await a.runAndWait(emitter, emitsOf([1, 2, 3, 4, 5].map((n) => ({ event: { n } }))));
    const [report] = await a.eventsOf(emitter, 1, '/$errors');
    expect(report.event.error).toMatchObject({
      name: 'SubscriptionOverflowError',
      code: 'subscription_overflow',
      message: `2 event(s) of ${emitter} were not delivered to ${listener}: 3 listener runs are waiting there already, the most allowed (do subscriptions form a loop?)`,
    });
    await waitFor(
      async () => (await server.running.services.store.db.selectFrom('invocations').select('id').where('source_id', '=', listener).execute()).length,
      (n) => n === 0,
      { what: "the listener's runs to finish" },
    );
    // The first three events, in order.
    const heard = await a.eventsOf(listener, 3);
    expect(heard.map((e) => e.event.event.n).reverse()).toEqual([1, 2, 3]);
    expect((await a.api.get(`/v1/sources/${listener}/event_summaries`)).body.page_info.total_count).toBe(3);
  });

  it('counts the events not delivered once each, however many listeners missed them, and names those listeners', async () => {
    const a = await account(server);
    const emitter = await a.deploy();
    const first = await a.deploy();
    const second = await a.deploy();
    await a.subscribe(emitter, first);
    await a.subscribe(emitter, second);
    // Five events, three waiting runs at most on each listener: events 4 and 5 miss both.
    await a.runAndWait(emitter, emitsOf([1, 2, 3, 4, 5].map((n) => ({ event: { n } }))));
    const [report] = await a.eventsOf(emitter, 1, '/$errors');
    expect(report.event.error).toMatchObject({
      name: 'SubscriptionOverflowError',
      code: 'subscription_overflow',
      message:
        `2 event(s) of ${emitter} were not delivered to ${first}, ${second}: ` +
        '3 listener runs are waiting on each already, the most allowed (do subscriptions form a loop?)',
    });
    for (const listener of [first, second]) {
      await waitFor(
        async () => (await server.running.services.store.db.selectFrom('invocations').select('id').where('source_id', '=', listener).execute()).length,
        (n) => n === 0,
        { what: `the runs of ${listener} to finish` },
      );
      expect((await a.eventsOf(listener, 3)).map((e) => e.event.event.n).reverse()).toEqual([1, 2, 3]);
    }
  });
});
