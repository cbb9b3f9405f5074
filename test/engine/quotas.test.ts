// Quotas: free-plan daily invocations and compute time counted and enforced; paid-plan invocations counted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client, request } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { secondsUntilUtcMidnight } from '../../src/model/quotas.js';

const BUSY = `
module.exports = {
  name: "Busy",
  version: "0.0.1",
  props: { http: "$.interface.http" },
  async run(event) {
    const until = Date.now() + 30;
    while (Date.now() < until) {}
    this.$emit(event.body);
  },
};
`;

describe.each(DIALECTS)('quotas on %s', (dialect) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(dialect, { freeDailyInvocations: 2, freeDailyComputeMs: 1_000_000, minTimerInterval: 1 });
  });
  afterAll(() => server?.destroy());

  async function deploy(api: ReturnType<typeof client>, body: object) {
    const res = await api.post('/v1/sources', body);
    expect(res.status).toBe(200);
    return res.body.data;
  }

  it('counts a free account\'s invocations and compute time, and refuses ingress over quota with 429', async () => {
    const api = client(server.url, (await server.createUser({ plan: 'free' })).apiKey);
    const source = await deploy(api, { component_code: BUSY });
    const url = source.configured_props.http.endpoint_url;
    for (const n of [1, 2]) expect((await request('POST', url, { body: { n } })).status).toBe(200);
    const me = await waitFor(() => api.get('/v1/users/me'), (r) => r.body.data.daily_invocations_used === 2, { what: 'two counted invocations' });
    expect(me.body.data.daily_compute_time_used).toBeGreaterThanOrEqual(30);
    const refused = await waitFor(() => request('POST', url, { body: { n: 3 } }), (r) => r.status !== 200, { what: 'the quota to apply' });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: 'daily invocation quota of 2 reached; it resets at 00:00 UTC', code: 'quota_exceeded' });
    expect(Number(refused.headers.get('retry-after'))).toBe(secondsUntilUtcMidnight(Date.now()));
    const manual = await api.post(`/v1/sources/${source.id}/run`, {});
    expect(manual.status).toBe(429);
    expect(manual.body.code).toBe('quota_exceeded');
  });

  it('records a quota error on $errors when a timer is due over quota', async () => {
    const api = client(server.url, (await server.createUser({ plan: 'free' })).apiKey);
    const ticker = `module.exports = { name: "T", version: "1", props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 1 } } }, async run(e) { this.$emit(e); } };`;
    const source = await deploy(api, { component_code: ticker });
    const errors = await waitFor(
      () => api.get(`/v1/sources/${source.id}/$errors/event_summaries`),
      (r) => r.body.data?.length >= 1,
      { what: 'a quota error', timeoutMs: 30_000 },
    );
    expect(errors.body.data[0].event.error).toMatchObject({ name: 'QuotaExceededError', code: 'quota_exceeded' });
    expect(errors.body.data[0].event.original_context.trigger).toBe('timer');
    const emitted = await api.get(`/v1/sources/${source.id}/event_summaries`);
    expect(emitted.body.data).toHaveLength(2);
  });

  it('counts a paid account\'s invocations in its billing period without limiting them', async () => {
    const api = client(server.url, (await server.createUser({ plan: 'paid' })).apiKey);
    const source = await deploy(api, { component_code: BUSY });
    for (let n = 0; n < 4; n++) expect((await request('POST', source.configured_props.http.endpoint_url, { body: { n } })).status).toBe(200);
    await waitFor(() => api.get('/v1/users/me'), (r) => r.body.data.billing_period_invocations === 4, { what: 'four counted invocations' });
  });
});

describe('compute-time quota', () => {
  it('refuses ingress once the day\'s compute time is used up', async () => {
    const server = await startTestServer('sqlite', { freeDailyInvocations: 1000, freeDailyComputeMs: 50 });
    try {
      const api = client(server.url, (await server.createUser({ plan: 'free' })).apiKey);
      const source = (await api.post('/v1/sources', { component_code: BUSY })).body.data;
      const url = source.configured_props.http.endpoint_url;
      const refused = await waitFor(() => request('POST', url, { body: {} }), (r) => r.status === 429, { what: 'the compute quota to apply' });
      expect(refused.body.error).toBe('daily compute time quota of 50 ms reached; it resets at 00:00 UTC');
      const me = await api.get('/v1/users/me');
      expect(me.body.data.daily_compute_time_used).toBeGreaterThanOrEqual(50);
    } finally {
      await server.destroy();
    }
  });
});
