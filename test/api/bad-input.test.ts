// Bad input never gets a 5xx: random bodies and parameters on every endpoint that takes input answer below 500,
// always with a JSON error body when they fail.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { client, request } from '../helpers/client.js';
import { emitterSource } from '../helpers/components.js';

const json = fc.jsonValue({ maxDepth: 3 });
const text = fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('', '0', '-1', '1.5', 'dc_', 'wh_x', '$errors', '%00', '../..', 'a'.repeat(300)));
const bodyOf = (fields: string[]) => fc.oneof(json, fc.record(Object.fromEntries(fields.map((f) => [f, fc.oneof(json, text)])), { requiredKeys: [] }));

describe('bad input', () => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  let sourceId: string;
  let key: string;

  beforeAll(async () => {
    server = await startTestServer('sqlite', { rateLimit: 0 });
    key = (await server.createUser()).apiKey;
    api = client(server.url, key);
    sourceId = (await api.post('/v1/sources', { component_code: emitterSource() })).body.data.id;
  });
  afterAll(() => server?.destroy());

  function expectClientError(res: { status: number; body: unknown }, what: string): void {
    expect(res.status, `${what} → ${res.status} ${JSON.stringify(res.body)}`).toBeLessThan(500);
    if (res.status >= 400) expect(res.body, what).toMatchObject({ error: expect.any(String), code: expect.any(String) });
  }

  it('POST and PUT bodies', async () => {
    const targets: Array<[string, string, string[]]> = [
      ['POST', '/v1/components', ['component_code', 'component_url', 'include', 'exclude']],
      ['POST', '/v1/sources', ['component_id', 'component_code', 'component_url', 'key', 'name', 'configured_props']],
      ['PUT', `/v1/sources/${sourceId}`, ['component_id', 'name', 'configured_props', 'active']],
    ];
    for (const [method, path, fields] of targets) {
      await fc.assert(
        fc.asyncProperty(bodyOf(fields), async (body) => {
          const res = await request(method, `${server.url}${path}`, { key, body });
          expectClientError(res, `${method} ${path} ${JSON.stringify(body)}`);
        }),
        { numRuns: 40 },
      );
    }
  });

  it('query parameters', async () => {
    const paths = [
      (q: string) => `/v1/users/me/sources?${q}`,
      (q: string) => `/v1/sources/${sourceId}/event_summaries?${q}`,
      (q: string) => `/v1/sources/${sourceId}/$errors/event_summaries?${q}`,
      (q: string) => `/v1/users/me/webhooks?${q}`,
    ];
    const names = fc.constantFrom('limit', 'after', 'before', 'expand', 'include', 'exclude');
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...paths), fc.array(fc.tuple(names, text), { maxLength: 4 }), async (path, pairs) => {
        const res = await api.get(path(new URLSearchParams(pairs).toString()));
        expectClientError(res, path(new URLSearchParams(pairs).toString()));
      }),
      { numRuns: 80 },
    );
  });

  it('ids and query-only POSTs', async () => {
    await fc.assert(
      fc.asyncProperty(text, text, text, async (a, b, c) => {
        const checks = [
          await api.get(`/v1/components/${encodeURIComponent(a) || 'x'}`),
          await api.delete(`/v1/sources/${encodeURIComponent(a) || 'x'}`),
          await api.delete(`/v1/sources/${sourceId}/events?${new URLSearchParams({ start_id: a, end_id: b })}`),
          await api.post(`/v1/subscriptions?${new URLSearchParams({ emitter_id: a, listener_id: b, event_name: c })}`),
          await api.delete(`/v1/subscriptions?${new URLSearchParams({ emitter_id: a, listener_id: b, event_name: c })}`),
          await api.post(`/v1/webhooks?${new URLSearchParams({ url: a, name: b, description: c })}`),
          await api.post(`/v1/auto_subscriptions?${new URLSearchParams({ event_name: a, listener_id: b })}`),
        ];
        for (const res of checks) expectClientError(res, `ids ${JSON.stringify([a, b, c])}`);
      }),
      { numRuns: 40 },
    );
  });

  it("names the field in a schema refusal's detail: a missing one, an unknown one, and the object an unknown one is in", async () => {
    const detailsOf = async (res: Promise<{ status: number; body: { details?: unknown[] } }>) => {
      const { status, body } = await res;
      return [status, body.details];
    };
    expect(await detailsOf(api.post('/v1/webhooks'))).toEqual([400, [{ in: 'querystring', field: 'url', message: "must have required property 'url'" }]]);
    // An unknown field's detail had no `field` at all, though its message named it.
    expect(await detailsOf(api.post('/v1/users/me/api_key', { api_key: 'chosen' }))).toEqual([
      400,
      [{ in: 'body', field: 'api_key', message: 'must not have the field "api_key"' }],
    ]);
    const steps = [{ name: 'a', component_code: 'module.exports = { async run() {} };' }];
    expect(await detailsOf(api.post('/v1/workflows', { name: 'x', trigger: { type: 'timer', cron: '0 9 * * *', tz: 'UTC' }, steps }))).toEqual([
      400,
      [{ in: 'body', field: 'trigger', message: 'must not have the field "tz"' }],
    ]);
  });

  it('says what the schema refused in words: the field, and the values allowed', async () => {
    const said = async (res: Promise<{ status: number; body: { error: string } }>) => {
      const { status, body } = await res;
      return [status, body.error];
    };
    expect(await said(api.post('/v1/webhooks'))).toEqual([400, "invalid querystring: must have required property 'url'"]);
    expect(await said(api.get(`/v1/sources/${sourceId}/event_summaries?expand=all`))).toEqual([400, 'invalid querystring: expand must be "event"']);
    expect(await said(api.get('/v1/users/me/sources?limit=abc'))).toEqual([400, 'invalid querystring: limit must be an integer of at most 15 decimal digits']);
    // What JavaScript would read as a number is not a number written in a URL.
    for (const limit of ['0x10', '1e2', '%201', '%2B1', '', '1e400', 'Infinity', '1.0', '9'.repeat(400)]) {
      expect(await said(api.get(`/v1/users/me/sources?limit=${limit}`)), limit).toEqual([
        400,
        'invalid querystring: limit must be an integer of at most 15 decimal digits',
      ]);
    }
    expect(await said(api.get('/v1/users/me/sources?limit=101'))).toEqual([400, 'invalid querystring: limit must be <= 100']);
    // A parameter given twice is said to be, not that it "must be integer" or string.
    expect(await said(api.get(`/v1/sources/${sourceId}/event_summaries?limit=1&limit=2`))).toEqual([
      400,
      'invalid querystring: limit is given 2 times; give it once',
    ]);
    expect(await said(api.get(`/v1/sources/${sourceId}/event_summaries?expand=event&expand=event`))).toEqual([
      400,
      'invalid querystring: expand is given 2 times; give it once',
    ]);
    expect(await said(api.post('/v1/users/me/api_key', { api_key: 'chosen' }))).toEqual([400, 'invalid body: must not have the field "api_key"']);
    expect(await said(api.post('/v1/components', [1]))).toEqual([400, 'invalid body: must be object']);
    // A union (a workflow's trigger, a run status) is told by the branch the value was meant for: each of these read
    // as every branch's complaint at once ("trigger.type must be \"http\"; …; trigger must be null"), up to ten.
    const steps = [{ name: 'a', component_code: 'module.exports = { async run() {} };' }];
    const trigger = (value: unknown) => said(api.post('/v1/workflows', { name: 'union', trigger: value, steps }));
    expect(await trigger({ type: 'timer', interval_seconds: 0 })).toEqual([400, 'invalid body: trigger.interval_seconds must be >= 1']);
    expect(await trigger({ type: 'ftp' })).toEqual([400, 'invalid body: trigger.type must be one of "http", "timer", "source"']);
    expect(await trigger('http')).toEqual([400, 'invalid body: trigger must be object or null']);
    expect(await trigger({ type: 'http', custom_response: 'yes' })).toEqual([400, 'invalid body: trigger.custom_response must be boolean']);
    expect(await trigger({ type: 'timer', cron: '0 9 * * *', tz: 'UTC' })).toEqual([400, 'invalid body: trigger must not have the field "tz"']);
    // A timer is an interval or a cron: neither, or both, is one complaint about that choice, not one per form.
    expect(await trigger({ type: 'timer' })).toEqual([400, 'invalid body: trigger must have one of the fields "interval_seconds", "cron"']);
    expect(await trigger({ type: 'timer', interval_seconds: 60, cron: '0 9 * * *' })).toEqual([
      400,
      'invalid body: trigger may have only one of the fields "cron", "interval_seconds"',
    ]);
    expect(await said(api.get('/v1/workflows/p_00000000000000000000000000/runs?status=done'))).toEqual([
      400,
      'invalid querystring: status must be one of "queued", "running", "delayed", "succeeded", "failed"',
    ]);
    expect((await api.get('/v1/users/me/workflows')).body.data).toEqual([]);
    // Text no database stores as sent: a NUL, or half of a surrogate pair.
    expect(await said(api.patch(`/v1/sources/${sourceId}`, { name: 'a\u0000b' }))).toEqual([
      400,
      'body.name holds a NUL character (\\u0000), which no field accepts',
    ]);
    expect(await said(api.patch(`/v1/sources/${sourceId}`, { name: 'a\ud800b' }))).toEqual([
      400,
      'body.name holds an unpaired UTF-16 surrogate, which is not text',
    ]);
    expect(await said(api.patch(`/v1/sources/${sourceId}`, { name: 'a\ud83d\ude00b' }))).toEqual([200, undefined]);
    // Named where it is: a value by its path, a key by the object that holds it.
    const nested = { configured_props: { list: ['ok', { deep: ['fine', 'x\u0000'] }] } };
    expect(await said(api.patch(`/v1/sources/${sourceId}`, nested))).toEqual([
      400,
      'body.configured_props.list[1].deep[1] holds a NUL character (\\u0000), which no field accepts',
    ]);
    expect(await said(api.patch(`/v1/sources/${sourceId}`, { configured_props: { ok: 1, list: [{ 'k\udc00': 1 }] } }))).toEqual([
      400,
      'body.configured_props.list[0] holds an unpaired UTF-16 surrogate, which is not text',
    ]);
  });

  it('names at most 100 problems of a body with 150,000, and says how many more: not one each, nor a 500', async () => {
    const names = Array.from({ length: 150_000 }, (_, i) => `k${i}`);
    const listed = names.slice(0, 100);
    const before = (await api.get(`/v1/sources/${sourceId}`)).body.data;
    // 150,000 unknown props overflowed the stack as their problems were gathered (a bare 500); fewer were answered with a
    // complaint each, ten times the body's size, built on the event loop every account shares.
    const props = await api.patch(`/v1/sources/${sourceId}`, { configured_props: Object.fromEntries(names.map((name) => [name, 1])) });
    expect([props.status, props.body]).toEqual([
      422,
      {
        error: `invalid configured_props: ${listed.map((name) => `${name} is not a prop of this component`).join('; ')}; and 149900 more`,
        code: 'props_invalid',
        details: listed.map((name) => ({ prop: name, message: 'is not a prop of this component' })),
      },
    ]);
    const fields = await api.patch(`/v1/sources/${sourceId}`, Object.fromEntries(names.map((name) => [name, 1])));
    expect([fields.status, fields.body]).toEqual([
      400,
      {
        error: `invalid body: ${listed.map((name) => `must not have the field "${name}"`).join('; ')}; and 149900 more`,
        code: 'invalid_request',
        details: listed.map((name) => ({ in: 'body', field: name, message: `must not have the field "${name}"` })),
      },
    ]);
    expect((await api.get(`/v1/sources/${sourceId}`)).body.data).toEqual(before);
  });

  it('refuses a JSON body that is not UTF-8 instead of storing U+FFFD in place of its bytes', async () => {
    const before = (await api.get(`/v1/sources/${sourceId}`)).body.data;
    // A Latin-1 é, a lone surrogate encoded as bytes (CESU-8), a truncated sequence: none is UTF-8.
    for (const bytes of [[0xe9], [0xed, 0xa0, 0x80], [0xe2, 0x82]]) {
      const body = Buffer.concat([Buffer.from('{"name":"a'), Buffer.from(bytes), Buffer.from('b"}')]);
      for (const contentType of ['application/json', 'application/json; charset=iso-8859-1']) {
        const res = await api.patch(`/v1/sources/${sourceId}`, undefined, { raw: { body, contentType } });
        expect([res.status, res.body], `${bytes} ${contentType}`).toEqual([400, { error: 'the JSON body is not valid UTF-8', code: 'invalid_request' }]);
      }
    }
    expect((await api.get(`/v1/sources/${sourceId}`)).body.data).toEqual(before);
    // UTF-8 itself, four-byte sequences and a byte order mark included, is read as before.
    const utf8 = Buffer.from('\ufeff{"name":"é 😀"}', 'utf8');
    const res = await api.patch(`/v1/sources/${sourceId}`, undefined, { raw: { body: utf8, contentType: 'application/json' } });
    expect([res.status, res.body.data?.name]).toEqual([200, 'é 😀']);
  });

  it('refuses a query parameter of a change whose %-escapes are not UTF-8 instead of storing the escapes as text', async () => {
    const hooks = async () => (await api.get('/v1/users/me/webhooks')).body.data.length;
    const before = await hooks();
    // A Latin-1 é, a lone surrogate encoded as bytes (CESU-8), a truncated sequence: none is UTF-8. Was 200, named "%ff".
    // A % that starts no escape: the parser kept every escape of the value undecoded ("50%25 off 100%").
    for (const raw of ['%ff', '%ED%A0%80', '%E2%82', '%25+off+100%']) {
      const res = await api.post(`/v1/webhooks?url=https://example.com/h&name=a${raw}b&description=d`);
      expect([res.status, res.body], raw).toEqual([
        400,
        {
          error: `query.name holds %-escapes that are not UTF-8 (a${raw}b): percent-encode the UTF-8 bytes of the text, and a % itself as %25`,
          code: 'invalid_request',
        },
      ]);
    }
    const subscribed = await api.post(`/v1/subscriptions?emitter_id=${sourceId}&listener_id=dc_*&event_name=%ED%A0%80`);
    expect([subscribed.status, subscribed.body.error]).toEqual([
      400,
      'query.event_name holds %-escapes that are not UTF-8 (%ED%A0%80): percent-encode the UTF-8 bytes of the text, and a % itself as %25',
    ]);
    expect(await hooks()).toBe(before);
    // UTF-8 escapes and an escaped % are read as before.
    const made = await api.post('/v1/webhooks?url=https://example.com/h&name=%C3%A9%F0%9F%98%80&description=50%25+off');
    expect([made.status, made.body.data?.name, made.body.data?.description]).toEqual([200, 'é😀', '50% off']);
    // A read ignores a parameter it does not know, however it is encoded.
    expect((await api.get('/v1/users/me/webhooks?_=%ff')).status).toBe(200);
  });
});
