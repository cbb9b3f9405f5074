// Quotas: free-plan daily invocations and compute time counted and enforced; paid-plan invocations counted.
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client, request } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { ManualClock } from '../../src/lib/clock.js';

const BUSY = `
module.exports = {
  name: "Busy",
  version: "0.0.1",
  props: { http: "$.interface.http" },
  async run(event) {
    // 30 ms of CPU, not of the clock: compute is billed by CPU time, which a busy machine hands out slower.
    const start = process.cpuUsage();
    while (process.cpuUsage(start).user + process.cpuUsage(start).system < 30_000) {}
    this.$emit(event.body);
  },
};
`;

describe.each(DIALECTS)('quotas on %s', (dialect) => {
  let server: TestServer;
  // The server's quotas, timers and leases read this clock, which moves only when a test moves it: ten minutes
  // before a UTC midnight, so that the Retry-After and the reset at midnight are exact.
  const clock = new ManualClock(Date.parse('2026-11-25T23:50:00.000Z'));

  beforeAll(async () => {
    server = await startTestServer(dialect, { freeDailyInvocations: 2, freeDailyComputeMs: 1_000_000, minTimerInterval: 1 }, { clock });
  });
  afterAll(() => server?.destroy());

  async function deploy(api: ReturnType<typeof client>, body: object) {
    const res = await api.post('/v1/sources', body);
    expect(res.status).toBe(200);
    return res.body.data;
  }

  it("counts a free account's invocations and compute time, and refuses ingress over quota with 429", async () => {
    const api = client(server.url, (await server.createUser({ plan: 'free' })).apiKey);
    const source = await deploy(api, { component_code: BUSY });
    const url = source.configured_props.http.endpoint_url;
    for (const n of [1, 2]) expect((await request('POST', url, { body: { n } })).status).toBe(200);
    const me = await waitFor(
      () => api.get('/v1/users/me'),
      (r) => r.body.data.daily_invocations_used === 2,
      { what: 'two counted invocations' },
    );
    expect(me.body.data.daily_compute_time_used).toBeGreaterThanOrEqual(30);
    // A verdict is cached for 500 ms of the clock: a second later the usage is read again.
    clock.advance(1000);
    const refused = await request('POST', url, { body: { n: 3 } });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: 'daily invocation quota of 2 reached; it resets at 00:00 UTC', code: 'quota_exceeded' });
    expect(refused.headers.get('retry-after')).toBe(String((Date.parse('2026-11-26T00:00:00.000Z') - clock.now()) / 1000));
    const manual = await api.post(`/v1/sources/${source.id}/run`, {});
    expect(manual.status).toBe(429);
    expect(manual.body.code).toBe('quota_exceeded');

    // At midnight UTC the day's count starts over.
    clock.set(Date.parse('2026-11-26T00:00:01.000Z'));
    expect((await request('POST', url, { body: { n: 4 } })).status).toBe(200);
    await waitFor(
      () => api.get('/v1/users/me'),
      (r) => r.body.data.daily_invocations_used === 1,
      { what: "the new day's first invocation" },
    );
  });

  it('records a quota error on $errors when a timer is due over quota', async () => {
    const api = client(server.url, (await server.createUser({ plan: 'free' })).apiKey);
    const ticker = `module.exports = { name: "T", version: "1", props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 1 } } }, async run(e) { this.$emit(e); } };`;
    const source = await deploy(api, { component_code: ticker });
    // Each poll moves the clock a second on: the timer comes due, runs twice, then finds the quota used up.
    const errors = await waitFor(
      () => {
        clock.advance(1000);
        return api.get(`/v1/sources/${source.id}/$errors/event_summaries`);
      },
      (r) => r.body.data?.length >= 1,
      { what: 'a quota error', timeoutMs: 30_000 },
    );
    expect(errors.body.data[0].event.error).toMatchObject({ name: 'QuotaExceededError', code: 'quota_exceeded' });
    expect(errors.body.data[0].event.original_context.trigger).toBe('timer');
    const emitted = await api.get(`/v1/sources/${source.id}/event_summaries`);
    expect(emitted.body.data).toHaveLength(2);
  });

  it("bills the compute of a source's hooks, those that fail included, and counts no invocation for them", async () => {
    const api = client(server.url, (await server.createUser({ plan: 'free' })).apiKey);
    // 30 ms of CPU in activate(), which throws when asked to: the deploy is refused, the CPU was used all the same.
    const hooked = (fail: boolean) =>
      `module.exports = { name: "H", version: "1", hooks: { async activate() { const start = process.cpuUsage(); while (process.cpuUsage(start).user + process.cpuUsage(start).system < 30_000) {} ${fail ? 'throw new Error("refused");' : ''} } }, async run() {} };`;
    await deploy(api, { component_code: hooked(false) });
    expect((await api.post('/v1/sources', { component_code: hooked(true) })).status).toBe(422);
    const me = (await api.get('/v1/users/me')).body.data;
    expect(me.daily_invocations_used).toBe(0);
    // Each hook's 30 ms as the server measures the worker (a little less than the loop's own count, which takes in
    // the process's other threads): more than one hook's worth, so the refused one counted too.
    expect(me.daily_compute_time_used).toBeGreaterThanOrEqual(45);
  });

  it('bills the compute of options() and additionalProps(), those that fail included, and counts no invocation for them', async () => {
    const api = client(server.url, (await server.createUser({ plan: 'free' })).apiKey);
    // 30 ms of CPU in each: options() then throws, additionalProps() answers.
    const burn = 'const start = process.cpuUsage(); while (process.cpuUsage(start).user + process.cpuUsage(start).system < 30_000) {}';
    const saved = await api.post('/v1/components', {
      component_code: `module.exports = { name: "C", version: "1", props: { pick: { type: "string", async options() { ${burn} throw new Error("the forge is down"); } } }, async additionalProps() { ${burn} return {}; }, async run() {} };`,
    });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    const id = saved.body.data.id;
    const options = await api.post(`/v1/components/${id}/props/pick/options`, {});
    expect(options.body.data.errors).toEqual([expect.stringContaining('the forge is down')]);
    const reload = await api.post(`/v1/components/${id}/props/reload`, {});
    expect(reload.body.data.errors).toEqual([]);
    const me = (await api.get('/v1/users/me')).body.data;
    expect(me.daily_invocations_used).toBe(0);
    // Each call's 30 ms as the server measures the worker: more than one call's worth, so the failed one counted too.
    expect(me.daily_compute_time_used).toBeGreaterThanOrEqual(45);
  });

  it('queues no listener runs over quota: the emitter says so on $errors, and the listener does not run', async () => {
    const api = client(server.url, (await server.createUser({ plan: 'free' })).apiKey);
    const listener = await deploy(api, { component_code: 'module.exports = { name: "L", version: "1", async run(e) { this.$emit(e); } };' });
    const busy = await deploy(api, { component_code: BUSY });
    for (const n of [1, 2]) expect((await request('POST', busy.configured_props.http.endpoint_url, { body: { n } })).status).toBe(200);
    await waitFor(
      () => api.get('/v1/users/me'),
      (r) => r.body.data.daily_invocations_used === 2,
      { what: 'the quota used up' },
    );
    // Past the verdict's cache; then a deploy hook emits (hooks are not refused by the quota) to a listener.
    clock.advance(1000);
    expect((await api.post(`/v1/auto_subscriptions?event_name=&listener_id=${listener.id}`)).status).toBe(200);
    const emitter = await deploy(api, {
      component_code: 'module.exports = { name: "E", version: "1", hooks: { async deploy() { this.$emit({ hello: 1 }); } }, async run() {} };',
    });
    const errors = await waitFor(
      () => api.get(`/v1/sources/${emitter.id}/$errors/event_summaries?expand=event`),
      (r) => r.body.data?.length === 1,
      { what: 'the quota error of the routing' },
    );
    expect(errors.body.data[0].event.error).toMatchObject({
      name: 'QuotaExceededError',
      code: 'quota_exceeded',
      message: `1 event(s) of ${emitter.id} were not delivered to ${listener.id}: daily invocation quota of 2 reached; it resets at 00:00 UTC`,
    });
    expect((await api.get(`/v1/sources/${emitter.id}/event_summaries`)).body.data).toHaveLength(1);
    expect((await api.get(`/v1/sources/${listener.id}/event_summaries`)).body.data).toEqual([]);
    expect((await api.get('/v1/users/me')).body.data.daily_invocations_used).toBe(2);
  });

  it("records a workflow timer's quota error on the workflow's $errors in the workflow error shape", async () => {
    const user = await server.createUser({ plan: 'free' });
    const api = client(server.url, user.apiKey);
    const created = await api.post('/v1/workflows', {
      name: 'ticks',
      trigger: { type: 'timer', interval_seconds: 1 },
      steps: [{ name: 'echo', component_code: 'export default defineComponent({ async run({ steps }) { return steps.trigger.event } })' }],
    });
    expect(created.status).toBe(200);
    const workflow = created.body.data;
    const errors = await waitFor(
      () => {
        clock.advance(1000);
        return api.get(`/v1/workflows/${workflow.id}/$errors/event_summaries?expand=event`);
      },
      (r) => r.body.data?.length >= 1,
      { what: "the workflow's quota error", timeoutMs: 30_000 },
    );
    const { event } = errors.body.data[0];
    expect(Object.keys(event).sort()).toEqual(['error', 'original_context', 'original_event']);
    expect(event.original_event).toMatchObject({ timestamp: expect.any(Number), interval_seconds: 1, cron: null });
    expect(Object.keys(event.original_context).sort()).toEqual(
      ['deployment_id', 'id', 'owner_id', 'platform_version', 'source_type', 'ts', 'verified', 'workflow_id'].sort(),
    );
    expect(event.original_context).toMatchObject({
      id: expect.stringMatching(/^wr_/),
      workflow_id: workflow.id,
      deployment_id: `d_${workflow.id.slice(2)}`,
      source_type: 'TIMER',
      verified: false,
      owner_id: user.id,
    });
    expect(event.error).toMatchObject({
      code: 'quota_exceeded',
      cellId: 'trigger',
      name: 'QuotaExceededError',
      message: 'daily invocation quota of 2 reached; it resets at 00:00 UTC',
    });
    expect(event.error.ts).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(event.error.stack).toContain('QuotaExceededError');
  });

  it("counts a paid account's invocations in its billing period without limiting them", async () => {
    const api = client(server.url, (await server.createUser({ plan: 'paid' })).apiKey);
    const source = await deploy(api, { component_code: BUSY });
    for (let n = 0; n < 4; n++) expect((await request('POST', source.configured_props.http.endpoint_url, { body: { n } })).status).toBe(200);
    await waitFor(
      () => api.get('/v1/users/me'),
      (r) => r.body.data.billing_period_invocations === 4,
      { what: 'four counted invocations' },
    );
  });
});

describe.each(DIALECTS)('compute billing on %s', (dialect) => {
  it('bills every short run its fraction of a millisecond of compute, not each batch its rounded compute', async () => {
    const server = await startTestServer(dialect);
    onTestFinished(() => server.destroy());
    const api = client(server.url, (await server.createUser({ plan: 'free' })).apiKey);
    const quick = `module.exports = { name: "Quick", version: "1", props: { http: "$.interface.http" }, async run(e) { this.$emit({ ok: true }); } };`;
    const source = (await api.post('/v1/sources', { component_code: quick })).body.data;
    // The compute each worker call measured, as the runtime gives it to the runner that bills it.
    const runtime = server.running.services.runtime;
    const invoke = runtime.invoke.bind(runtime);
    let measuredMs = 0;
    runtime.invoke = async (...args) => {
      const result = await invoke(...args);
      measuredMs += result.cpuMs;
      return result;
    };
    try {
      // One at a time, so that each batch is one short run: a fraction of a millisecond of CPU, mostly.
      for (let n = 1; n <= 40; n++) {
        expect((await request('POST', source.configured_props.http.endpoint_url, { body: { n } })).status).toBe(200);
        await waitFor(
          () => api.get('/v1/users/me'),
          (r) => r.body.data.daily_invocations_used === n,
          { what: `invocation ${n} billed`, intervalMs: 5 },
        );
      }
    } finally {
      runtime.invoke = invoke;
    }
    const used = (await api.get('/v1/users/me')).body.data.daily_compute_time_used;
    // Whole milliseconds are billed; less than one waits for the account's next run.
    expect(used).toBeLessThanOrEqual(measuredMs);
    expect(used).toBeGreaterThan(measuredMs - 1);
  });
});

describe('compute-time quota', () => {
  it("refuses ingress once the day's compute time is used up", async () => {
    const server = await startTestServer('sqlite', { freeDailyInvocations: 1000, freeDailyComputeMs: 50 });
    try {
      const api = client(server.url, (await server.createUser({ plan: 'free' })).apiKey);
      const source = (await api.post('/v1/sources', { component_code: BUSY })).body.data;
      const url = source.configured_props.http.endpoint_url;
      const refused = await waitFor(
        () => request('POST', url, { body: {} }),
        (r) => r.status === 429,
        { what: 'the compute quota to apply' },
      );
      expect(refused.body.error).toBe('daily compute time quota of 50 ms reached; it resets at 00:00 UTC');
      const me = await api.get('/v1/users/me');
      expect(me.body.data.daily_compute_time_used).toBeGreaterThanOrEqual(50);
    } finally {
      await server.destroy();
    }
  });
});
