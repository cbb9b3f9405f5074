// Timer interface: interval and cron schedules, each due time once, skip rather than stack, one catch-up run.
import { Cron } from 'croner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';
import { openStore } from '../../src/store/database.js';
import { waitFor } from '../helpers/wait.js';

/** A timer source whose run emits its event, optionally taking `holdMs` first. */
function timerSource(timer: object, holdMs = 0, legacy = false): string {
  const prop = legacy ? `{ type: "$.interface.timer", ...${JSON.stringify(timer)} }` : `{ type: "$.interface.timer", default: ${JSON.stringify(timer)} }`;
  return `
module.exports = {
  name: "Ticker",
  version: "0.0.1",
  props: { timer: ${prop} },
  async run(event) {
    console.log("start", event.timestamp);
    ${holdMs ? `await new Promise((r) => setTimeout(r, ${holdMs}));` : ''}
    this.$emit(event, { summary: "tick " + event.timestamp });
  },
};
`;
}

describe.each(DIALECTS)('timers on %s', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  let key: string;

  beforeAll(async () => {
    server = await startTestServer(dialect, { minTimerInterval: 1 });
    key = (await server.createUser({ plan: 'paid' })).apiKey;
    api = client(server.url, key);
  });
  afterAll(() => server?.destroy());

  const db = () => server.running.services.store.db;
  const timerRow = (sourceId: string) => db().selectFrom('timers').selectAll().where('source_id', '=', sourceId).executeTakeFirst();
  const events = async (id: string) =>
    (await api.get(`/v1/sources/${id}/event_summaries?limit=100`)).body.data as Array<{
      event: { timestamp: number; interval_seconds: number | null; cron: string | null };
    }>;

  async function deploy(code: string, props: object = {}): Promise<string> {
    const res = await api.post('/v1/sources', { component_code: code, configured_props: props });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data.id;
  }

  it('fires an interval timer once per due time with the spec event', async () => {
    const id = await deploy(timerSource({ intervalSeconds: 1 }));
    const fired = await waitFor(
      () => events(id),
      (e) => e.length >= 3,
      { what: 'three ticks' },
    );
    const oldestFirst = [...fired].reverse();
    expect(oldestFirst[0]!.event).toEqual({ timestamp: expect.any(Number), interval_seconds: 1, cron: null });
    const stamps = oldestFirst.map((e) => e.event.timestamp);
    // Each due time fires once: never the same due time twice. A due time that falls while the previous run is still
    // queued is skipped (a busy machine may take over a second), so a gap may be two intervals, never less than one.
    for (let i = 1; i < stamps.length; i++) expect(stamps[i]! - stamps[i - 1]!).toBeGreaterThanOrEqual(1);
    await api.delete(`/v1/sources/${id}`);
    expect(await timerRow(id)).toBeUndefined();
  });

  it("takes the schedule from configured_props over the default, and from an older component's prop", async () => {
    const configured = await deploy(timerSource({ intervalSeconds: 3600 }), { timer: { intervalSeconds: 7200 } });
    expect(JSON.parse((await timerRow(configured))!.schedule)).toEqual({ intervalSeconds: 7200 });
    const legacy = await deploy(timerSource({ intervalSeconds: 1800 }, 0, true));
    expect(JSON.parse((await timerRow(legacy))!.schedule)).toEqual({ intervalSeconds: 1800 });
    // The registry's polling sources: `static: { intervalSeconds }` on the prop, no default and no configured value.
    const fixed = timerSource({}).replace('default: {}', 'static: { intervalSeconds: 15 * 60 }');
    const staticTimer = await deploy(fixed);
    expect(JSON.parse((await timerRow(staticTimer))!.schedule)).toEqual({ intervalSeconds: 900 });
    const saved = await api.post('/v1/components', { component_code: fixed });
    expect(saved.body.data.configurable_props).toEqual([{ name: 'timer', type: '$.interface.timer', default: { intervalSeconds: 900 } }]);
  });

  it('stops firing while inactive and re-schedules at once on update', async () => {
    const id = await deploy(timerSource({ intervalSeconds: 3600 }));
    const before = (await timerRow(id))!;
    expect(Number(before.next_due_ms)).toBeGreaterThan(Date.now() + 3500_000);
    await api.patch(`/v1/sources/${id}`, { active: false });
    expect(await timerRow(id)).toBeUndefined();
    await api.patch(`/v1/sources/${id}`, { active: true, configured_props: { timer: { intervalSeconds: 1 } } });
    const after = (await timerRow(id))!;
    expect(Number(after.next_due_ms)).toBeLessThanOrEqual(Date.now() + 1000);
    await waitFor(
      () => events(id),
      (e) => e.length >= 1,
      { what: 'a tick after the update' },
    );
  });

  it('keeps the next due time through an update that leaves the schedule as it was', async () => {
    const id = await deploy(timerSource({ intervalSeconds: 3600 }));
    const due = Number((await timerRow(id))!.next_due_ms);
    const renamed = await api.patch(`/v1/sources/${id}`, { name: 'renamed ticker' });
    expect(renamed.status).toBe(200);
    expect(Number((await timerRow(id))!.next_due_ms)).toBe(due);
    const replaced = await api.put(`/v1/sources/${id}`, { component_code: timerSource({ intervalSeconds: 3600 }, 1) });
    expect(replaced.status).toBe(200);
    expect(Number((await timerRow(id))!.next_due_ms)).toBe(due);
    // A new schedule is a new timer: due one interval from the update.
    await api.patch(`/v1/sources/${id}`, { configured_props: { timer: { intervalSeconds: 7200 } } });
    expect(Number((await timerRow(id))!.next_due_ms)).toBeGreaterThan(due);
    await api.delete(`/v1/sources/${id}`);
  });

  it('schedules cron expressions in UTC or the given timezone', async () => {
    const id = await deploy(timerSource({ cron: '0 9 * * 1' }), { timer: { cron: '0 9 * * 1', timezone: 'America/New_York' } });
    const expected = new Cron('0 9 * * 1', { timezone: 'America/New_York', paused: true }).nextRun()!.getTime();
    expect(Number((await timerRow(id))!.next_due_ms)).toBe(expected);
    const list = await api.get('/v1/users/me/sources?limit=1');
    expect(list.body.data[0].configured_props.timer).toEqual({ cron: '0 9 * * 1', interval_seconds: 604800, timezone: 'America/New_York' });
  });

  it('skips a due time while the previous run is still going, instead of stacking runs', async () => {
    const id = await deploy(timerSource({ intervalSeconds: 1 }, 2500));
    let maxQueued = 0;
    await waitFor(
      async () => {
        const queued = await db().selectFrom('invocations').select('id').where('source_id', '=', id).execute();
        maxQueued = Math.max(maxQueued, queued.length);
        return events(id);
      },
      (e) => e.length >= 2,
      { what: 'two slow ticks', timeoutMs: 30_000 },
    );
    expect(maxQueued).toBe(1);
    const stamps = (await events(id)).map((e) => e.event.timestamp).reverse();
    // Runs take 2.5 s on a 1 s interval: due times were skipped, so consecutive runs are more than one interval apart.
    expect(stamps[1]! - stamps[0]!).toBeGreaterThan(1);
    await api.delete(`/v1/sources/${id}`);
  });

  it('skips a timer prop only while its own run is pending: a busy timer prop does not starve another one', async () => {
    // `busy` fires every second and each of its runs takes 3 s; `other` fires every 2 s and returns at once.
    const code = `
module.exports = {
  name: "Two timers",
  version: "0.0.1",
  props: { busy: { type: "$.interface.timer", default: { intervalSeconds: 1 } }, other: { type: "$.interface.timer", default: { intervalSeconds: 2 } } },
  async run(event) {
    if (event.interval_seconds === 1) await new Promise((r) => setTimeout(r, 3000));
    this.$emit(event, { summary: "tick " + event.interval_seconds });
  },
};
`;
    const id = await deploy(code);
    const queued = async () =>
      (await db().selectFrom('invocations').select(['event', 'created_ms']).where('source_id', '=', id).where('trigger', '=', 'timer').execute()).map((r) => ({
        interval: (JSON.parse(r.event) as { interval_seconds: number }).interval_seconds,
        createdMs: Number(r.created_ms),
      }));
    // The other prop's run is queued while a busy run queued earlier is still pending (the source runs one at a time,
    // so it waits its turn): it was not skipped for a run of another prop. A due time of each claimed together cannot
    // show it, hence "earlier".
    await waitFor(queued, (rows) => rows.some((o) => o.interval === 2 && rows.some((b) => b.interval === 1 && b.createdMs < o.createdMs)), {
      what: "the other prop's run queued behind a pending busy run",
      timeoutMs: 30_000,
    });
    const fired = await waitFor(
      () => events(id),
      (e) => e.filter((x) => x.event.interval_seconds === 2).length >= 2,
      { what: 'two runs of the other prop', timeoutMs: 30_000 },
    );
    expect(fired.some((x) => x.event.interval_seconds === 1)).toBe(true);
    // Still one pending run per prop at most: neither is stacked.
    const pending = await queued();
    expect(pending.filter((r) => r.interval === 1).length).toBeLessThanOrEqual(1);
    expect(pending.filter((r) => r.interval === 2).length).toBeLessThanOrEqual(1);
    await api.delete(`/v1/sources/${id}`);
  });

  it('runs missed due times after downtime as a single catch-up run', async () => {
    // Hourly, so that no regular due time falls between the catch-up run and the reads below.
    const id = await deploy(timerSource({ intervalSeconds: 3600 }));
    await server.stop();
    // Pretend the service was down for three hours: three due times were missed, the next is a minute away.
    const missedSince = Date.now() - 3 * 3_600_000 + 60_000;
    const offline = await openStore({ dataDir: server.dataDir, databaseUrl: server.databaseUrl, migrate: false });
    await offline.db.updateTable('timers').set({ next_due_ms: missedSince }).where('source_id', '=', id).execute();
    await offline.close();
    await server.restart();
    api = client(server.url, key);
    await waitFor(
      () => events(id),
      (e) => e.length >= 1,
      { what: 'the catch-up run' },
    );
    const row = (await timerRow(id))!;
    expect(Number(row.next_due_ms)).toBeGreaterThan(Date.now() - 100);
    // The next due time keeps the schedule's phase.
    expect(Number(row.next_due_ms) - missedSince).toBe(3 * 3_600_000);
    const fired = await events(id);
    expect(fired).toHaveLength(1);
    expect(fired[0]!.event.timestamp).toBe(Math.floor(missedSince / 1000));
  });
});
