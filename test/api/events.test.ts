// Runs and their events: manual runs, event summaries, truncation, deletion, $logs, $errors, dedupe, restarts.
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import type { client } from '../helpers/client.js';
import { emitterSource } from '../helpers/components.js';
import { account, emitsOf } from '../helpers/account.js';
import { waitFor } from '../helpers/wait.js';

type Api = ReturnType<typeof client>;

/** A workflow step: emits the run's body, or throws with its `fail` message. */
const EMIT_OR_FAIL_STEP = `module.exports = { async run({ steps, $ }) {
  const body = steps.trigger.event;
  if (body.fail) throw new Error(body.fail);
  $.send.emit({ raw_event: body });
} };`;

describe.each(DIALECTS)('events on %s', (dialect) => {
  let server: TestServer;
  let api: Api;
  let me: Awaited<ReturnType<typeof account>>;
  /** What the server logged at warn level or above. */
  const logged: Array<{ level: number; msg: string; workflowId?: string }> = [];

  beforeAll(async () => {
    const collect = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) logged.push(JSON.parse(line));
        done();
      },
    });
    server = await startTestServer(dialect, { eventRetention: 100 }, { logger: pino({ level: 'warn' }, collect) });
    me = await account(server);
    api = me.api;
  });
  afterAll(() => server?.destroy());

  const deploy = (code?: string) => me.deploy(code);
  const runAndWait = (sourceId: string, event: unknown) => me.runAndWait(sourceId, event);

  it('stores emitted events with <ms>-<seq> ids and the spec metadata, newest first', async () => {
    const id = await deploy();
    await runAndWait(
      id,
      emitsOf([
        { event: { n: 1 }, meta: { summary: 'one', id: 'a' } },
        { event: { n: 2 }, meta: { name: 'channel-x' } },
      ]),
    );
    const res = await api.get(`/v1/sources/${id}/event_summaries`);
    expect(res.status).toBe(200);
    expect(res.body.page_info).toMatchObject({ total_count: 2, count: 2 });
    const [second, first] = res.body.data;
    expect(first).toEqual({
      id: expect.stringMatching(/^\d{13}-\d+$/),
      indexed_at_ms: expect.any(Number),
      event: { n: 1 },
      metadata: { emitter_id: id, emit_id: expect.any(String), name: '', summary: 'one', id: 'a' },
    });
    expect(second.metadata.name).toBe('channel-x');
    const [ms1, seq1] = first.id.split('-').map(Number);
    const [ms2, seq2] = second.id.split('-').map(Number);
    expect(ms2 > ms1 || (ms2 === ms1 && seq2 > seq1)).toBe(true);
  });

  it('orders the events of one run by ts, oldest first', async () => {
    const id = await deploy();
    await runAndWait(
      id,
      emitsOf([
        { event: 'c', meta: { ts: 3000 } },
        { event: 'a', meta: { ts: 1000 } },
        { event: 'b', meta: { ts: 2000 } },
      ]),
    );
    const res = await api.get(`/v1/sources/${id}/event_summaries`);
    expect(res.body.data.map((e: { event: string }) => e.event)).toEqual(['c', 'b', 'a']);
    expect(res.body.data[0].metadata.ts).toBe(3000);
  });

  it('pages with limit, before and after, and truncates large events unless expand=event', async () => {
    const id = await deploy();
    const big = { text: 'x'.repeat(2000) };
    await runAndWait(id, emitsOf([...Array.from({ length: 5 }, (_, i) => ({ event: { i } })), { event: big }]));
    const last3 = await api.get(`/v1/sources/${id}/event_summaries?limit=3`);
    expect(last3.body.page_info).toMatchObject({ total_count: 6, count: 3 });
    const truncated = last3.body.data[0].event;
    expect(truncated).toEqual({ $truncated: true, size: JSON.stringify(big).length, preview: JSON.stringify(big).slice(0, 1024) });
    expect(last3.body.data.slice(1).map((e: { event: { i: number } }) => e.event.i)).toEqual([4, 3]);
    const older = await api.get(`/v1/sources/${id}/event_summaries?limit=3&after=${last3.body.page_info.end_cursor}`);
    expect(older.body.data.map((e: { event: { i: number } }) => e.event.i)).toEqual([2, 1, 0]);
    const newer = await api.get(`/v1/sources/${id}/event_summaries?limit=2&before=${older.body.page_info.start_cursor}`);
    expect(newer.body.data.map((e: { event: { i?: number } }) => e.event.i)).toEqual([4, 3]);
    const expanded = await api.get(`/v1/sources/${id}/event_summaries?limit=1&expand=event`);
    expect(expanded.body.data[0].event).toEqual(big);
    expect((await api.get(`/v1/sources/${id}/event_summaries?expand=all`)).status).toBe(400);
  });

  it('cuts the preview of a truncated event before a character, never inside one', async () => {
    const id = await deploy();
    // '"' and 511 two-byte characters are 1023 bytes: the 1024th byte starts the 512th, which does not fit.
    const text = 'é'.repeat(600);
    await runAndWait(id, emitsOf([{ event: text }]));
    const res = await api.get(`/v1/sources/${id}/event_summaries?limit=1`);
    expect(res.status).toBe(200);
    expect(res.body.data[0].event).toEqual({ $truncated: true, size: 1202, preview: `"${'é'.repeat(511)}` });
  });

  it('truncates at 1 KB of JSON, counted in bytes: 1024 bytes come whole, 1025 do not', async () => {
    const id = await deploy();
    // {"s":"…"} is 8 bytes around the text; 508 'é' are 1016 bytes (516 characters) and fit exactly.
    const fits = { s: 'x'.repeat(1016) };
    const over = { s: 'x'.repeat(1017) };
    const fitsWide = { s: 'é'.repeat(508) };
    const overWide = { s: 'é'.repeat(508) + 'x' };
    await runAndWait(id, emitsOf([fits, over, fitsWide, overWide].map((event) => ({ event }))));
    const res = await api.get(`/v1/sources/${id}/event_summaries?limit=4`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((e: { event: unknown }) => e.event)).toEqual([
      { $truncated: true, size: 1025, preview: Buffer.from(JSON.stringify(overWide)).subarray(0, 1024).toString() },
      fitsWide,
      { $truncated: true, size: 1025, preview: JSON.stringify(over).slice(0, 1024) },
      fits,
    ]);
  });

  it('keeps only the last 100 events', async () => {
    const id = await deploy();
    await runAndWait(id, emitsOf(Array.from({ length: 120 }, (_, i) => ({ event: i }))));
    const res = await api.get(`/v1/sources/${id}/event_summaries?limit=100`);
    expect(res.body.page_info.total_count).toBe(100);
    expect(res.body.data[0].event).toBe(119);
    expect(res.body.data[99].event).toBe(20);
  });

  it('shows exactly the newest 100 while up to 10 more wait for the next trim, and deletes only what it shows', async () => {
    const id = await deploy();
    const events = async (query = 'limit=100') => (await api.get(`/v1/sources/${id}/event_summaries?${query}`)).body;
    // 105 stored: the trim waits until more than 110 are (a trim costs more than an append).
    await runAndWait(id, emitsOf(Array.from({ length: 105 }, (_, i) => ({ event: i }))));
    const page = await events();
    expect(page.page_info.total_count).toBe(100);
    expect(page.data.map((e: { event: number }) => e.event)).toEqual(Array.from({ length: 100 }, (_, i) => 104 - i));
    expect((await events(`limit=100&after=${page.page_info.end_cursor}`)).data).toEqual([]);
    const oldest = (await events(`limit=1&after=${(await events('limit=99')).page_info.end_cursor}`)).data;
    expect(oldest.map((e: { event: number }) => e.event)).toEqual([5]);

    // 111 stored: trimmed back to the newest 100 (11 to 110).
    await runAndWait(id, emitsOf(Array.from({ length: 6 }, (_, i) => ({ event: 105 + i }))));
    const trimmed = await events();
    expect(trimmed.page_info.total_count).toBe(100);
    expect([trimmed.data[0].event, trimmed.data[99].event]).toEqual([110, 11]);

    // 105 stored again (11 to 115, 16 and on shown). Deleting from an event on leaves the older shown ones,
    // not the hidden ones behind them; deleting up to an event removes shown and hidden alike.
    await runAndWait(id, emitsOf(Array.from({ length: 5 }, (_, i) => ({ event: 111 + i }))));
    const shown = (await events()).data.map((e: { id: string; event: number }) => e);
    expect([shown[0].event, shown[99].event]).toEqual([115, 16]);
    expect((await api.delete(`/v1/sources/${id}/events?start_id=${shown[49].id}`)).status).toBe(202);
    const older = await events();
    expect(older.page_info.total_count).toBe(50);
    expect(older.data.map((e: { event: number }) => e.event)).toEqual(shown.slice(50).map((e: { event: number }) => e.event));
    expect((await api.delete(`/v1/sources/${id}/events?end_id=${shown[75].id}`)).status).toBe(202);
    const newer = await events();
    expect(newer.page_info.total_count).toBe(25);
    expect(newer.data.map((e: { event: number }) => e.event)).toEqual(shown.slice(50, 75).map((e: { event: number }) => e.event));
  });

  it('deletes events in the four ways the spec lists, answering 202', async () => {
    const id = await deploy();
    await runAndWait(id, emitsOf(Array.from({ length: 6 }, (_, i) => ({ event: i }))));
    const all = (await api.get(`/v1/sources/${id}/event_summaries`)).body.data.map((e: { id: string }) => e.id).reverse();
    const remaining = async () => (await api.get(`/v1/sources/${id}/event_summaries`)).body.data.map((e: { event: number }) => e.event).reverse();

    const one = await api.delete(`/v1/sources/${id}/events?start_id=${all[2]}&end_id=${all[2]}`);
    expect([one.status, one.text, one.headers.get('content-type')]).toEqual([202, '', null]);
    expect(await remaining()).toEqual([0, 1, 3, 4, 5]);
    expect((await api.delete(`/v1/sources/${id}/events?start_id=${all[4]}`)).status).toBe(202);
    expect(await remaining()).toEqual([0, 1, 3]);
    expect((await api.delete(`/v1/sources/${id}/events?end_id=${all[0]}`)).status).toBe(202);
    expect(await remaining()).toEqual([1, 3]);
    expect((await api.delete(`/v1/sources/${id}/events?start_id=${all[1]}&end_id=${all[3]}`)).status).toBe(202);
    expect(await remaining()).toEqual([]);

    await runAndWait(id, emitsOf([{ event: 'again' }]));
    expect((await api.delete(`/v1/sources/${id}/events`)).status).toBe(202);
    expect(await remaining()).toEqual([]);
    const bad = await api.delete(`/v1/sources/${id}/events?start_id=yesterday`);
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain('start_id "yesterday" is not an event id');
  });

  it('answers a workflow id on a source events route, and a source id on a workflow one, as it answers an unknown id', async () => {
    const sourceId = await deploy();
    await runAndWait(sourceId, emitsOf([{ event: 'from the source' }]));
    await runAndWait(sourceId, { fail: 'source failure' });
    const created = await api.post('/v1/workflows', { name: 'emits or fails', steps: [{ name: 'emit', component_code: EMIT_OR_FAIL_STEP }] });
    expect(created.status).toBe(200);
    const workflowId: string = created.body.data.id;
    for (const body of [{ n: 1 }, { fail: 'workflow failure' }]) expect((await api.post(`/v1/workflows/${workflowId}/run`, body)).status).toBe(202);
    await waitFor(
      () => api.get(`/v1/workflows/${workflowId}/$errors/event_summaries`),
      (r) => r.body.data?.length === 1,
      { what: "the workflow's failure on $errors" },
    );
    const workflowEvents = async () => (await api.get(`/v1/workflows/${workflowId}/event_summaries`)).body.data;
    expect(await workflowEvents()).toHaveLength(1);

    const unknown = { source: 'dc_00000000000000000000000000', workflow: 'p_00000000000000000000000000' };
    const routes: Array<[method: 'get' | 'delete', kind: 'source' | 'workflow', path: (id: string) => string]> = [
      ['get', 'source', (id) => `/v1/sources/${id}/event_summaries`],
      ['get', 'source', (id) => `/v1/sources/${id}/$logs/event_summaries`],
      ['get', 'source', (id) => `/v1/sources/${id}/$errors/event_summaries`],
      ['delete', 'source', (id) => `/v1/sources/${id}/events`],
      ['get', 'source', (id) => `/v1/sources/${id}/sse`],
      ['get', 'workflow', (id) => `/v1/workflows/${id}/event_summaries`],
      ['get', 'workflow', (id) => `/v1/workflows/${id}/$errors/event_summaries`],
      ['get', 'workflow', (id) => `/v1/workflows/${id}/sse`],
    ];
    for (const [method, kind, path] of routes) {
      const other = kind === 'source' ? workflowId : sourceId;
      const missing = await api[method](path(unknown[kind]));
      expect([missing.status, missing.body], path(unknown[kind])).toEqual([404, { error: `${kind} "${unknown[kind]}" not found`, code: 'not_found' }]);
      const crossed = await api[method](path(other));
      expect([crossed.status, crossed.body], path(other)).toEqual([404, { error: `${kind} "${other}" not found`, code: 'not_found' }]);
    }
    // The refused delete left the workflow's events, and the source's are still its own.
    expect(await workflowEvents()).toHaveLength(1);
    expect((await api.get(`/v1/sources/${sourceId}/event_summaries?expand=event`)).body.data.map((e: { event: unknown }) => e.event)).toEqual([
      'from the source',
    ]);
  });

  it('records console output on $logs and failures on $errors, committing nothing of a failed run', async () => {
    const id = await deploy();
    await runAndWait(id, { fail: 'kaput', emits: [{ event: 'never' }] });
    const errors = await api.get(`/v1/sources/${id}/$errors/event_summaries`);
    expect(errors.body.page_info.total_count).toBe(1);
    const error = errors.body.data[0];
    expect(error.metadata.name).toBe('$errors');
    expect(error.event).toMatchObject({
      error: { name: 'Error', message: 'kaput', stack: expect.stringContaining('kaput') },
      original_event: { fail: 'kaput', emits: [{ event: 'never' }] },
      original_context: { id: expect.stringMatching(/^inv_/), source_id: id, trigger: 'manual', ts: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
    });
    expect((await api.get(`/v1/sources/${id}/event_summaries`)).body.data).toEqual([]);
    // The same, with the `$` encoded as a client that encodes every path segment sends it.
    expect((await api.get(`/v1/sources/${id}/${encodeURIComponent('$errors')}/event_summaries`)).body).toEqual(errors.body);
    const logs = await api.get(`/v1/sources/${id}/$logs/event_summaries`);
    expect(logs.body.data[0].event).toEqual({ k: 'log', ts: expect.any(Number), msg: 'run 1' });
    expect(logs.body.data[0].metadata.name).toBe('$logs');
    // The failed run's db write was discarded: the next run counts 1 again.
    await runAndWait(id, emitsOf([{ event: 'ok' }]));
    const after = await api.get(`/v1/sources/${id}/$logs/event_summaries`);
    expect(after.body.data[0].event.msg).toBe('run 1');
  });

  it('keeps dedupe state across runs', async () => {
    const unique = await deploy(emitterSource('unique'));
    await runAndWait(
      unique,
      emitsOf([
        { event: 1, meta: { id: 'a' } },
        { event: 2, meta: { id: 'b' } },
      ]),
    );
    await runAndWait(
      unique,
      emitsOf([
        { event: 3, meta: { id: 'b' } },
        { event: 4, meta: { id: 'c' } },
      ]),
    );
    const events = (await api.get(`/v1/sources/${unique}/event_summaries`)).body.data.map((e: { event: number }) => e.event);
    expect(events).toEqual([4, 2, 1]);

    const greatest = await deploy(emitterSource('greatest'));
    await runAndWait(greatest, emitsOf([{ event: 'five', meta: { id: 5 } }]));
    await runAndWait(
      greatest,
      emitsOf([
        { event: 'four', meta: { id: 4 } },
        { event: 'six', meta: { id: 6 } },
      ]),
    );
    expect((await api.get(`/v1/sources/${greatest}/event_summaries`)).body.data.map((e: { event: string }) => e.event)).toEqual(['six', 'five']);
  });

  it('greatest compares integer ids past 2^53 exactly (snowflake ids in text), across runs', async () => {
    const id = await deploy(emitterSource('greatest'));
    // As numbers, these three read as one: 2^53 and above, neighbouring integers share a double.
    await runAndWait(id, emitsOf([{ event: 'first', meta: { id: '1234567890123456789' } }]));
    await runAndWait(
      id,
      emitsOf([
        { event: 'next', meta: { id: '1234567890123456790' } },
        { event: 'seen', meta: { id: '1234567890123456789' } },
      ]),
    );
    await runAndWait(
      id,
      emitsOf([
        { event: 'again', meta: { id: '1234567890123456790' } },
        { event: 'small', meta: { id: 7 } },
        { event: 'last', meta: { id: '1234567890123456791' } },
      ]),
    );
    const events = (await api.get(`/v1/sources/${id}/event_summaries`)).body.data.map((e: { event: string }) => e.event);
    expect(events).toEqual(['last', 'next', 'first']);
  });

  it('rejects an emit without id under a dedupe strategy with a clear error', async () => {
    const id = await deploy(emitterSource('unique'));
    await runAndWait(id, emitsOf([{ event: 'no id' }]));
    const errors = await api.get(`/v1/sources/${id}/$errors/event_summaries`);
    expect(errors.body.data[0].event.error.message).toBe('$emit needs an id when dedupe is "unique"');
  });

  it("records an error thrown after a run returned (a timer it left) on the source's $errors, failing no run", async () => {
    const id = await deploy(`module.exports = { name: "late thrower", version: "0.0.1",
      async run(event) {
        if (event.late) setTimeout(() => { throw new TypeError("thrown after run " + event.n); }, 20);
        this.$emit(event.n);
      } };`);
    const first = await api.post(`/v1/sources/${id}/run`, { n: 1, late: true });
    expect(first.status).toBe(202);
    for (const n of [2, 3]) await runAndWait(id, { n });
    const [error, ...others] = await me.eventsOf(id, 1, '/$errors');
    expect(others).toEqual([]);
    expect(error.event).toEqual({
      error: { name: 'TypeError', message: 'thrown after run 1', stack: expect.stringContaining('TypeError: thrown after run 1'), code: 'TypeError' },
      original_event: null,
      original_context: { id: first.body.data.id, ts: expect.any(String), source_id: id, trigger: 'after_run' },
    });
    const events = await api.get(`/v1/sources/${id}/event_summaries?expand=event`);
    expect(events.body.data.map((e: { event: number }) => e.event)).toEqual([3, 2, 1]);
  });

  it('records a late error after many later requests of its busy worker (one event each)', async () => {
    // The run of event 0 leaves a timer that throws once a later run sets the flag: 300 requests later (more than 256).
    const id = await deploy(`module.exports = { name: "long leftover", version: "0.0.1",
      async run(event) {
        if (event.n === 0) { const t = setInterval(() => { if (globalThis.fire) { clearInterval(t); throw new Error("left by run 0"); } }, 5); }
        if (event.fire) globalThis.fire = true;
        this.$emit(event.n);
      } };`);
    const first = await api.post(`/v1/sources/${id}/run`, { n: 0 });
    expect(first.status).toBe(202);
    for (let n = 1; n <= 300; n++) await runAndWait(id, { n, fire: n === 300 });
    const [error] = await me.eventsOf(id, 1, '/$errors');
    expect([error.event.error.message, error.event.original_context]).toEqual([
      'left by run 0',
      { id: first.body.data.id, ts: expect.any(String), source_id: id, trigger: 'after_run' },
    ]);
  });

  it("records late errors of one source however many another left before it in the account's worker", async () => {
    const late = (name: string) => `module.exports = { name: "${name}", version: "0.0.1",
      async run(event) { setTimeout(() => { throw new Error("${name} " + event.n); }, 1); this.$emit(event.n); } };`;
    const noisy = await deploy(late('noisy'));
    const quiet = await deploy(late('quiet'));
    for (let n = 1; n <= 100; n++) await runAndWait(noisy, { n });
    await runAndWait(quiet, { n: 1 });
    const [error] = await me.eventsOf(quiet, 1, '/$errors');
    expect([error.event.error.message, error.event.original_context.trigger]).toEqual(['quiet 1', 'after_run']);
    // The server keeps the newest 100 events of a stream here: all of the noisy source's 100 are there.
    const noisyErrors = await me.eventsOf(noisy, 100, '/$errors');
    expect(noisyErrors.map((e) => e.event.error.message)).toEqual(Array.from({ length: 100 }, (_, i) => `noisy ${100 - i}`));
  });

  it("records an error thrown after a hook returned as after_run, under the hook's id, not as a failed hook", async () => {
    // The hook's timer throws once a run (after the deploy has committed) tells it to.
    const id = await deploy(`module.exports = { name: "late hook", version: "0.0.1",
      hooks: { async activate() { const t = setInterval(() => { if (globalThis.go) { clearInterval(t); throw new Error("after activate"); } }, 5); } },
      async run(event) { globalThis.go = true; this.$emit(event.n); } };`);
    await runAndWait(id, { n: 1 });
    const [error] = await me.eventsOf(id, 1, '/$errors');
    expect(error.event).toEqual({
      error: { name: 'Error', message: 'after activate', stack: expect.stringContaining('Error: after activate'), code: 'Error' },
      original_event: null,
      original_context: { id: expect.stringMatching(/^hi_/), ts: expect.any(String), source_id: id, trigger: 'after_run' },
    });
  });

  it("records an error activate()'s timer throws while its deploy is still committing the source", async () => {
    const id = await deploy(`module.exports = { name: "late activate", version: "0.0.1",
      hooks: { async activate() { setTimeout(() => { throw new Error("before the commit"); }, 1); } },
      async run(event) { this.$emit(event.n); } };`);
    const [error] = await me.eventsOf(id, 1, '/$errors');
    expect([error.event.error.message, error.event.original_context.trigger]).toEqual(['before the commit', 'after_run']);
  });

  it("records an error a workflow step's timer threw after the step ended on the workflow's $errors, naming run and step, failing nothing", async () => {
    const created = await api.post('/v1/workflows', {
      name: 'late step',
      steps: [
        { name: 'leaves', component_code: 'module.exports = { async run() { setTimeout(() => { throw new Error("late"); }, 10); return 1; } };' },
        { name: 'after', component_code: 'module.exports = { async run() { return 2; } };' },
      ],
    });
    expect(created.status).toBe(200);
    const workflowId: string = created.body.data.id;
    const started = await api.post(`/v1/workflows/${workflowId}/run`, { n: 1 });
    expect(started.status).toBe(202);
    const errors = await waitFor(
      () => api.get(`/v1/workflows/${workflowId}/$errors/event_summaries?expand=event`),
      (r) => r.body.data?.length >= 1,
      { what: "the late error on the workflow's $errors" },
    );
    const runId: string = started.body.data.id;
    const run = await waitFor(
      () => api.get(`/v1/workflows/${workflowId}/runs/${runId}`),
      (r) => r.body.data?.status === 'succeeded' || r.body.data?.status === 'failed',
      { what: `run ${runId} to finish` },
    );
    expect(errors.body.data).toEqual([
      {
        id: expect.stringMatching(/^\d{13}-\d+$/),
        indexed_at_ms: expect.any(Number),
        event: {
          original_event: { n: 1 },
          original_context: {
            id: runId,
            ts: new Date(run.body.data.created_at_ms).toISOString(),
            workflow_id: workflowId,
            deployment_id: `d_${workflowId.slice(2)}`,
            source_type: 'MANUAL',
            verified: false,
            owner_id: expect.stringMatching(/^u_/),
            platform_version: '1.0.0',
            trigger: 'after_step',
          },
          error: {
            code: 'Error',
            cellId: 'leaves',
            ts: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
            stack: expect.stringContaining('Error: late'),
            name: 'Error',
            message: 'late',
          },
        },
        metadata: { emitter_id: workflowId, emit_id: expect.any(String), name: '$errors', summary: 'Error: late' },
      },
    ]);
    // The run had ended its step: it went on and succeeded, and stays so.
    expect(run.body.data.status).toBe('succeeded');
    expect(run.body.data.steps.map((step: { name: string; status: string }) => [step.name, step.status])).toEqual([
      ['leaves', 'succeeded'],
      ['after', 'succeeded'],
    ]);
    expect(logged.filter((line) => line.workflowId === workflowId)).toEqual([]);
  });

  it("records a rejection a workflow step left unhandled after it ended on the workflow's $errors, failing nothing", async () => {
    const created = await api.post('/v1/workflows', {
      name: 'late rejection',
      steps: [
        {
          name: 'floats',
          component_code: 'module.exports = { async run() { setTimeout(() => { Promise.reject(new RangeError("rejected late")); }, 10); return 1; } };',
        },
      ],
    });
    expect(created.status).toBe(200);
    const workflowId: string = created.body.data.id;
    const started = await api.post(`/v1/workflows/${workflowId}/run`, { n: 2 });
    expect(started.status).toBe(202);
    const errors = await waitFor(
      () => api.get(`/v1/workflows/${workflowId}/$errors/event_summaries?expand=event`),
      (r) => r.body.data?.length >= 1,
      { what: "the late rejection on the workflow's $errors" },
    );
    const [error] = errors.body.data;
    expect([error.event.error.name, error.event.error.message, error.event.error.cellId]).toEqual(['RangeError', 'rejected late', 'floats']);
    expect([error.event.original_context.id, error.event.original_context.trigger]).toEqual([started.body.data.id, 'after_step']);
    const run = await waitFor(
      () => api.get(`/v1/workflows/${workflowId}/runs/${started.body.data.id}`),
      (r) => r.body.data?.status === 'succeeded' || r.body.data?.status === 'failed',
      { what: 'the run to finish' },
    );
    expect(run.body.data.status).toBe('succeeded');
  });

  it('records nothing, and logs nothing, for an error a step left behind that lands after its workflow was deleted', async () => {
    // A fresh account: its one worker runs both workflows' steps (the same code, one bundle), so that a run of the
    // second can set off the timer the first one's step left behind, and wait until it threw.
    const other = await account(server);
    const step = `module.exports = { async run({ steps }) {
      const until = (ready) => new Promise((resolve) => { const t = setInterval(() => { if (ready()) { clearInterval(t); resolve(); } }, 5); });
      if (!steps.trigger.event.go) { until(() => globalThis.go).then(() => { globalThis.thrown = true; throw new Error("late after delete"); }); return; }
      globalThis.go = true;
      await until(() => globalThis.thrown);
    } };`;
    const create = async (name: string) => {
      const res = await other.api.post('/v1/workflows', { name, steps: [{ name: 'only', component_code: step }] });
      expect(res.status).toBe(200);
      return res.body.data.id as string;
    };
    const finished = async (workflowId: string, body: object) => {
      const started = await other.api.post(`/v1/workflows/${workflowId}/run`, body);
      expect(started.status).toBe(202);
      const run = await waitFor(
        () => other.api.get(`/v1/workflows/${workflowId}/runs/${started.body.data.id}`),
        (r) => r.body.data?.status === 'succeeded' || r.body.data?.status === 'failed',
        { what: `run of ${workflowId} to finish` },
      );
      expect(run.body.data.status).toBe('succeeded');
    };
    const deleted = await create('deleted before its error lands');
    const survivor = await create('sets the timer off');
    await finished(deleted, {});
    expect((await other.api.delete(`/v1/workflows/${deleted}`)).status).toBe(204);
    await finished(survivor, { go: true });
    // The error reached the server before the survivor's run ended (one worker, in order); it is not the survivor's.
    expect((await other.api.get(`/v1/workflows/${survivor}/$errors/event_summaries`)).body.data).toEqual([]);
    const gone = await other.api.get(`/v1/workflows/${deleted}/$errors/event_summaries`);
    expect([gone.status, gone.body]).toEqual([404, { error: `workflow "${deleted}" not found`, code: 'not_found' }]);
    const rows = await server.running.services.store.db.selectFrom('events').select('emit_id').where('emitter_id', '=', deleted).execute();
    expect(rows).toEqual([]);
    expect(logged.filter((line) => line.workflowId === deleted || line.workflowId === survivor)).toEqual([]);
  });

  it("reports a worker the component crashed through the server's own code without the server's paths", async () => {
    // A `toJSON` on Object.prototype that throws breaks the worker's own sending of the outcome (a replaced built-in no
    // longer does: replaced-builtins.test.ts): the worker dies with its stack and the fault on stderr.
    const id = await deploy(`module.exports = { name: "breaks the worker", version: "0.0.1",
      async run() { Object.defineProperty(Object.prototype, "toJSON", { value() { throw new Error("no json"); } }); } };`);
    const run = await api.post(`/v1/sources/${id}/run`, {});
    expect(run.status).toBe(202);
    const [error] = await me.eventsOf(id, 1, '/$errors');
    expect([error.event.error.name, error.event.error.code, error.event.original_context.trigger]).toEqual(['WorkerCrashError', 'worker_crashed', 'manual']);
    const { message } = error.event.error;
    // Two frames, each naming the component's bundle or the worker's file from the package root, nothing above; then
    // what broke.
    const frame = String.raw` {4}at (?:async )?[\w.<> ]+ \((?:component\.js|dist/runtime/worker/[\w-]+\.js):\d+:\d+\)`;
    const fault = String.raw`tributary worker fault \(the worker's own code failed; component code may have replaced a built-in it relies on\): Error: no json`;
    expect(message).toMatch(new RegExp(String.raw`^the worker exited unexpectedly \(exit code 70\): ${frame} \| ${frame} \| ${fault}$`));
    expect(message).toContain('(dist/runtime/worker/invoke.js:');
    expect(message).not.toContain(server.dataDir);
    expect(message).not.toContain(path.resolve(import.meta.dirname, '../..'));
  });

  it('reports an error that throws when read, thrown late or in a run, without ending the worker or failing another run', async () => {
    // Run 1 leaves a timer that throws such an error while run 2 is running; run 2 waits until it has thrown.
    const id = await deploy(`module.exports = { name: "unreadable thrower", version: "0.0.1",
      async run(event) {
        const unreadable = () => { const e = new Error("x"); Object.defineProperty(e, "name", { get() { throw new Error("gotcha"); } }); return e; };
        const until = (ready) => new Promise((resolve) => { const t = setInterval(() => { if (ready()) { clearInterval(t); resolve(); } }, 5); });
        if (event.n === 1) until(() => globalThis.waiting).then(() => { globalThis.thrown = true; throw unreadable(); });
        if (event.n === 2) { globalThis.waiting = true; await until(() => globalThis.thrown); }
        if (event.n === 3) throw Object.create(null, { toJSON: { value() { throw new Error("gotcha"); } } });
        this.$emit(event.n);
      } };`);
    const first = await api.post(`/v1/sources/${id}/run`, { n: 1 });
    expect(first.status).toBe(202);
    await runAndWait(id, { n: 2 });
    await runAndWait(id, { n: 3 });
    await runAndWait(id, { n: 4 });
    const events = await api.get(`/v1/sources/${id}/event_summaries?expand=event`);
    expect(events.body.data.map((e: { event: number }) => e.event)).toEqual([4, 2, 1]);
    const message = 'the component threw a value that throws when read';
    const unreadable = { name: 'Error', message, stack: `Error: ${message}`, code: 'Error' };
    const errors = await me.eventsOf(id, 2, '/$errors');
    expect(errors.map((e) => [e.event.error, e.event.original_context.trigger])).toEqual([
      [unreadable, 'manual'],
      [unreadable, 'after_run'],
    ]);
  });

  it('removes a $.service.db key set to undefined, as JSON leaves it out: get() then returns undefined, in that run and later ones', async () => {
    const id = await deploy(`module.exports = { name: "db removal", version: "0.0.1", props: { db: "$.service.db" },
      async run(event) {
        if ("value" in event) this.db.set("k", event.value === "remove" ? undefined : event.value);
        const seen = this.db.get("k");
        this.$emit({ seen: seen === undefined ? "undefined" : seen });
      } };`);
    for (const event of [{ value: 5 }, { value: 'remove' }, {}, { value: 6 }]) await runAndWait(id, event);
    await server.restart();
    api = me.api;
    await runAndWait(id, { value: 'remove' });
    await runAndWait(id, {});
    const events = await api.get(`/v1/sources/${id}/event_summaries?expand=event&limit=100`);
    expect(events.status).toBe(200);
    expect(events.body.data.map((e: { event: { seen: unknown } }) => e.event.seen).reverse()).toEqual([
      5,
      'undefined',
      'undefined',
      6,
      'undefined',
      'undefined',
    ]);
    const errors = await api.get(`/v1/sources/${id}/$errors/event_summaries`);
    expect(errors.status).toBe(200);
    expect(errors.body.data).toEqual([]);
  });

  it('stores and removes 12,000 $.service.db keys written by one run, more than one statement may bind', async () => {
    const id = await deploy(`module.exports = { name: "many keys", version: "0.0.1", props: { db: "$.service.db" },
      async run(event) {
        if (event.op !== "look") for (let i = 0; i < 12000; i++) this.db.set("k" + i, event.op === "remove" ? undefined : i);
        let kept = 0;
        for (let i = 0; i < 12000; i++) if (this.db.get("k" + i) !== undefined) kept++;
        this.$emit({ kept });
      } };`);
    for (const op of ['set', 'look', 'remove', 'look', 'set', 'look']) await runAndWait(id, { op });
    const events = await api.get(`/v1/sources/${id}/event_summaries?expand=event&limit=100`);
    expect(events.status).toBe(200);
    expect(events.body.data.map((e: { event: { kept: number } }) => e.event.kept).reverse()).toEqual([12000, 12000, 0, 0, 12000, 12000]);
    const errors = await api.get(`/v1/sources/${id}/$errors/event_summaries`);
    expect(errors.status).toBe(200);
    expect(errors.body.data).toEqual([]);
  });

  it('keeps $.service.db and dedupe state across a restart', async () => {
    const id = await deploy(emitterSource('unique'));
    await runAndWait(id, emitsOf([{ event: 1, meta: { id: 'a' } }]));
    await server.restart();
    api = me.api;
    await runAndWait(
      id,
      emitsOf([
        { event: 2, meta: { id: 'a' } },
        { event: 3, meta: { id: 'b' } },
      ]),
    );
    expect((await api.get(`/v1/sources/${id}/event_summaries`)).body.data.map((e: { event: number }) => e.event)).toEqual([3, 1]);
    const logs = await api.get(`/v1/sources/${id}/$logs/event_summaries`);
    expect(logs.body.data[0].event.msg).toBe('run 2');
  });
});
