// Cron timers across a daylight-saving fall-back: hourly schedules run in both readings of the repeated hour, fixed times once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { ManualClock } from '../../src/lib/clock.js';
import { nextDue } from '../../src/model/schedules.js';

const TICKER = `
module.exports = {
  name: "Ticker",
  version: "0.0.1",
  props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 3600 } } },
  async run(event) {
    this.$emit(event, { summary: "tick " + event.timestamp });
  },
};
`;

const at = (iso: string) => Date.parse(iso);
const NY = 'America/New_York';

describe('cron due times across a fall-back (real croner)', () => {
  const runs = (cron: string, fromIso: string, count: number) => {
    const out: string[] = [];
    let t = at(fromIso);
    for (let i = 0; i < count; i++) out.push(new Date((t = nextDue({ cron, timezone: NY }, t))).toISOString());
    return out;
  };

  it('runs an hourly cron at 01:00 EDT and at 01:00 EST, an hour apart', () => {
    expect(runs('0 * * * *', '2026-11-01T04:30:00Z', 4)).toEqual([
      '2026-11-01T05:00:00.000Z',
      '2026-11-01T06:00:00.000Z',
      '2026-11-01T07:00:00.000Z',
      '2026-11-01T08:00:00.000Z',
    ]);
    expect(runs('*/30 * * * *', '2026-11-01T06:10:00Z', 2)).toEqual(['2026-11-01T06:30:00.000Z', '2026-11-01T07:00:00.000Z']);
  });

  it('runs a daily 01:30 once, also when asked from inside the repeated hour', () => {
    expect(runs('30 1 * * *', '2026-11-01T04:30:00Z', 2)).toEqual(['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z']);
    expect(runs('30 1 * * *', '2026-11-01T06:10:00Z', 1)).toEqual(['2026-11-02T06:30:00.000Z']);
  });

  // croner takes the second reading of a repeated local time east of UTC (the first west of it): the first reading's
  // hour was lost there, and a fixed time ran at its second reading.
  it('runs both readings east of UTC too (Paris, Sydney, and Lord Howe, whose clocks go back half an hour)', () => {
    const inZone = (cron: string, timezone: string, fromIso: string, count: number) => {
      const out: string[] = [];
      let t = at(fromIso);
      for (let i = 0; i < count; i++) out.push(new Date((t = nextDue({ cron, timezone }, t))).toISOString());
      return out;
    };
    // Paris goes back from 03:00 CEST (01:00Z) to 02:00 CET on 25 October 2026: 02:00 CEST is 00:00Z, 02:00 CET 01:00Z.
    expect(inZone('0 * * * *', 'Europe/Paris', '2026-10-24T23:30:00Z', 3)).toEqual([
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T01:00:00.000Z',
      '2026-10-25T02:00:00.000Z',
    ]);
    expect(inZone('0 2 * * *', 'Europe/Paris', '2026-10-24T12:00:00Z', 2)).toEqual(['2026-10-25T00:00:00.000Z', '2026-10-26T01:00:00.000Z']);
    expect(inZone('0 2 * * *', 'Europe/Paris', '2026-10-25T00:00:00Z', 1)).toEqual(['2026-10-26T01:00:00.000Z']);
    // London's repeated hour is 01:00-02:00: 01:00 BST is 00:00Z.
    expect(inZone('*/30 1 * * *', 'Europe/London', '2026-10-24T23:50:00Z', 4)).toEqual([
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T01:00:00.000Z',
      '2026-10-25T01:30:00.000Z',
    ]);
    // Sydney goes back from 03:00 AEDT (16:00Z) to 02:00 AEST on 5 April 2026.
    expect(inZone('0 * * * *', 'Australia/Sydney', '2026-04-04T14:30:00Z', 3)).toEqual([
      '2026-04-04T15:00:00.000Z',
      '2026-04-04T16:00:00.000Z',
      '2026-04-04T17:00:00.000Z',
    ]);
    // Lord Howe goes back from 02:00 (+11, 15:00Z) to 01:30 (+10:30): 01:30 reads at 14:30Z and at 15:00Z.
    expect(inZone('*/30 * * * *', 'Australia/Lord_Howe', '2026-04-04T13:50:00Z', 4)).toEqual([
      '2026-04-04T14:00:00.000Z',
      '2026-04-04T14:30:00.000Z',
      '2026-04-04T15:00:00.000Z',
      '2026-04-04T15:30:00.000Z',
    ]);
    expect(inZone('30 1 * * *', 'Australia/Lord_Howe', '2026-04-04T12:00:00Z', 1)).toEqual(['2026-04-04T14:30:00.000Z']);
  });

  it('leaves the spring-forward gap and zones without daylight saving as they were', () => {
    expect(runs('30 2 * * *', '2026-03-08T05:00:00Z', 2)).toEqual(['2026-03-08T07:30:00.000Z', '2026-03-09T06:30:00.000Z']);
    let t = at('2026-11-01T04:30:00Z');
    const utc: number[] = [];
    for (let i = 0; i < 3; i++) utc.push((t = nextDue({ cron: '0 * * * *' }, t)));
    expect(utc).toEqual([at('2026-11-01T05:00:00Z'), at('2026-11-01T06:00:00Z'), at('2026-11-01T07:00:00Z')]);
  });

  it('runs every time a spring-forward skips an hour later, not only the first of them', () => {
    // 02:00, 02:15, 02:30 and 02:45 do not exist on 8 March: they run at 03:00, 03:15, 03:30 and 03:45 EDT. Only
    // the first ran (croner moves a missing time on to the next one that exists, 03:00, then to the next day).
    expect(runs('*/15 2 * * *', '2026-03-08T05:00:00Z', 5)).toEqual([
      '2026-03-08T07:00:00.000Z',
      '2026-03-08T07:15:00.000Z',
      '2026-03-08T07:30:00.000Z',
      '2026-03-08T07:45:00.000Z',
      '2026-03-09T06:00:00.000Z',
    ]);
    // A skipped time that the cron also runs at an hour later (02:00 at 03:00) runs once.
    expect(runs('0 * * * *', '2026-03-08T05:30:00Z', 3)).toEqual(['2026-03-08T06:00:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-08T08:00:00.000Z']);
    expect(runs('30 2,3 * * *', '2026-03-08T05:00:00Z', 3)).toEqual(['2026-03-08T07:30:00.000Z', '2026-03-09T06:30:00.000Z', '2026-03-09T07:30:00.000Z']);
  });
});

describe.each(DIALECTS)('cron timers across a fall-back on %s', (dialect) => {
  let server: TestServer;
  // Half an hour before 01:00 EDT on the first Sunday of November 2026, when New York falls back from EDT to EST.
  const clock = new ManualClock(at('2026-11-01T04:30:00.000Z'));
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    server = await startTestServer(dialect, { minTimerInterval: 1 }, { clock });
    api = client(server.url, (await server.createUser({ plan: 'paid' })).apiKey);
  });
  afterAll(() => server?.destroy());

  const stamps = async (id: string) =>
    ((await api.get(`/v1/sources/${id}/event_summaries?limit=100`)).body.data as Array<{ event: { timestamp: number } }>)
      .map((e) => e.event.timestamp)
      .reverse();
  const nextDueMs = async (id: string) =>
    Number(
      (await server.running.services.store.db.selectFrom('timers').select('next_due_ms').where('source_id', '=', id).executeTakeFirstOrThrow()).next_due_ms,
    );

  it('fires an hourly cron at each real hour of the repeated one, and a daily 01:30 once', async () => {
    const deploy = async (cron: string) => {
      const res = await api.post('/v1/sources', { component_code: TICKER, configured_props: { timer: { cron, timezone: NY } } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.data.id as string;
    };
    const hourly = await deploy('0 * * * *');
    const daily = await deploy('30 1 * * *');
    const expected: number[] = [];
    for (const hour of ['2026-11-01T05:00:00Z', '2026-11-01T06:00:00Z', '2026-11-01T07:00:00Z']) {
      clock.set(at(hour));
      expected.push(at(hour) / 1000);
      await waitFor(
        // The scheduler re-arms on the clock after each look; a still clock fires what is armed for now only when moved.
        () => {
          clock.advance(0);
          return stamps(hourly);
        },
        (s) => s.length === expected.length,
        { what: `the hourly run at ${hour}` },
      );
    }
    expect(await stamps(hourly)).toEqual(expected);
    await waitFor(
      () => stamps(daily),
      (s) => s.length > 0,
      { what: 'the daily run' },
    );
    // Run at 01:30 EDT, it is next due tomorrow: 01:30 EST is the same local time again, not a new one.
    expect(await stamps(daily)).toEqual([at('2026-11-01T05:30:00Z') / 1000]);
    expect(await nextDueMs(daily)).toBe(at('2026-11-02T06:30:00Z'));
    expect(await nextDueMs(hourly)).toBe(at('2026-11-01T08:00:00Z'));
  });
});

describe.each(DIALECTS)("a cron timer's echoed interval_seconds on %s", (dialect) => {
  let server: TestServer;
  // Moscow set its clocks back an hour for good at 02:00 on 26 October 2014; it has not changed them since, so no
  // system time after that reads a day of 25 hours there.
  const clock = new ManualClock(at('2014-10-25T06:00:00.000Z'));
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    server = await startTestServer(dialect, { minTimerInterval: 1 }, { clock });
    api = client(server.url, (await server.createUser({ plan: 'paid' })).apiKey);
  });
  afterAll(() => server?.destroy());

  it('is read on the server clock, and counts both readings of a repeated hour', async () => {
    const deploy = async (cron: string, timezone: string) => {
      const res = await api.post('/v1/sources', { component_code: TICKER, configured_props: { timer: { cron, timezone } } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.data as { id: string; configured_props: Record<string, unknown> };
    };
    // 12:00 on the 25th is 08:00Z, on the 26th 09:00Z: 25 hours apart.
    const daily = await deploy('0 12 * * *', 'Europe/Moscow');
    expect(daily.configured_props.timer).toEqual({ cron: '0 12 * * *', interval_seconds: 90000, timezone: 'Europe/Moscow' });
    expect((await api.get(`/v1/sources/${daily.id}`)).body.data.configured_props.timer).toEqual({
      cron: '0 12 * * *',
      interval_seconds: 90000,
      timezone: 'Europe/Moscow',
    });
    // At 23:30 at +4 the next runs are 00:00 and 01:00 at +4, an hour apart: croner alone, east of UTC, takes the
    // second reading of a repeated local time and skipped 01:00 at +4, which said 7200.
    clock.set(at('2014-10-25T19:30:00.000Z'));
    const beforeIt = await deploy('0 * * * *', 'Europe/Moscow');
    expect(beforeIt.configured_props.timer).toEqual({ cron: '0 * * * *', interval_seconds: 3600, timezone: 'Europe/Moscow' });
    // Half an hour before the repeated 01:00-02:00: the next runs are 01:00 at +4 and 01:00 at +3, an hour apart.
    clock.set(at('2014-10-25T20:30:00.000Z'));
    const hourly = await deploy('0 * * * *', 'Europe/Moscow');
    expect(hourly.configured_props.timer).toEqual({ cron: '0 * * * *', interval_seconds: 3600, timezone: 'Europe/Moscow' });
  });
});
