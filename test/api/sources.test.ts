// Sources API: deploy, list, update, activate/deactivate, delete, props validation and hooks on each transition.
import path from 'node:path';
import { openSqliteFile } from '../../src/store/sqlite-file.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';
import { HOOKS_SOURCE, PROPS_SOURCE, emitterSource } from '../helpers/components.js';

const SOURCE_KEYS = ['active', 'component_id', 'configured_props', 'created_at', 'id', 'name', 'name_slug', 'updated_at', 'user_id'];

describe.each(DIALECTS)('sources API on %s', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  let userId: string;

  beforeAll(async () => {
    server = await startTestServer(dialect, { minTimerInterval: 30 });
    const user = await server.createUser();
    userId = user.id;
    api = client(server.url, user.apiKey);
  });
  afterAll(() => server?.destroy());

  /** The hooks recorded by HOOKS_SOURCE, read through a manual run. */
  async function recordedCalls(sourceId: string): Promise<string[]> {
    const db = await server.running.services.store.db
      .selectFrom('source_db')
      .select('value')
      .where('source_id', '=', sourceId)
      .where('key', '=', 'calls')
      .executeTakeFirst();
    return db ? JSON.parse(db.value) : [];
  }

  it('deploys from component_code with the spec shape, active, named after the component', async () => {
    const res = await api.post('/v1/sources', { component_code: emitterSource() });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.data).sort()).toEqual(SOURCE_KEYS);
    expect(res.body.data).toMatchObject({ user_id: userId, active: true, name: 'emitter', name_slug: 'emitter', configured_props: {} });
    expect(res.body.data.id).toMatch(/^dc_[0-9a-z]{26}$/);
    expect(res.body.data.component_id).toMatch(/^sc_/);
  });

  it('gives taken names the next free slug', async () => {
    const a = await api.post('/v1/sources', { component_code: emitterSource(), name: 'My Source!' });
    const b = await api.post('/v1/sources', { component_code: emitterSource(), name: 'My Source!' });
    const c = await api.post('/v1/sources', { component_code: emitterSource(), name: 'my source' });
    expect([a.body.data.name_slug, b.body.data.name_slug, c.body.data.name_slug]).toEqual(['my-source', 'my-source-1', 'my-source-2']);
    expect(b.body.data.name).toBe('My Source!');
  });

  it('cuts a long name to a 64-character slug that does not end in a hyphen', async () => {
    // The 64th character is the hyphen between the words: cut there, the slug would end in it.
    const name = `${'a'.repeat(63)} bcd`;
    const a = await api.post('/v1/sources', { component_code: emitterSource(), name });
    const b = await api.post('/v1/sources', { component_code: emitterSource(), name });
    expect([a.status, b.status]).toEqual([200, 200]);
    expect([a.body.data.name_slug, b.body.data.name_slug]).toEqual(['a'.repeat(63), `${'a'.repeat(63)}-1`]);
    // The default name is the component's name slug, cut alike.
    const code = emitterSource().replace('name: "Emitter"', `name: "${'b'.repeat(63)} c"`);
    expect(code).not.toBe(emitterSource());
    const unnamed = await api.post('/v1/sources', { component_code: code });
    expect(unnamed.status).toBe(200);
    expect(unnamed.body.data).toMatchObject({ name: 'b'.repeat(63), name_slug: 'b'.repeat(63) });
  });

  it('deploys from component_id, preferring it over code, and from a registry key', async () => {
    const saved = await api.post('/v1/components', { component_code: emitterSource() });
    const fromId = await api.post('/v1/sources', { component_id: saved.body.data.id, component_code: 'this is not even javascript' });
    expect(fromId.status).toBe(200);
    expect(fromId.body.data.component_id).toBe(saved.body.data.id);
    const fromKey = await api.post('/v1/sources', { key: 'http-new-requests' });
    expect(fromKey.status).toBe(200);
    expect(fromKey.body.data.configured_props.http.endpoint_url).toMatch(new RegExp(`^${server.url}/e/[0-9a-z]{32,}$`));
  });

  it("answers 400 when no component is named, and 404 for another account's component_id", async () => {
    const none = await api.post('/v1/sources', { name: 'x' });
    expect(none.status).toBe(400);
    expect(none.body).toEqual({ error: 'one of component_id, component_code, component_url or key is required', code: 'invalid_request' });
    const other = client(server.url, (await server.createUser()).apiKey);
    const saved = await other.post('/v1/components', { component_code: emitterSource() });
    const res = await api.post('/v1/sources', { component_id: saved.body.data.id });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
  });

  it('answers 400 for a blank component_id, component_code or key on create, PUT and PATCH, whichever field wins, and changes nothing', async () => {
    const saved = (await api.post('/v1/components', { component_code: emitterSource() })).body.data.id;
    const source = (await api.post('/v1/sources', { component_id: saved, name: 'blank-fields' })).body.data;
    const before = await api.get('/v1/users/me/sources?limit=100');
    const cases: Array<[Record<string, string>, string]> = [
      [{ component_id: '' }, 'component_id is empty'],
      [{ component_id: '  ' }, 'component_id is empty'],
      [{ key: '' }, 'key is empty'],
      [{ component_code: ' \n' }, 'component_code is empty'],
      [{ component_id: saved, key: '' }, 'key is empty'],
      [{ component_id: saved, component_code: '' }, 'component_code is empty'],
    ];
    for (const [fields, error] of cases) {
      for (const [method, send] of [
        ['POST', (body: object) => api.post('/v1/sources', body)],
        ['PUT', (body: object) => api.put(`/v1/sources/${source.id}`, body)],
        ['PATCH', (body: object) => api.patch(`/v1/sources/${source.id}`, body)],
      ] as const) {
        const res = await send({ ...fields, name: 'renamed' });
        expect({ status: res.status, body: res.body }, `${method} ${JSON.stringify(fields)}`).toEqual({
          status: 400,
          body: { error, code: 'invalid_request' },
        });
      }
    }
    expect((await api.get('/v1/users/me/sources?limit=100')).body).toEqual(before.body);
  });

  it('refuses active: false on create rather than ignoring it, and creates nothing', async () => {
    const before = await api.get('/v1/users/me/sources?limit=100');
    const refused = await api.post('/v1/sources', { component_code: emitterSource(), active: false });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      error: 'invalid body: active must be true',
      code: 'invalid_request',
      details: [{ field: 'active', in: 'body', message: 'must be true' }],
    });
    for (const active of ['no', 0, null]) {
      const res = await api.post('/v1/sources', { component_code: emitterSource(), active });
      expect(res.status, JSON.stringify(active)).toBe(400);
      // The one value it may be says it all, not also "must be boolean".
      expect(res.body.error, JSON.stringify(active)).toBe('invalid body: active must be true');
    }
    expect((await api.get('/v1/users/me/sources?limit=100')).body.page_info.total_count).toBe(before.body.page_info.total_count);
    const created = await api.post('/v1/sources', { component_code: emitterSource(), active: true });
    expect(created.status).toBe(200);
    expect(created.body.data.active).toBe(true);
  });

  it('validates props, lists every problem in one 422, and stores nothing', async () => {
    const before = await api.get('/v1/users/me/sources?limit=100');
    const res = await api.post('/v1/sources', {
      component_code: PROPS_SOURCE,
      configured_props: { count: 11, color: 'purple', enabled: 'yes', tags: ['a', 1], unknown: 1, timer: { intervalSeconds: 5 } },
    });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('props_invalid');
    const byProp = Object.fromEntries(res.body.details.map((d: { prop: string; message: string }) => [d.prop, d.message]));
    expect(byProp).toEqual({
      unknown: 'is not a prop of this component',
      timer: 'intervalSeconds must be at least 30, got 5',
      token: 'is required',
      count: 'must be at most 10, got 11',
      color: 'must be one of "red", "green", "blue", got "purple"',
      enabled: 'must be a boolean, got a string',
      tags: 'item 1 must be a string, got a number',
    });
    const after = await api.get('/v1/users/me/sources?limit=100');
    expect(after.body.page_info.total_count).toBe(before.body.page_info.total_count);
  });

  it('refuses a value for a $.service.db or $.interface.http prop other than the HTTP echo with 422, rather than dropping it', async () => {
    const code = 'module.exports = { name: "db-http", version: "1", props: { db: "$.service.db", http: "$.interface.http" }, async run() {} };';
    const before = await api.get('/v1/users/me/sources?limit=100');
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ db: 5 }, 'db', 'is a $.service.db, which the component keeps for itself: it takes no value'],
      [{ db: {} }, 'db', 'is a $.service.db, which the component keeps for itself: it takes no value'],
      [{ http: 'abc' }, 'http', 'is an HTTP interface, whose endpoint is made for the source: it takes no value, or its echo { endpoint_url }'],
      [{ http: { endpoint_url: 5 } }, 'http', 'is an HTTP interface, whose endpoint is made for the source: it takes no value, or its echo { endpoint_url }'],
      [{ http: { customResponse: true } }, 'http', 'takes { endpoint_url } (its echo) only, not the field "customResponse"'],
    ];
    for (const [configured_props, prop, message] of cases) {
      const res = await api.post('/v1/sources', { component_code: code, configured_props });
      expect({ status: res.status, body: res.body }, JSON.stringify(configured_props)).toEqual({
        status: 422,
        body: { error: `invalid configured_props: ${prop} ${message}`, code: 'props_invalid', details: [{ prop, message }] },
      });
    }
    expect((await api.get('/v1/users/me/sources?limit=100')).body).toEqual(before.body);
    const created = await api.post('/v1/sources', { component_code: code, configured_props: { db: null, http: null } });
    expect(created.status).toBe(200);
    const { id, configured_props } = created.body.data;
    const echoed = await api.patch(`/v1/sources/${id}`, { configured_props });
    expect(echoed.status).toBe(200);
    expect(echoed.body.data.configured_props).toEqual(configured_props);
  });

  it("shows an alert prop (the reference registry's note to whoever configures) and takes no value for it", async () => {
    const code = `export default {
      name: "Noted", version: "0.1.0",
      props: {
        db: "$.service.db",
        setup: { type: "alert", alertType: "warning", content: "Create an API key in Acme first." },
        plain: { type: "alert", alertType: "notice hidden", content: "An unknown kind." },
        greeting: { type: "string" },
      },
      async run() { this.$emit({ setup: this.setup === undefined ? "unset" : this.setup, greeting: this.greeting }); },
    };`;
    const component = await api.post('/v1/components', { component_code: code });
    expect(component.status).toBe(200);
    expect(component.body.data.configurable_props.slice(1, 3)).toEqual([
      { name: 'setup', type: 'alert', alertType: 'warning', content: 'Create an API key in Acme first.', optional: true },
      // A kind other than info, neutral, warning or error is read as info.
      { name: 'plain', type: 'alert', alertType: 'info', content: 'An unknown kind.', optional: true },
    ]);
    const refused = await api.post('/v1/sources', { component_id: component.body.data.id, configured_props: { greeting: 'hi', setup: 'yes' } });
    expect(refused.status).toBe(422);
    expect(refused.body.details).toEqual([{ prop: 'setup', message: 'is an alert, a note for whoever configures the component: it takes no value' }]);
    const source = await api.post('/v1/sources', { component_id: component.body.data.id, configured_props: { greeting: 'hi' } });
    expect(source.status, JSON.stringify(source.body)).toBe(200);
    expect(source.body.data.configured_props).toEqual({ greeting: 'hi' });
    expect((await api.post(`/v1/sources/${source.body.data.id}/run`, {})).status).toBe(202);
    const { waitFor } = await import('../helpers/wait.js');
    const events = await waitFor(
      () => api.get(`/v1/sources/${source.body.data.id}/event_summaries?expand=event`),
      (r) => r.body.data.length === 1,
      { what: 'the run of the source with alerts' },
    );
    expect(events.body.data[0].event).toEqual({ setup: 'unset', greeting: 'hi' });
  });

  it('never echoes a secret prop value in a 422', async () => {
    const props = '{ pin: { type: "string", secret: true, options: ["a", "b"] }, code: { type: "integer", secret: true, max: 10 } }';
    const code = `module.exports = { name: "s", version: "1", props: ${props}, async run() {} };`;
    const res = await api.post('/v1/sources', { component_code: code, configured_props: { pin: 'hunter2', code: 31337 } });
    expect(res.status).toBe(422);
    expect(res.body.details).toEqual([
      { prop: 'pin', message: 'must be one of "a", "b"' },
      { prop: 'code', message: 'must be at most 10' },
    ]);
    expect(JSON.stringify(res.body)).not.toMatch(/hunter2|31337/);
  });

  it('rejects an invalid cron expression with 422', async () => {
    const res = await api.post('/v1/sources', {
      component_code: PROPS_SOURCE,
      configured_props: { token: 't', count: 1, color: 'red', timer: { cron: '61 * * * *' } },
    });
    expect(res.status).toBe(422);
    expect(res.body.details[0].prop).toBe('timer');
  });

  it('rejects a cron expression that never comes due (February 30th) with 422, and creates nothing', async () => {
    const before = await api.get('/v1/users/me/sources?limit=100');
    for (const timer of [{ cron: '0 12 31 4,6,9,11 *', timezone: 'Europe/Paris' }, { cron: '0 0 30 2 *' }]) {
      const res = await api.post('/v1/sources', { component_code: PROPS_SOURCE, configured_props: { token: 't', count: 1, color: 'red', timer } });
      expect([res.status, res.body.code, res.body.details]).toEqual([
        422,
        'props_invalid',
        [{ prop: 'timer', message: `cron expression ${JSON.stringify(timer.cron)} never comes due` }],
      ]);
    }
    expect((await api.get('/v1/users/me/sources?limit=100')).body.page_info.total_count).toBe(before.body.page_info.total_count);
    const workflow = await api.post('/v1/workflows', {
      name: 'never',
      trigger: { type: 'timer', cron: '0 0 30 2 *' },
      steps: [{ name: 'a', component_code: 'export default defineComponent({ async run() {} })' }],
    });
    expect([workflow.status, workflow.body]).toEqual([
      400,
      { error: 'invalid timer trigger: cron expression "0 0 30 2 *" never comes due', code: 'invalid_request' },
    ]);
  });

  it('rejects a cron expression with "?", which croner would read as the day it parses it rather than any day', async () => {
    const before = await api.get('/v1/users/me/sources?limit=100');
    for (const cron of ['0 0 ? * *', '0 9 ? * 1', '0 9 * * ?']) {
      const res = await api.post('/v1/sources', { component_code: PROPS_SOURCE, configured_props: { token: 't', count: 1, color: 'red', timer: { cron } } });
      expect([res.status, res.body.code, res.body.details]).toEqual([
        422,
        'props_invalid',
        [{ prop: 'timer', message: `cron expression ${JSON.stringify(cron)} uses "?": write * for any value` }],
      ]);
    }
    expect((await api.get('/v1/users/me/sources?limit=100')).body.page_info.total_count).toBe(before.body.page_info.total_count);
    const workflow = await api.post('/v1/workflows', {
      name: 'quartz',
      trigger: { type: 'timer', cron: '0 9 ? * 1' },
      steps: [{ name: 'a', component_code: 'export default defineComponent({ async run() {} })' }],
    });
    expect([workflow.status, workflow.body]).toEqual([
      400,
      { error: 'invalid timer trigger: cron expression "0 9 ? * 1" uses "?": write * for any value', code: 'invalid_request' },
    ]);
  });

  it("rejects a configured timer value that is no schedule with 422, rather than taking the prop's default", async () => {
    const before = await api.get('/v1/users/me/sources?limit=100');
    for (const timer of [60, 'every minute', [60], { intervalSecs: 60 }, { timezone: 'Europe/Paris' }, {}]) {
      const res = await api.post('/v1/sources', { component_code: PROPS_SOURCE, configured_props: { token: 't', count: 1, color: 'red', timer } });
      expect([res.status, res.body], JSON.stringify(timer)).toEqual([
        422,
        {
          error: 'invalid configured_props: timer must be { intervalSeconds } or { cron } (with an optional timezone)',
          code: 'props_invalid',
          details: [{ prop: 'timer', message: 'must be { intervalSeconds } or { cron } (with an optional timezone)' }],
        },
      ]);
    }
    expect((await api.get('/v1/users/me/sources?limit=100')).body.page_info.total_count).toBe(before.body.page_info.total_count);
    // Left out, or null, the prop's default applies.
    for (const configured of [{}, { timer: null }]) {
      const res = await api.post('/v1/sources', { component_code: PROPS_SOURCE, configured_props: { token: 't', count: 1, color: 'red', ...configured } });
      expect(res.status).toBe(200);
      expect(res.body.data.configured_props.timer).toEqual({ cron: null, interval_seconds: 60 });
    }
  });

  it('rejects a configured timer with both intervalSeconds and cron with 422 rather than taking one, on create and update', async () => {
    const before = await api.get('/v1/users/me/sources?limit=100');
    const both = { intervalSeconds: 3600, cron: '0 9 * * 1' };
    const refusal = {
      error: 'invalid configured_props: timer takes { intervalSeconds } or { cron }, not both',
      code: 'props_invalid',
      details: [{ prop: 'timer', message: 'takes { intervalSeconds } or { cron }, not both' }],
    };
    const created = await api.post('/v1/sources', { component_code: PROPS_SOURCE, configured_props: { token: 't', count: 1, color: 'red', timer: both } });
    expect([created.status, created.body]).toEqual([422, refusal]);
    expect((await api.get('/v1/users/me/sources?limit=100')).body.page_info.total_count).toBe(before.body.page_info.total_count);
    const source = await api.post('/v1/sources', { component_code: PROPS_SOURCE, configured_props: { token: 't', count: 1, color: 'red' } });
    expect(source.status).toBe(200);
    const patched = await api.patch(`/v1/sources/${source.body.data.id}`, { configured_props: { token: 't', count: 1, color: 'red', timer: both } });
    expect([patched.status, patched.body]).toEqual([422, refusal]);
    // What a GET returns (a cron beside the interval derived from it), and a cron beside a null interval, pass.
    for (const timer of [
      { cron: '0 9 * * 1', interval_seconds: 604800 },
      { cron: '0 9 * * 1', intervalSeconds: null },
    ]) {
      const res = await api.patch(`/v1/sources/${source.body.data.id}`, { configured_props: { token: 't', count: 1, color: 'red', timer } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data.configured_props.timer).toEqual({ cron: '0 9 * * 1', interval_seconds: 604800 });
    }
  });

  it('rejects a configured timer with two different intervals (intervalSeconds and interval_seconds) with 422 rather than taking one', async () => {
    const timer = { intervalSeconds: 60, interval_seconds: 3600 };
    const refusal = {
      error: 'invalid configured_props: timer takes intervalSeconds or interval_seconds, not two different intervals',
      code: 'props_invalid',
      details: [{ prop: 'timer', message: 'takes intervalSeconds or interval_seconds, not two different intervals' }],
    };
    const created = await api.post('/v1/sources', { component_code: PROPS_SOURCE, configured_props: { token: 't', count: 1, color: 'red', timer } });
    expect([created.status, created.body]).toEqual([422, refusal]);
    // The same interval under both names is one schedule.
    const same = await api.post('/v1/sources', {
      component_code: PROPS_SOURCE,
      configured_props: { token: 't', count: 1, color: 'red', timer: { intervalSeconds: 3600, interval_seconds: 3600 } },
    });
    expect([same.status, same.body.data?.configured_props.timer]).toEqual([200, { cron: null, interval_seconds: 3600 }]);
    const patched = await api.patch(`/v1/sources/${same.body.data.id}`, { configured_props: { token: 't', count: 1, color: 'red', timer } });
    expect([patched.status, patched.body]).toEqual([422, refusal]);
  });

  it('rejects an interval longer than 365 days with 422, on create and update, and changes nothing', async () => {
    const before = await api.get('/v1/users/me/sources?limit=100');
    const refusal = (interval: number) => ({
      error: `invalid configured_props: timer intervalSeconds must be at most 31536000 (365 days), got ${interval}`,
      code: 'props_invalid',
      details: [{ prop: 'timer', message: `intervalSeconds must be at most 31536000 (365 days), got ${interval}` }],
    });
    for (const interval of [1e15, 31_536_001]) {
      const res = await api.post('/v1/sources', {
        component_code: PROPS_SOURCE,
        configured_props: { token: 't', count: 1, color: 'red', timer: { intervalSeconds: interval } },
      });
      expect([res.status, res.body]).toEqual([422, refusal(interval)]);
    }
    expect((await api.get('/v1/users/me/sources?limit=100')).body.page_info.total_count).toBe(before.body.page_info.total_count);
    const yearly = await api.post('/v1/sources', {
      component_code: PROPS_SOURCE,
      configured_props: { token: 't', count: 1, color: 'red', timer: { intervalSeconds: 31_536_000 } },
    });
    expect(yearly.status, JSON.stringify(yearly.body)).toBe(200);
    const patched = await api.patch(`/v1/sources/${yearly.body.data.id}`, {
      configured_props: { token: 't', count: 1, color: 'red', timer: { intervalSeconds: 1e15 } },
    });
    expect([patched.status, patched.body]).toEqual([422, refusal(1e15)]);
    expect((await api.get(`/v1/sources/${yearly.body.data.id}`)).body.data.configured_props.timer).toEqual({ cron: null, interval_seconds: 31_536_000 });
  });

  it('rejects a time zone nobody has with 422, and any time zone beside an interval, and creates nothing', async () => {
    const before = await api.get('/v1/users/me/sources?limit=100');
    const res = await api.post('/v1/sources', {
      component_code: PROPS_SOURCE,
      configured_props: { token: 't', count: 1, color: 'red', timer: { cron: '0 9 * * *', timezone: 'Mars/Olympus' } },
    });
    expect([res.status, res.body.code, res.body.details]).toEqual([
      422,
      'props_invalid',
      [{ prop: 'timer', message: 'timezone must be an IANA time zone such as "Europe/Paris", got "Mars/Olympus"' }],
    ]);
    // An interval runs every N seconds in any zone: a time zone beside it would be silently ignored, so it is refused.
    for (const timezone of ['Nowhere/Land', 'Europe/Paris']) {
      const interval = await api.post('/v1/sources', {
        component_code: PROPS_SOURCE,
        configured_props: { token: 't', count: 1, color: 'red', timer: { intervalSeconds: 60, timezone } },
      });
      expect([interval.status, interval.body.code, interval.body.details]).toEqual([
        422,
        'props_invalid',
        [
          {
            prop: 'timer',
            message: 'timezone applies to a cron schedule only: an intervalSeconds timer runs every N seconds in any zone, so leave timezone out',
          },
        ],
      ]);
    }
    const after = await api.get('/v1/users/me/sources?limit=100');
    expect(after.body.page_info.total_count).toBe(before.body.page_info.total_count);
    const paris = await api.post('/v1/sources', {
      component_code: PROPS_SOURCE,
      configured_props: { token: 't', count: 1, color: 'red', timer: { cron: '0 9 * * *', timezone: 'Europe/Paris' } },
    });
    expect(paris.status).toBe(200);
    const updated = await api.patch(`/v1/sources/${paris.body.data.id}`, { configured_props: { timer: { cron: '*/5 * * * *', timezone: 'Mars/Olympus' } } });
    expect(updated.status).toBe(422);
    expect(updated.body.code).toBe('props_invalid');
  });

  it("keeps a source's endpoint for life: code without an HTTP prop answers 404 on it, and code with one again serves the same URL", async () => {
    const http = 'export default { name: "hooked", version: "1", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body) } }';
    const created = await api.post('/v1/sources', { component_code: http });
    expect([created.status, created.body.error]).toEqual([200, undefined]);
    const id = created.body.data.id;
    const url: string = created.body.data.configured_props.http.endpoint_url;
    expect((await fetch(url, { method: 'POST' })).status).toBe(200);
    const timerOnly = await api.put(`/v1/sources/${id}`, { component_code: emitterSource() });
    expect([timerOnly.status, timerOnly.body.data.configured_props.http]).toEqual([200, undefined]);
    const gone = await fetch(url, { method: 'POST' });
    expect([gone.status, ((await gone.json()) as { code: string }).code]).toEqual([404, 'not_found']);
    const back = await api.put(`/v1/sources/${id}`, { component_code: http });
    expect([back.status, back.body.data.configured_props.http.endpoint_url]).toEqual([200, url]);
    expect((await fetch(url, { method: 'POST' })).status).toBe(200);
  });

  it('echoes timers, HTTP endpoints and secrets as the spec says, and keeps secrets encrypted at rest', async () => {
    const res = await api.post('/v1/sources', {
      component_code: PROPS_SOURCE,
      configured_props: { token: 'sk-very-secret', count: 3, color: 'blue', tags: ['x'] },
    });
    expect(res.status).toBe(200);
    const props = res.body.data.configured_props;
    expect(props).toEqual({
      http: { endpoint_url: expect.stringMatching(new RegExp(`^${server.url}/e/`)) },
      timer: { cron: null, interval_seconds: 60 },
      token: '********',
      count: 3,
      color: 'blue',
      tags: ['x'],
      greeting: 'hello',
    });
    expect(JSON.stringify(await api.get('/v1/users/me/sources?limit=100'))).not.toContain('sk-very-secret');
    if (dialect === 'sqlite') {
      const db = openSqliteFile(path.join(server.dataDir, 'tributary.db'), { readonly: true });
      const row = db.prepare('select configured_props from sources where id = ?').get(res.body.data.id) as { configured_props: string };
      db.close();
      expect(row.configured_props).not.toContain('sk-very-secret');
      expect(JSON.parse(row.configured_props).token).toMatch(/^enc:v2:/);
    }
    // Sending the placeholder back keeps the secret; a cron timer echoes its expression.
    const updated = await api.patch(`/v1/sources/${res.body.data.id}`, {
      configured_props: { token: '********', count: 4, color: 'red', timer: { cron: '*/5 * * * *' } },
    });
    expect(updated.status).toBe(200);
    expect(updated.body.data.configured_props.timer).toEqual({ cron: '*/5 * * * *', interval_seconds: 300 });
    expect(updated.body.data.configured_props.http).toEqual(props.http);
    const run = await api.post(`/v1/sources/${res.body.data.id}/run`, {});
    expect(run.status).toBe(202);
    const { waitFor } = await import('../helpers/wait.js');
    const events = await waitFor(
      () => api.get(`/v1/sources/${res.body.data.id}/event_summaries`),
      (r) => r.body.data?.length === 1,
      { what: 'the manual run to emit' },
    );
    expect(events.body.data[0].event).toEqual({ token: 'sk-very-secret', count: 4, greeting: 'hello', endpoint: props.http.endpoint_url });
  });

  it('seals a secret of any type and a secret taken from its default, and keeps each when its echo is sent back', async () => {
    const code =
      'module.exports = { name: "secrets", version: "1", props: { pin: { type: "integer", secret: true }, ' +
      'keys: { type: "string[]", secret: true }, token: { type: "string", secret: true, optional: true, default: "from-default" } }, ' +
      'async run() { this.$emit({ pin: this.pin, keys: this.keys, token: this.token }); } };';
    const res = await api.post('/v1/sources', { component_code: code, configured_props: { pin: 4242, keys: ['k-one'] } });
    expect(res.status).toBe(200);
    expect(res.body.data.configured_props).toEqual({ pin: '********', keys: '********', token: '********' });
    const id = res.body.data.id;
    if (dialect === 'sqlite') {
      const db = openSqliteFile(path.join(server.dataDir, 'tributary.db'), { readonly: true });
      const row = db.prepare('select configured_props from sources where id = ?').get(id) as { configured_props: string };
      db.close();
      expect(row.configured_props).not.toMatch(/4242|k-one|from-default/);
    }
    // What the GET echoes is accepted back, by PATCH and by PUT.
    const patched = await api.patch(`/v1/sources/${id}`, { configured_props: res.body.data.configured_props });
    expect([patched.status, patched.body.data?.configured_props]).toEqual([200, res.body.data.configured_props]);
    const put = await api.put(`/v1/sources/${id}`, { component_id: res.body.data.component_id, configured_props: res.body.data.configured_props });
    expect([put.status, put.body.data?.configured_props]).toEqual([200, res.body.data.configured_props]);
    expect((await api.post(`/v1/sources/${id}/run`, {})).status).toBe(202);
    const { waitFor } = await import('../helpers/wait.js');
    const events = await waitFor(
      () => api.get(`/v1/sources/${id}/event_summaries`),
      (r) => r.body.data?.length === 1,
      { what: 'the manual run to emit' },
    );
    expect(events.body.data[0].event).toEqual({ pin: 4242, keys: ['k-one'], token: 'from-default' });
  });

  it('holds a default to the rules a configured value follows, and deploys with the value given instead', async () => {
    const code =
      'module.exports = { name: "defaults", version: "1", props: { on: { type: "boolean", optional: true, default: "false" }, ' +
      'n: { type: "integer", min: 1, default: 0 }, pick: { type: "string", options: ["a", "b"], optional: true, default: "c" } }, run() {} };';
    const before = await api.get('/v1/users/me/sources?limit=100');
    const refused = await api.post('/v1/sources', { component_code: code });
    expect(refused.status).toBe(422);
    expect(refused.body).toEqual({
      error:
        "invalid configured_props: on is not configured, and the component's default does not fit: it must be a boolean, got a string; " +
        "n is not configured, and the component's default does not fit: it must be at least 1, got 0; " +
        'pick is not configured, and the component\'s default does not fit: it must be one of "a", "b", got "c"',
      code: 'props_invalid',
      details: [
        { prop: 'on', message: "is not configured, and the component's default does not fit: it must be a boolean, got a string" },
        { prop: 'n', message: "is not configured, and the component's default does not fit: it must be at least 1, got 0" },
        { prop: 'pick', message: 'is not configured, and the component\'s default does not fit: it must be one of "a", "b", got "c"' },
      ],
    });
    expect((await api.get('/v1/users/me/sources?limit=100')).body.page_info.total_count).toBe(before.body.page_info.total_count);
    const given = await api.post('/v1/sources', { component_code: code, configured_props: { on: true, n: 2, pick: 'a' } });
    expect([given.status, given.body.data?.configured_props]).toEqual([200, { on: true, n: 2, pick: 'a' }]);
  });

  it('passes a manual run its JSON body as it is, null included, and {} without a body', async () => {
    const created = await api.post('/v1/sources', {
      component_code: 'module.exports = { name: "echo", version: "1", async run(e) { this.$emit({ got: e }); } };',
    });
    expect(created.status).toBe(200);
    const id = created.body.data.id;
    const { waitFor } = await import('../helpers/wait.js');
    for (const body of ['null', '[1]', undefined]) {
      const run = await api.post(`/v1/sources/${id}/run`, undefined, body === undefined ? {} : { raw: { body, contentType: 'application/json' } });
      expect(run.status, body).toBe(202);
    }
    const events = await waitFor(
      () => api.get(`/v1/sources/${id}/event_summaries?expand=event`),
      (r) => r.body.data?.length === 3,
      { what: 'three manual runs to emit' },
    );
    expect(events.body.data.map((e: { event: unknown }) => e.event).reverse()).toEqual([{ got: null }, { got: [1] }, { got: {} }]);
  });

  it('runs deploy then activate on create; deactivate then activate on update; keeps the id', async () => {
    const created = await api.post('/v1/sources', { component_code: HOOKS_SOURCE, configured_props: { label: 'v1' } });
    expect(created.status).toBe(200);
    const id = created.body.data.id;
    expect(await recordedCalls(id)).toEqual(['deploy:v1', 'activate:v1']);
    const updated = await api.patch(`/v1/sources/${id}`, { configured_props: { label: 'v2' } });
    expect(updated.status).toBe(200);
    expect(updated.body.data.id).toBe(id);
    expect(await recordedCalls(id)).toEqual(['deploy:v1', 'activate:v1', 'deactivate:v1', 'activate:v2']);
    const logs = await api.get(`/v1/sources/${id}/$logs/event_summaries?limit=100`);
    expect(logs.body.data.map((e: { event: { msg: string } }) => e.event.msg).reverse()).toEqual([
      'hook deploy',
      'hook activate',
      'hook deactivate',
      'hook activate',
    ]);
  });

  it('keeps a "__proto__" key that activate() wrote on update as an ordinary db key, beside the others', async () => {
    const code = `module.exports = {
      name: "Proto Writer",
      version: "0.0.1",
      props: { db: "$.service.db", label: { type: "string", optional: true, default: "none" } },
      hooks: {
        async activate() { this.db.set("__proto__", { label: this.label }); this.db.set("plain", this.label); },
        async deactivate() { this.db.set("off", this.label); },
      },
      async run() {},
    };`;
    const created = await api.post('/v1/sources', { component_code: code, configured_props: { label: 'v1' } });
    expect(created.status).toBe(200);
    const id = created.body.data.id;
    expect((await api.patch(`/v1/sources/${id}`, { configured_props: { label: 'v2' } })).status).toBe(200);
    const rows = await server.running.services.store.db.selectFrom('source_db').select(['key', 'value']).where('source_id', '=', id).orderBy('key').execute();
    expect(rows.map((r) => [r.key, JSON.parse(r.value)])).toEqual([
      ['__proto__', { label: 'v2' }],
      ['off', 'v1'],
      ['plain', 'v2'],
    ]);
  });

  it('PUT follows the specification: a code field is required, name defaults to the name slug, active to true', async () => {
    const created = await api.post('/v1/sources', { component_code: HOOKS_SOURCE, name: 'custom name' });
    const { id, component_id: componentId } = created.body.data;
    expect((await api.patch(`/v1/sources/${id}`, { active: false })).body.data.active).toBe(false);
    for (const body of [{}, { active: false }, { name: 'x', configured_props: {} }]) {
      const refused = await api.put(`/v1/sources/${id}`, body);
      expect(refused.status).toBe(400);
      expect(refused.body).toEqual({
        error: 'one of component_id, component_code, component_url or key is required (PATCH /v1/sources/{id} changes only the fields it is given)',
        code: 'invalid_request',
      });
    }
    const replaced = await api.put(`/v1/sources/${id}`, { component_id: componentId });
    expect(replaced.status).toBe(200);
    expect(replaced.body.data).toMatchObject({ id, name: 'hook-recorder', name_slug: expect.stringMatching(/^hook-recorder(-\d+)?$/), active: true });
    // PATCH keeps what it is not given: the name, and the source's active state.
    const patched = await api.patch(`/v1/sources/${id}`, { configured_props: { label: 'v3' } });
    expect(patched.body.data).toMatchObject({ name: 'hook-recorder', active: true, configured_props: { label: 'v3' } });
  });

  it('gives concurrent deploys of one name distinct slugs, none failing', async () => {
    const owner = client(server.url, (await server.createUser()).apiKey);
    const results = await Promise.all(Array.from({ length: 11 }, () => owner.post('/v1/sources', { component_code: emitterSource(), name: 'busy' })));
    expect(results.map((r) => r.status)).toEqual(Array(11).fill(200));
    const slugs = results.map((r) => r.body.data.name_slug).sort();
    expect(new Set(slugs).size).toBe(11);
    expect(slugs).toContain('busy');
  });

  it('takes back what it returns: a GET body sent to PUT changes nothing', async () => {
    const created = await api.post('/v1/sources', {
      component_code: PROPS_SOURCE,
      name: 'round trip',
      configured_props: { token: 'sk-round-trip', count: 3, color: 'red' },
    });
    expect(created.status).toBe(200);
    const listed = async () => (await api.get('/v1/users/me/sources?limit=100')).body.data.find((s: { id: string }) => s.id === created.body.data.id);
    // Set back, so that a write in this same second would show.
    await server.running.services.store.db.updateTable('sources').set({ updated_at: 1_000_000_000 }).where('id', '=', created.body.data.id).execute();
    const before = await listed();
    expect(before.configured_props.timer).toEqual({ cron: null, interval_seconds: 60 });
    const { component_id, name, configured_props, active } = before;
    const res = await api.put(`/v1/sources/${before.id}`, { component_id, name, configured_props, active });
    expect(res.status).toBe(200);
    expect(res.body.data.updated_at).toBe(1_000_000_000);
    expect(await listed()).toEqual(before);
    // A change moves it.
    const renamed = await api.patch(`/v1/sources/${before.id}`, { name: 'round trip 2' });
    expect(renamed.body.data.updated_at).toBeGreaterThan(1_000_000_000);
  });

  it('refuses a PATCH field it does not know with 400 naming it, changing nothing, and takes back what a GET shows', async () => {
    const created = await api.post('/v1/sources', { component_code: emitterSource(), name: 'patch fields' });
    expect(created.status).toBe(200);
    const id = created.body.data.id;
    const before = (await api.get(`/v1/sources/${id}`)).body.data;
    for (const [body, field] of [
      [{ actve: false }, 'actve'],
      [{ configured_prop: {} }, 'configured_prop'],
    ] as const) {
      const refused = await api.patch(`/v1/sources/${id}`, body);
      expect([refused.status, refused.body]).toEqual([
        400,
        {
          error: `invalid body: must not have the field "${field}"`,
          code: 'invalid_request',
          details: [{ in: 'body', field, message: `must not have the field "${field}"` }],
        },
      ]);
    }
    expect((await api.get(`/v1/sources/${id}`)).body.data).toEqual(before);
    // The whole of a GET, and of the create answer (user_id), goes back with a change.
    const echoed = await api.patch(`/v1/sources/${id}`, { ...created.body.data, active: false });
    expect([echoed.status, echoed.body.data.active, echoed.body.data.name]).toEqual([200, false, 'patch fields']);
  });

  it('gives a registry-deployed source a component_id usable wherever a component id is taken', async () => {
    const created = await api.post('/v1/sources', { key: 'schedule-custom-interval', configured_props: { timer: { intervalSeconds: 60 } } });
    expect(created.status).toBe(200);
    const { id, component_id: componentId } = created.body.data;
    const component = await api.get(`/v1/components/${componentId}`);
    expect(component.status).toBe(200);
    expect(component.body.data.id).toBe(componentId);
    const again = await api.post('/v1/sources', { component_id: componentId, configured_props: { timer: { intervalSeconds: 120 } } });
    expect(again.status).toBe(200);
    expect(again.body.data.component_id).toBe(componentId);
    const replaced = await api.put(`/v1/sources/${id}`, { component_id: componentId, configured_props: { timer: { intervalSeconds: 90 } } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.data.configured_props.timer).toEqual({ cron: null, interval_seconds: 90 });
  });

  it('active false runs deactivate and active true runs activate', async () => {
    const id = (await api.post('/v1/sources', { component_code: HOOKS_SOURCE })).body.data.id;
    const off = await api.patch(`/v1/sources/${id}`, { active: false });
    expect(off.body.data.active).toBe(false);
    const offAgain = await api.patch(`/v1/sources/${id}`, { active: false });
    expect(offAgain.body.data.active).toBe(false);
    const on = await api.patch(`/v1/sources/${id}`, { active: true });
    expect(on.body.data.active).toBe(true);
    expect(await recordedCalls(id)).toEqual(['deploy:none', 'activate:none', 'deactivate:none', 'activate:none']);
    const run = await api.post(`/v1/sources/${id}/run`, {});
    expect(run.status).toBe(202);
    await api.patch(`/v1/sources/${id}`, { active: false });
    const refused = await api.post(`/v1/sources/${id}/run`, {});
    expect(refused.status).toBe(409);
    // The way out it names is a request that works (a PUT needs a component field too).
    expect(refused.body).toEqual({ error: `source "${id}" is inactive; activate it with PATCH /v1/sources/${id} {"active": true}`, code: 'conflict' });
    expect((await api.patch(`/v1/sources/${id}`, { active: true })).status).toBe(200);
  });

  it('runs no second deactivate() for a source already off: its update runs activate() alone, its delete no hook (README)', async () => {
    // A data store outlives the source, so that what its delete ran can still be read.
    const code = `module.exports = {
      name: "paired hooks",
      version: "0.0.1",
      props: { store: { type: "data_store" } },
      hooks: {
        async deploy() { await this.note("deploy"); },
        async activate() { await this.note("activate"); },
        async deactivate() { await this.note("deactivate"); },
      },
      methods: { async note(hook) { await this.store.set("calls", [...((await this.store.get("calls")) ?? []), hook]); } },
      async run() {},
    };`;
    const calls = async () => (await api.get('/v1/data_stores/paired-hooks/records?key=calls')).body.data.value;
    const created = await api.post('/v1/sources', { component_code: code, configured_props: { store: 'paired-hooks' } });
    const { id, component_id } = created.body.data;
    expect(await calls()).toEqual(['deploy', 'activate']);
    expect((await api.put(`/v1/sources/${id}`, { component_id, active: false })).body.data.active).toBe(false);
    expect(await calls()).toEqual(['deploy', 'activate', 'deactivate']);
    // Updated while off and left off: no hook runs; switched on by an update: activate() alone.
    expect((await api.put(`/v1/sources/${id}`, { component_id, active: false, name: 'renamed' })).status).toBe(200);
    expect(await calls()).toEqual(['deploy', 'activate', 'deactivate']);
    expect((await api.put(`/v1/sources/${id}`, { component_id })).body.data.active).toBe(true);
    expect(await calls()).toEqual(['deploy', 'activate', 'deactivate', 'activate']);
    expect((await api.patch(`/v1/sources/${id}`, { active: false })).status).toBe(200);
    expect((await api.delete(`/v1/sources/${id}`)).status).toBe(204);
    expect(await calls()).toEqual(['deploy', 'activate', 'deactivate', 'activate', 'deactivate']);
  });

  it('fails a request whose hook throws with 422 and leaves the source as it was', async () => {
    const failing = await api.post('/v1/sources', { component_code: HOOKS_SOURCE, configured_props: { failIn: 'deploy' } });
    expect(failing.status).toBe(422);
    expect(failing.body.code).toBe('hook_failed');
    expect(failing.body.error).toBe('deploy() hook failed: Error: boom in deploy');

    const created = await api.post('/v1/sources', { component_code: HOOKS_SOURCE, name: 'stable' });
    const id = created.body.data.id;
    const res = await api.patch(`/v1/sources/${id}`, { configured_props: { failIn: 'activate', label: 'broken' }, name: 'renamed' });
    expect(res.status).toBe(422);
    expect(res.body.error).toContain('activate() hook failed');
    const list = await api.get('/v1/users/me/sources?limit=100');
    const stored = list.body.data.find((s: { id: string }) => s.id === id);
    expect(stored).toMatchObject({ name: 'stable', active: true, configured_props: { label: 'none', failIn: '' } });
    // The old deactivate() ran, so the old activate() ran again to set up what it took down; both are committed.
    expect(await recordedCalls(id)).toEqual(['deploy:none', 'activate:none', 'deactivate:none', 'activate:none']);
  });

  it("answers a refused deploy or update with the failed hook's console lines, those it sent while running too", async () => {
    const code = (failIn: string) => `
      export default {
        name: "loud hooks",
        version: "0.0.1",
        hooks: {
          async deploy() { console.log("deploying"); },
          async activate() {
            console.log("activating");
            // Long enough for the first line to be sent on its own while the hook runs.
            await new Promise((resolve) => setTimeout(resolve, 300));
            console.warn("still activating");
            if (${JSON.stringify(failIn)} === "activate") throw new Error("no webhook for you");
          },
        },
        async run() {},
      };`;
    const expected = {
      hook: 'activate',
      error: { name: 'Error', message: 'no webhook for you', stack: expect.stringContaining('no webhook for you') },
      logs: [
        { k: 'log', ts: expect.any(Number), msg: 'activating' },
        { k: 'warn', ts: expect.any(Number), msg: 'still activating' },
      ],
    };
    const refused = await api.post('/v1/sources', { component_code: code('activate') });
    expect([refused.status, refused.body.code, refused.body.error]).toEqual([422, 'hook_failed', 'activate() hook failed: Error: no webhook for you']);
    expect(refused.body.details).toEqual([expected]);
    const id = (await api.post('/v1/sources', { component_code: code('') })).body.data.id;
    const update = await api.put(`/v1/sources/${id}`, { component_code: code('activate') });
    expect([update.status, update.body.code]).toEqual([422, 'hook_failed']);
    expect(update.body.details).toEqual([expected]);
  });

  it('goes on when deactivate() throws: switching off, replacing and deleting the source stay possible, its error on $errors', async () => {
    const id = (await api.post('/v1/sources', { component_code: HOOKS_SOURCE, configured_props: { failIn: 'deactivate' } })).body.data.id;
    const errorMessages = async () =>
      (await api.get(`/v1/sources/${id}/$errors/event_summaries`)).body.data.map((e: { event: { error: { message: string } } }) => e.event.error.message);
    const off = await api.patch(`/v1/sources/${id}`, { active: false });
    expect([off.status, off.body.data?.active]).toEqual([200, false]);
    expect(await errorMessages()).toEqual(['boom in deactivate']);
    expect((await api.patch(`/v1/sources/${id}`, { active: true })).status).toBe(200);
    // The specification's update: deactivate() of the old code (which throws), then the new code and props, activate().
    const replaced = await api.put(`/v1/sources/${id}`, { component_code: HOOKS_SOURCE, configured_props: { failIn: 'deactivate', label: 'new' } });
    expect([replaced.status, replaced.body.data?.id, replaced.body.data?.configured_props.label]).toEqual([200, id, 'new']);
    expect(await errorMessages()).toEqual(['boom in deactivate', 'boom in deactivate']);
    expect(await recordedCalls(id)).toEqual(['deploy:none', 'activate:none', 'activate:none', 'activate:new']);
    // The specification's delete has no condition: deactivate() runs, then the source is removed.
    expect((await api.delete(`/v1/sources/${id}`)).status).toBe(204);
    expect((await api.get(`/v1/sources/${id}`)).status).toBe(404);
  });

  it('saves the code of a refused deploy nowhere: no component is left behind by a 422 on create or update', async () => {
    const components = async () => (await api.get('/v1/users/me/components?limit=100')).body.page_info.total_count;
    const source = (await api.post('/v1/sources', { component_code: emitterSource(), name: 'untouched' })).body.data;
    const before = { components: await components(), source: (await api.get(`/v1/sources/${source.id}`)).body.data };
    const refused = [
      await api.post('/v1/sources', { component_code: PROPS_SOURCE, configured_props: { count: 11 } }),
      await api.post('/v1/sources', { component_code: HOOKS_SOURCE, configured_props: { failIn: 'deploy' } }),
      await api.put(`/v1/sources/${source.id}`, { component_code: PROPS_SOURCE, name: 'renamed', configured_props: { count: 11 } }),
      await api.patch(`/v1/sources/${source.id}`, { component_code: HOOKS_SOURCE, name: 'renamed', configured_props: { failIn: 'activate' } }),
    ];
    expect(refused.map((res) => [res.status, res.body.code])).toEqual([
      [422, 'props_invalid'],
      [422, 'hook_failed'],
      [422, 'props_invalid'],
      [422, 'hook_failed'],
    ]);
    expect(await components()).toBe(before.components);
    expect((await api.get(`/v1/sources/${source.id}`)).body.data).toEqual(before.source);
    // Accepted, the code is saved with the source, under the component_id it answers with.
    const updated = await api.patch(`/v1/sources/${source.id}`, { component_code: HOOKS_SOURCE });
    expect(updated.status).toBe(200);
    expect(await components()).toBe(before.components + 1);
    expect((await api.get(`/v1/components/${updated.body.data.component_id}`)).status).toBe(200);
  });

  it('deletes with deactivate, removes events and db, and answers 404 afterwards', async () => {
    const id = (await api.post('/v1/sources', { component_code: HOOKS_SOURCE })).body.data.id;
    expect((await api.delete(`/v1/sources/${id}`)).status).toBe(204);
    expect(await recordedCalls(id)).toEqual([]);
    const leftovers = await server.running.services.store.db.selectFrom('events').select('emitter_id').where('emitter_id', '=', id).execute();
    expect(leftovers).toEqual([]);
    expect((await api.delete(`/v1/sources/${id}`)).status).toBe(404);
    expect((await api.get(`/v1/sources/${id}/event_summaries`)).status).toBe(404);
  });

  it("hides other accounts' sources behind 404", async () => {
    const id = (await api.post('/v1/sources', { component_code: emitterSource() })).body.data.id;
    const stranger = client(server.url, (await server.createUser()).apiKey);
    for (const res of [
      await stranger.patch(`/v1/sources/${id}`, { active: false }),
      await stranger.delete(`/v1/sources/${id}`),
      await stranger.post(`/v1/sources/${id}/run`, {}),
      await stranger.get(`/v1/sources/${id}/event_summaries`),
      await stranger.delete(`/v1/sources/${id}/events`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: `source "${id}" not found`, code: 'not_found' });
    }
    expect((await stranger.get('/v1/users/me/sources')).body.page_info.total_count).toBe(0);
  });

  it('paginates the source list newest first with stable cursors', async () => {
    const fresh = client(server.url, (await server.createUser()).apiKey);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await fresh.post('/v1/sources', { component_code: emitterSource(), name: `s${i}` })).body.data.id);
    const newestFirst = [...ids].reverse();
    const first = await fresh.get('/v1/users/me/sources?limit=2');
    expect(first.body.page_info).toMatchObject({ total_count: 5, count: 2 });
    expect(first.body.data.map((s: { id: string }) => s.id)).toEqual(newestFirst.slice(0, 2));
    expect(first.body.data[0].user_id).toBeUndefined();
    // A source created between pages does not shift the next page.
    await fresh.post('/v1/sources', { component_code: emitterSource(), name: 'late' });
    const second = await fresh.get(`/v1/users/me/sources?limit=2&after=${first.body.page_info.end_cursor}`);
    expect(second.body.data.map((s: { id: string }) => s.id)).toEqual(newestFirst.slice(2, 4));
    expect(second.body.page_info.total_count).toBe(6);
    const back = await fresh.get(`/v1/users/me/sources?limit=2&before=${second.body.page_info.start_cursor}`);
    expect(back.body.data.map((s: { id: string }) => s.id)).toEqual(newestFirst.slice(0, 2));
    const defaults = await fresh.get('/v1/users/me/sources');
    expect(defaults.body.page_info.count).toBe(6);
  });

  it('rejects bad pagination parameters with 400', async () => {
    for (const query of ['limit=0', 'limit=101', 'limit=1.5', 'limit=abc', 'after=!!!', 'after=Zm9v', 'after=a&before=b']) {
      const res = await api.get(`/v1/users/me/sources?${query}`);
      expect(res.status, query).toBe(400);
      expect(['invalid_request', 'invalid_cursor']).toContain(res.body.code);
    }
  });
});
