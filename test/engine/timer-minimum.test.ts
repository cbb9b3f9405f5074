// A --min-timer-interval raised after timers were deployed: their sources can still be switched off, on and renamed.
import { afterAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';

const TICKER = `module.exports = { name: "Ticker", version: "1", props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 3600 } } }, async run(e) { this.$emit(e); } };`;

describe.each(DIALECTS)('a raised --min-timer-interval on %s', (dialect) => {
  const servers: TestServer[] = [];
  afterAll(async () => {
    for (const server of servers.reverse()) await server.destroy();
  });

  it('keeps a schedule stored before it through a switch-off, a switch-on and a rename, and holds a new one to it', async () => {
    const before = await startTestServer(dialect, { minTimerInterval: 1 });
    servers.push(before);
    const key = (await before.createUser({ plan: 'paid' })).apiKey;
    const deployed = await client(before.url, key).post('/v1/sources', { component_code: TICKER, configured_props: { timer: { intervalSeconds: 20 } } });
    expect(deployed.status).toBe(200);
    const id: string = deployed.body.data.id;
    await before.stop();

    const after = await startTestServer(dialect, { minTimerInterval: 60, dataDir: before.dataDir, databaseUrl: before.databaseUrl });
    servers.push(after);
    const api = client(after.url, key);
    const kept = { cron: null, interval_seconds: 20 };
    for (const change of [{ active: false }, { active: true }, { name: 'renamed' }]) {
      const res = await api.patch(`/v1/sources/${id}`, change);
      expect([res.status, res.body.data?.configured_props]).toEqual([200, { timer: kept }]);
    }
    expect((await api.get(`/v1/sources/${id}`)).body.data).toMatchObject({ active: true, name: 'renamed', configured_props: { timer: kept } });
    const faster = await api.patch(`/v1/sources/${id}`, { configured_props: { timer: { intervalSeconds: 30 } } });
    expect([faster.status, faster.body.details]).toEqual([422, [{ prop: 'timer', message: 'intervalSeconds must be at least 60, got 30' }]]);
    const fresh = await api.post('/v1/sources', { component_code: TICKER, configured_props: { timer: { intervalSeconds: 20 } } });
    expect([fresh.status, fresh.body.details]).toEqual([422, [{ prop: 'timer', message: 'intervalSeconds must be at least 60, got 20' }]]);
  });
  it("keeps a workflow's timer trigger stored before it when the same trigger is sent again, and holds a new one to it", async () => {
    const before = await startTestServer(dialect, { minTimerInterval: 1 });
    servers.push(before);
    const key = (await before.createUser({ plan: 'paid' })).apiKey;
    const steps = [{ name: 'echo', component_code: 'export default { async run({ steps }) { return steps.trigger.event } }' }];
    const created = await client(before.url, key).post('/v1/workflows', { name: 'ticks', trigger: { type: 'timer', interval_seconds: 20 }, steps });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id: string = created.body.data.id;
    await before.stop();

    const after = await startTestServer(dialect, { minTimerInterval: 60, dataDir: before.dataDir, databaseUrl: before.databaseUrl });
    servers.push(after);
    const api = client(after.url, key);
    // What a GET returns sent back (as a workflow file deployed again does) keeps the stored schedule.
    const read = (await api.get(`/v1/workflows/${id}`)).body.data;
    const again = await api.put(`/v1/workflows/${id}`, { name: 'renamed', trigger: read.trigger, steps: read.steps });
    expect([again.status, again.body.data?.trigger]).toEqual([200, { type: 'timer', interval_seconds: 20 }]);
    const faster = await api.put(`/v1/workflows/${id}`, { trigger: { type: 'timer', interval_seconds: 30 } });
    expect([faster.status, faster.body]).toEqual([
      400,
      { error: 'invalid timer trigger: interval_seconds must be at least 60, got 30', code: 'invalid_request' },
    ]);
    expect((await api.get(`/v1/workflows/${id}`)).body.data).toMatchObject({ name: 'renamed', trigger: { type: 'timer', interval_seconds: 20 } });
  });
});
