// Conventions every endpoint shares: authentication, error bodies, content types, body limit, fields, rate limit.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client, request, type ApiResponse } from '../helpers/client.js';
import { Ajv } from 'ajv';
import { emitterSource } from '../helpers/components.js';
import { waitFor } from '../helpers/wait.js';

const BODY_LIMIT = 2048;

describe.each(DIALECTS)('API conventions on %s', (dialect) => {
  let server: TestServer;
  let key: string;

  beforeAll(async () => {
    server = await startTestServer(dialect, { bodyLimit: BODY_LIMIT, rateLimit: 50 });
    key = (await server.createUser()).apiKey;
  });
  afterAll(() => server?.destroy());

  it('answers 401 with a JSON error and WWW-Authenticate for a missing key', async () => {
    const res = await request('GET', `${server.url}/v1/users/me`);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(res.body).toEqual({ error: expect.stringContaining('missing Authorization header'), code: 'unauthorized' });
  });

  it('answers 401 for a malformed header and for an unknown key', async () => {
    const malformed = await request('GET', `${server.url}/v1/users/me`, { headers: { authorization: `Token ${key}` } });
    expect(malformed.status).toBe(401);
    expect(malformed.body.code).toBe('unauthorized');
    expect(malformed.body.error).toContain('malformed');
    const unknown = await request('GET', `${server.url}/v1/users/me`, { key: 'trb_not-a-real-key' });
    expect(unknown.status).toBe(401);
    expect(unknown.body).toEqual({ error: 'invalid API key', code: 'unauthorized' });
  });

  it('answers 401 for two Authorization headers, which a proxy in front may read otherwise than the server', async () => {
    const other = (await server.createUser()).apiKey;
    const { hostname, port } = new URL(server.url);
    const socket = net.connect(Number(port), hostname);
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.end(`GET /v1/users/me HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${key}\r\nauthorization: Bearer ${other}\r\nConnection: close\r\n\r\n`);
    let answer = '';
    for await (const chunk of socket) answer += (chunk as Buffer).toString('utf8');
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 401 Unauthorized');
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({
      error: '2 Authorization headers; send one, "Authorization: Bearer <api key>"',
      code: 'unauthorized',
    });
  });

  it('takes the key first on the stream address outside /v1 too: no key is a 401 whatever the query or Last-Event-ID', async () => {
    const own = (await server.createUser()).apiKey;
    const missing = { error: 'missing Authorization header; send "Authorization: Bearer <api key>"', code: 'unauthorized' };
    for (const prefix of ['', '/v1']) {
      const url = `${server.url}${prefix}/sources/dc_01m8unknownsource0000000000/sse`;
      for (const [query, headers] of [
        ['?event_name=a&event_name=b', {}],
        [`?event_name=${'x'.repeat(201)}`, {}],
        ['', { 'last-event-id': '1'.repeat(65) }],
      ] as const) {
        const anonymous = await request('GET', `${url}${query}`, { headers });
        expect([prefix, query, anonymous.status, anonymous.body]).toEqual([prefix, query, 401, missing]);
        expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
      }
      // With the key, a parameter given twice is said as on every other route.
      const twice = await request('GET', `${url}?event_name=a&event_name=b`, { key: own });
      expect([prefix, twice.status, twice.body]).toEqual([
        prefix,
        400,
        {
          error: 'invalid querystring: event_name is given 2 times; give it once',
          code: 'invalid_request',
          details: [{ in: 'querystring', field: 'event_name', message: 'is given 2 times; give it once' }],
        },
      ]);
    }
  });

  it('answers 404 with a JSON body for an unknown route', async () => {
    const res = await client(server.url, key).get('/v1/nothing-here');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'route GET /v1/nothing-here not found', code: 'not_found' });
  });

  it('answers 405 with Allow for a method a path does not answer, and OPTIONS with 204 and Allow', async () => {
    const api = client(server.url, key);
    const wrong = await api.delete('/v1/users/me');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    expect(wrong.body).toEqual({ error: 'DELETE is not a method of /v1/users/me; it answers GET, HEAD', code: 'method_not_allowed' });
    const put = await api.put('/v1/webhooks/wh_x/', { name: 'x' });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, HEAD, PATCH, DELETE, OPTIONS');
    const options = await request('OPTIONS', `${server.url}/v1/sources/dc_x`);
    expect(options.status).toBe(204);
    expect(options.headers.get('allow')).toBe('GET, HEAD, PUT, PATCH, DELETE, OPTIONS');
    expect(options.text).toBe('');
    const unknown = await request('OPTIONS', `${server.url}/v1/nothing-here`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: 'route OPTIONS /v1/nothing-here not found', code: 'not_found' });
  });

  it('answers 415 to a JSON body sent without the JSON content type, and changes nothing', async () => {
    const res = await request('POST', `${server.url}/v1/components`, {
      key,
      raw: { body: JSON.stringify({ component_code: 'module.exports = {}' }), contentType: 'text/plain' },
    });
    expect([res.status, res.body]).toEqual([
      415,
      { error: 'a request body must be JSON, sent with Content-Type: application/json, not "text/plain"', code: 'unsupported_media_type' },
    ]);
  });

  it('takes an empty body of any type as no body: a query-only POST sent with curl -d "" or a text type works', async () => {
    const webhooks = `${server.url}/v1/webhooks?url=${encodeURIComponent('https://example.com/empty-body')}`;
    for (const contentType of ['application/x-www-form-urlencoded', 'text/plain']) {
      const res = await request('POST', webhooks, { key, raw: { body: '', contentType } });
      expect([res.status, res.body.data?.url], contentType).toEqual([200, 'https://example.com/empty-body']);
    }
    const withBody = await request('POST', webhooks, { key, raw: { body: 'x=1', contentType: 'application/x-www-form-urlencoded' } });
    expect([withBody.status, withBody.body]).toEqual([
      415,
      {
        error: 'a request body must be JSON, sent with Content-Type: application/json, not "application/x-www-form-urlencoded"',
        code: 'unsupported_media_type',
      },
    ]);
  });

  it('answers 400 to malformed JSON', async () => {
    const res = await request('POST', `${server.url}/v1/components`, { key, raw: { body: '{"component_code": ', contentType: 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_request');
  });

  it('says a JSON body is refused for its "__proto__" key, not that it is no JSON, and creates nothing', async () => {
    const userKey = (await server.createUser()).apiKey;
    const api = client(server.url, userKey);
    const error = { error: 'the JSON body holds a "__proto__" key or a "constructor" with a "prototype", which no field accepts', code: 'invalid_request' };
    const code = JSON.stringify('module.exports = { name: "Tiny", version: "1", props: { o: { type: "object" } }, run() {} };');
    for (const body of [
      `{"component_code": ${code}, "configured_props": {"o": {"__proto__": {"x": 1}}}}`,
      `{"component_code": ${code}, "constructor": {"prototype": {}}}`,
    ]) {
      const res = await request('POST', `${server.url}/v1/sources`, { key: userKey, raw: { body, contentType: 'application/json' } });
      expect([res.status, res.body]).toEqual([400, error]);
    }
    expect((await api.get('/v1/users/me/sources')).body.page_info.total_count).toBe(0);
    const broken = await request('POST', `${server.url}/v1/components`, { key, raw: { body: '{"__proto__": ', contentType: 'application/json' } });
    // Broken JSON is said as such, with where it breaks in JSON.parse's words (which this Node's are).
    const where = (text: string) => {
      try {
        JSON.parse(text);
      } catch (error) {
        return (error as Error).message;
      }
    };
    expect([broken.status, broken.body]).toEqual([
      400,
      { error: `the body sent as application/json is not JSON: ${where('{"__proto__": ')}`, code: 'invalid_request' },
    ]);
    const misspelt = await request('POST', `${server.url}/v1/components`, { key, raw: { body: "{'component_code': 1}", contentType: 'application/json' } });
    expect([misspelt.status, misspelt.body]).toEqual([
      400,
      { error: `the body sent as application/json is not JSON: ${where("{'component_code': 1}")}`, code: 'invalid_request' },
    ]);
  });

  it('takes an empty body sent with the JSON content type as no body', async () => {
    const emptyJson = (method: string, path: string) => request(method, `${server.url}${path}`, { key, raw: { body: '', contentType: 'application/json' } });
    const api = client(server.url, key);
    const hook = await emptyJson('POST', `/v1/webhooks?${new URLSearchParams({ url: 'https://example.com/hook', name: 'empty body' })}`);
    expect(hook.status, hook.text).toBe(200);
    expect(hook.body.data).toMatchObject({ url: 'https://example.com/hook', name: 'empty body' });
    const hookId: string = hook.body.data.id;
    const auto = await emptyJson('POST', `/v1/auto_subscriptions?event_name=default&listener_id=${hookId}`);
    expect(auto.status, auto.text).toBe(200);
    expect(auto.body).toEqual({ data: { id: expect.stringMatching(/^sub_/), listener_id: hookId, event_name: 'default' } });
    const source = await api.post('/v1/sources', { component_code: emitterSource() });
    expect(source.status).toBe(200);
    const triple = `emitter_id=${source.body.data.id}&listener_id=${hookId}&event_name=default`;
    const deleted = await emptyJson('DELETE', `/v1/subscriptions?${triple}`);
    expect([deleted.status, deleted.text]).toEqual([204, '']);
    expect((await api.get('/v1/users/me/subscriptions')).body).toEqual({ data: [] });
    // A route whose body is required refuses an empty one exactly as it refuses none at all.
    const none = await request('POST', `${server.url}/v1/components`, { key });
    const empty = await emptyJson('POST', '/v1/components');
    expect(none.status).toBe(400);
    expect(none.body).toMatchObject({ code: 'invalid_request', details: [expect.objectContaining({ in: 'body' })] });
    expect([empty.status, empty.body]).toEqual([none.status, none.body]);
    // A route that does not exist is a 404 whatever the body, as it is without one.
    for (const path of ['/v1/nope', `/v1/workflows/${hookId}/nope`, '/nope']) {
      const bare = await request('PATCH', `${server.url}${path}`, { key });
      expect([bare.status, bare.body]).toEqual([404, { error: `route PATCH ${path} not found`, code: 'not_found' }]);
      for (const contentType of ['application/json', 'text/plain']) {
        const withBody = await request('PATCH', `${server.url}${path}`, { key, raw: { body: '', contentType } });
        expect([withBody.status, withBody.body], `${path} ${contentType}`).toEqual([bare.status, bare.body]);
      }
    }
  });

  it('answers 413 to a body over the limit', async () => {
    const res = await client(server.url, key).post('/v1/components', { component_code: 'x'.repeat(4096) });
    expect([res.status, res.body]).toEqual([
      413,
      { error: `the request body is over ${BODY_LIMIT} bytes, the most this server takes (its --body-limit)`, code: 'payload_too_large' },
    ]);
  });

  it('applies include and exclude to the data of a response', async () => {
    const api = client(server.url, key);
    const included = await api.get('/v1/users/me?include=id,username');
    expect(included.status).toBe(200);
    expect(Object.keys(included.body.data).sort()).toEqual(['id', 'username']);
    const excluded = await api.get('/v1/users/me?exclude=api_key,email');
    expect(excluded.status).toBe(200);
    expect(excluded.body.data.api_key).toBeUndefined();
    expect(excluded.body.data.email).toBeUndefined();
    expect(excluded.body.data.username).toBeDefined();
    const bad = await api.get('/v1/users/me?include=id;drop');
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_request');
  });

  it('applies include and exclude sent in a POST body', async () => {
    const api = client(server.url, key);
    const code = 'module.exports = { name: "Tiny", version: "1", run() {} };';
    const included = await api.post('/v1/components', { component_code: code, include: 'id,name' });
    expect(included.status).toBe(200);
    expect(included.body).toEqual({ data: { id: expect.stringMatching(/^sc_/), name: 'Tiny' } });
    const excluded = await api.post('/v1/components', { component_code: code, exclude: 'code,configurable_props' });
    expect(Object.keys(excluded.body.data).sort()).toEqual(['code_hash', 'created_at', 'id', 'name', 'updated_at', 'version']);
  });

  it('checks include and exclude in the body of a POST whose route takes no other body, creating nothing when malformed', async () => {
    const api = client(server.url, (await server.createUser()).apiKey);
    const pattern = '^\\s*([A-Za-z0-9_$]+\\s*(,\\s*[A-Za-z0-9_$]+\\s*)*)?$';
    const malformed = await api.post('/v1/webhooks?url=https://example.com/hook', { include: 'id;drop' });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toEqual({
      error: `invalid body: include must match pattern "${pattern}"`,
      code: 'invalid_request',
      details: [{ in: 'body', field: 'include', message: `must match pattern "${pattern}"` }],
    });
    const notText = await api.post('/v1/webhooks?url=https://example.com/hook', { exclude: 5 });
    expect(notText.status).toBe(400);
    expect(notText.body).toEqual({
      error: 'invalid body: exclude must be string',
      code: 'invalid_request',
      details: [{ in: 'body', field: 'exclude', message: 'must be string' }],
    });
    expect((await api.get('/v1/users/me/webhooks')).body.page_info.total_count).toBe(0);
    const trimmed = await api.post('/v1/webhooks?url=https://example.com/hook', { include: 'id, url' });
    expect(trimmed.status).toBe(200);
    expect(trimmed.body).toEqual({ data: { id: expect.stringMatching(/^wh_/), url: 'https://example.com/hook' } });
    const subscription = await api.post(`/v1/subscriptions?emitter_id=dc_*&listener_id=${trimmed.body.data.id}`, { exclude: 'a b' });
    expect(subscription.status).toBe(400);
    expect(subscription.body.code).toBe('invalid_request');
    expect((await api.get('/v1/users/me/subscriptions')).body).toEqual({ data: [] });
  });

  it('checks include and exclude given in the query of a POST or PUT with a body as a GET does, creating nothing when malformed', async () => {
    const api = client(server.url, (await server.createUser()).apiKey);
    const pattern = '^\\s*([A-Za-z0-9_$]+\\s*(,\\s*[A-Za-z0-9_$]+\\s*)*)?$';
    const code = 'module.exports = { name: "Tiny", version: "1", run() {} };';
    // Trimmed to nothing, the answer lost the id of the component it had just saved.
    const malformed = await api.post('/v1/components?include=id.x', { component_code: code });
    expect([malformed.status, malformed.body]).toEqual([
      400,
      {
        error: `invalid querystring: include must match pattern "${pattern}"`,
        code: 'invalid_request',
        details: [{ in: 'querystring', field: 'include', message: `must match pattern "${pattern}"` }],
      },
    ]);
    const twice = await api.post('/v1/sources?exclude=id&exclude=name', { component_code: emitterSource() });
    expect([twice.status, twice.body]).toEqual([
      400,
      {
        error: 'invalid querystring: exclude is given 2 times; give it once',
        code: 'invalid_request',
        details: [{ in: 'querystring', field: 'exclude', message: 'is given 2 times; give it once' }],
      },
    ]);
    expect((await api.get('/v1/users/me/components')).body.page_info.total_count).toBe(0);
    expect((await api.get('/v1/users/me/sources')).body.page_info.total_count).toBe(0);
    const source = await api.post('/v1/sources?include=id, name', { component_code: emitterSource() });
    expect([source.status, source.body]).toEqual([200, { data: { id: expect.stringMatching(/^dc_/), name: 'emitter' } }]);
    const replaced = await api.put(`/v1/sources/${source.body.data.id}?include=a-b`, { component_code: emitterSource(), name: 'renamed' });
    expect(replaced.status).toBe(400);
    expect(replaced.body.details).toEqual([{ in: 'querystring', field: 'include', message: `must match pattern "${pattern}"` }]);
    expect((await api.get(`/v1/sources/${source.body.data.id}`)).body.data.name).toBe('emitter');
  });

  it("takes a manual run's body as its event whole: include and exclude there are the event's fields, not trims of the answer", async () => {
    const api = client(server.url, (await server.createUser()).apiKey);
    const source = await api.post('/v1/sources', { component_code: emitterSource() });
    const event = { include: 'nothing', exclude: 'id', order: 7 };
    const run = await api.post(`/v1/sources/${source.body.data.id}/run`, event);
    expect([run.status, run.body]).toEqual([202, { data: { id: expect.stringMatching(/^inv_/) } }]);
    const malformed = await api.post(`/v1/sources/${source.body.data.id}/run`, { include: 'a.b' });
    expect([malformed.status, malformed.body]).toEqual([202, { data: { id: expect.stringMatching(/^inv_/) } }]);
    const events = await waitFor(
      () => api.get(`/v1/sources/${source.body.data.id}/event_summaries?expand=event`),
      (r) => r.body.data.length === 2,
      { what: 'the two manual runs' },
    );
    expect(events.body.data.map((e: { event: unknown }) => e.event).reverse()).toEqual([event, { include: 'a.b' }]);
    // The query still trims, as on every route.
    const trimmed = await api.post(`/v1/sources/${source.body.data.id}/run?exclude=id`, event);
    expect([trimmed.status, trimmed.body]).toEqual([202, { data: {} }]);
  });

  it('refuses a field other than include and exclude in the body of a route that reads its parameters from the query', async () => {
    const api = client(server.url, (await server.createUser()).apiKey);
    const hook = await api.post('/v1/webhooks?url=https://example.com/hook');
    const source = await api.post('/v1/sources', { component_code: emitterSource() });
    const triple = `emitter_id=${source.body.data.id}&listener_id=${hook.body.data.id}`;
    expect((await api.post(`/v1/subscriptions?${triple}`)).status).toBe(200);
    const asQuery = (field: string) => {
      const message = `is a query parameter of this endpoint, not a body field: send it as ?${field}=…`;
      return { error: `invalid body: ${field} ${message}`, code: 'invalid_request', details: [{ in: 'body', field, message }] };
    };
    // Meant for the orders channel, it subscribed to the default stream; meant to stop $logs, it removed that subscription.
    const subscribe = await api.post(`/v1/subscriptions?${triple}`, { event_name: 'orders' });
    expect([subscribe.status, subscribe.body]).toEqual([400, asQuery('event_name')]);
    const unsubscribe = await api.delete(`/v1/subscriptions?${triple}`, { body: { event_name: '$logs' } });
    expect([unsubscribe.status, unsubscribe.body]).toEqual([400, asQuery('event_name')]);
    // Meant to delete from an event on, it deleted every event of the source.
    const range = await api.delete(`/v1/sources/${source.body.data.id}/events`, { body: { start_id: '9999999999999-0' } });
    expect([range.status, range.body]).toEqual([400, asQuery('start_id')]);
    const named = await api.post('/v1/webhooks?url=https://example.com/named', { name: 'orders' });
    expect([named.status, named.body]).toEqual([400, asQuery('name')]);
    const inBody = await api.post('/v1/webhooks', { url: 'https://example.com/body' });
    expect([inBody.status, inBody.body]).toEqual([400, asQuery('url')]);
    const other = await api.delete(`/v1/webhooks/${hook.body.data.id}`, { body: { force: true } });
    const message = 'is not a field of this endpoint, whose body may only hold include and exclude';
    expect([other.status, other.body]).toEqual([
      400,
      { error: `invalid body: force ${message}`, code: 'invalid_request', details: [{ in: 'body', field: 'force', message }] },
    ]);
    expect((await api.get('/v1/users/me/subscriptions')).body).toEqual({
      data: [{ id: expect.stringMatching(/^sub_/), emitter_id: source.body.data.id, listener_id: hook.body.data.id, event_name: '' }],
    });
    expect((await api.get('/v1/users/me/webhooks')).body.data.map((w: { url: string }) => w.url)).toEqual(['https://example.com/hook']);
  });

  it('refuses a misspelt query parameter of the routes that create, route or delete, rather than acting without it', async () => {
    const api = client(server.url, (await server.createUser()).apiKey);
    const hook = await api.post('/v1/webhooks?url=https://example.com/hook');
    const source = await api.post('/v1/sources', { component_code: emitterSource() });
    const triple = `emitter_id=${source.body.data.id}&listener_id=${hook.body.data.id}`;
    expect((await api.post(`/v1/subscriptions?${triple}&event_name=$logs`)).status).toBe(200);
    const unknown = (field: string) => ({
      error: `invalid querystring: must not have the field "${field}"`,
      code: 'invalid_request',
      details: [{ in: 'querystring', field, message: `must not have the field "${field}"` }],
    });
    const answers = [
      await api.post(`/v1/subscriptions?${triple}&event_nme=orders`),
      await api.delete(`/v1/subscriptions?${triple}&event_nme=$logs`),
      await api.post(`/v1/auto_subscriptions?listener_id=${hook.body.data.id}&event_name=orders&emitter_id=${source.body.data.id}`),
      await api.delete(`/v1/sources/${source.body.data.id}/events?startid=9999999999999-0`),
      await api.post('/v1/webhooks?url=https://example.com/named&nmae=orders'),
    ];
    expect(answers.map((r) => [r.status, r.body])).toEqual([
      [400, unknown('event_nme')],
      [400, unknown('event_nme')],
      [400, unknown('emitter_id')],
      [400, unknown('startid')],
      [400, unknown('nmae')],
    ]);
    expect((await api.get('/v1/users/me/subscriptions')).body).toEqual({
      data: [{ id: expect.stringMatching(/^sub_/), emitter_id: source.body.data.id, listener_id: hook.body.data.id, event_name: '$logs' }],
    });
    expect((await api.get('/v1/users/me/webhooks')).body.page_info.total_count).toBe(1);
  });

  it('refuses a body that is no object on a POST whose route takes no other body, creating nothing', async () => {
    const userKey = (await server.createUser()).apiKey;
    const api = client(server.url, userKey);
    const refused = { error: 'invalid body: must be object', code: 'invalid_request', details: [{ in: 'body', message: 'must be object' }] };
    for (const body of ['[]', 'null', '5', '"x"', 'true']) {
      const webhook = await request('POST', `${server.url}/v1/webhooks?url=https://example.com/hook`, {
        key: userKey,
        raw: { body, contentType: 'application/json' },
      });
      expect({ body, status: webhook.status, answer: webhook.body }).toEqual({ body, status: 400, answer: refused });
    }
    expect((await api.get('/v1/users/me/webhooks')).body.page_info.total_count).toBe(0);
    const listener = (await api.post('/v1/webhooks?url=https://example.com/hook')).body.data.id;
    for (const path of [`/v1/subscriptions?emitter_id=dc_*&listener_id=${listener}`, `/v1/auto_subscriptions?event_name=default&listener_id=${listener}`]) {
      const res = await request('POST', `${server.url}${path}`, { key: userKey, raw: { body: '[]', contentType: 'application/json' } });
      expect({ path, status: res.status, answer: res.body }).toEqual({ path, status: 400, answer: refused });
    }
    expect((await api.get('/v1/users/me/subscriptions')).body).toEqual({ data: [] });
  });

  it('refuses a JSON null body, as any body that is no object, on a POST whose body may be left out, changing nothing', async () => {
    const userKey = (await server.createUser()).apiKey;
    const api = client(server.url, userKey);
    const refused = { error: 'invalid body: must be object', code: 'invalid_request', details: [{ in: 'body', message: 'must be object' }] };
    const saved = await api.post('/v1/components', { component_code: 'module.exports = { key: "app-nulls", name: "Nulls", version: "1.0.0", run() {} };' });
    expect(saved.status).toBe(200);
    const id = saved.body.data.id;
    for (const path of ['/v1/users/me/api_key', `/v1/components/${id}/publish`, `/v1/components/${id}/props/x/options`, `/v1/components/${id}/props/reload`]) {
      const res = await request('POST', `${server.url}${path}`, { key: userKey, raw: { body: 'null', contentType: 'application/json' } });
      expect({ path, status: res.status, answer: res.body }).toEqual({ path, status: 400, answer: refused });
    }
    // The key was not rotated, and nothing was published.
    expect((await api.get('/v1/users/me')).status).toBe(200);
    expect((await api.get('/v1/components/registry/app-nulls')).status).toBe(404);
  });

  it('tags every response with a request id', async () => {
    const res = await client(server.url, key).get('/v1/users/me', { headers: { 'x-request-id': 'trace-123' } });
    expect(res.headers.get('x-request-id')).toBe('trace-123');
  });

  it('serves /healthz without a key', async () => {
    const res = await request('GET', `${server.url}/healthz`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok', database: 'ok' });
  });

  it('serves the OpenAPI document and the interactive docs', async () => {
    const doc = await request('GET', `${server.url}/v1/openapi.json`);
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe('3.1.0');
    expect(Object.keys(doc.body.paths)).toEqual(expect.arrayContaining(['/v1/users/me', '/v1/components', '/v1/components/{keyOrId}']));
    const docs = await request('GET', `${server.url}/docs/`);
    expect(docs.status).toBe(200);
    expect(docs.text).toContain('<html');
  });

  it('documents the error answers of every API operation with the schema the real error bodies match', async () => {
    const doc = (await request('GET', `${server.url}/v1/openapi.json`)).body;
    const ajv = new Ajv({ strict: false });
    const errorSchema = { ...doc.components.schemas.Error, $id: 'error' };
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      if (!path.startsWith('/v1/')) continue;
      for (const [method, operation] of Object.entries<any>(item)) {
        for (const range of ['4XX', '5XX']) {
          expect(operation.responses[range]?.content?.['application/json']?.schema, `${method} ${path} ${range}`).toEqual({
            $ref: '#/components/schemas/Error',
          });
        }
      }
    }
    const validate = ajv.compile(errorSchema);
    const answers = [
      await request('GET', `${server.url}/v1/users/me`),
      await client(server.url, key).get('/v1/users/me/sources?limit=0'),
      await client(server.url, key).get('/v1/sources/dc_unknown'),
      await request('POST', `${server.url}/v1/components`, { key, raw: { body: 'x', contentType: 'text/plain' } }),
    ];
    expect(answers.map((a) => a.status)).toEqual([401, 400, 404, 415]);
    for (const answer of answers) expect(validate(answer.body), JSON.stringify(answer.body)).toBe(true);
  });

  it('documents as optional the request bodies that may be left out, which such requests leave out', async () => {
    const doc = (await request('GET', `${server.url}/v1/openapi.json`)).body;
    const bodyless = (await server.createUser()).apiKey;
    const source = await client(server.url, bodyless).post('/v1/sources', { component_code: 'module.exports = { name: "bodyless", version: "1.0.0" };' });
    const run = await request('POST', `${server.url}/v1/sources/${source.body.data.id}/run`, { key: bodyless });
    expect(run.status).toBe(202);
    expect(doc.paths['/v1/sources/{id}/run'].post.requestBody.required).toBe(false);
    expect(doc.paths['/v1/users/me/api_key'].post.requestBody.required).toBe(false);
    expect(doc.paths['/v1/components/{id}/publish'].post.requestBody.required).toBe(false);
    expect(doc.paths['/v1/sources'].post.requestBody.required).toBe(true);
    expect(JSON.stringify(doc)).not.toContain('x-tributary-optional-body');
  });

  it('answers every documented path with and without a trailing slash', async () => {
    const api = client(server.url, (await server.createUser()).apiKey);
    expect((await api.get('/v1/users/me/sources/')).status).toBe(200);
    expect((await api.get('/v1/users/me/')).status).toBe(200);
    const created = await api.post('/v1/sources/', {
      component_code: 'module.exports = { name: "slash", version: "1.0.0", props: { http: "$.interface.http" } };',
    });
    expect(created.status).toBe(200);
    const url = created.body.data.configured_props.http.endpoint_url as string;
    expect((await request('POST', `${url}/`, { body: { a: 1 } })).status).toBe(200);
    expect((await api.get(`/v1/sources/${created.body.data.id}/event_summaries/`)).status).toBe(200);
  });

  it('gives string cursors on an empty page, which page on as cursors do', async () => {
    const api = client(server.url, (await server.createUser()).apiKey);
    const empty = await api.get('/v1/users/me/sources');
    expect(empty.body).toEqual({ page_info: { total_count: 0, count: 0, start_cursor: 'head', end_cursor: 'head' }, data: [] });
    const id = (await api.post('/v1/sources', { component_code: 'module.exports = { name: "c", version: "1.0.0" };' })).body.data.id;
    // After the head is the whole list; before it, nothing.
    expect((await api.get('/v1/users/me/sources?after=head')).body.data.map((s: { id: string }) => s.id)).toEqual([id]);
    const before = await api.get('/v1/users/me/sources?before=head');
    expect(before.body).toEqual({ page_info: { total_count: 1, count: 0, start_cursor: 'head', end_cursor: 'head' }, data: [] });
    // An empty page past the end stands at the cursor it was asked from.
    const first = await api.get('/v1/users/me/sources');
    const past = await api.get(`/v1/users/me/sources?after=${first.body.page_info.end_cursor}`);
    expect(past.body.page_info).toEqual({
      total_count: 1,
      count: 0,
      start_cursor: first.body.page_info.end_cursor,
      end_cursor: first.body.page_info.end_cursor,
    });
    expect((await api.get(`/v1/users/me/sources?before=${past.body.page_info.start_cursor}`)).body.data).toEqual([]);
    const events = await api.get(`/v1/sources/${id}/event_summaries`);
    expect(events.body.page_info).toEqual({ total_count: 0, count: 0, start_cursor: 'head', end_cursor: 'head' });
  });

  it('trims spaces around the commas of include and exclude', async () => {
    const api = client(server.url, (await server.createUser()).apiKey);
    expect(Object.keys((await api.get('/v1/users/me?include=id, email')).body.data).sort()).toEqual(['email', 'id']);
    expect((await api.get('/v1/users/me?exclude= id , email')).body.data).not.toHaveProperty('id');
    // Empty, they are their defaults: every field, none left out.
    const everything = (await api.get('/v1/users/me')).body;
    expect((await api.get('/v1/users/me?include=&exclude=')).body).toEqual(everything);
  });

  it('limits requests per key with 429 and Retry-After', async () => {
    const other = (await server.createUser()).apiKey;
    const api = client(server.url, other);
    let limited: ApiResponse | undefined;
    for (let i = 0; i < 60 && !limited; i++) {
      const res = await api.get('/v1/users/me');
      if (res.status === 429) limited = res;
      else expect(res.status).toBe(200);
    }
    expect(limited).toBeDefined();
    expect(limited!.body.code).toBe('rate_limited');
    expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another key is not affected.
    expect((await client(server.url, key).get('/v1/users/me')).status).toBe(200);
  });

  it("counts the stream address outside /v1 in the key's rate limit, as its /v1 twin and every other route", async () => {
    const own = (await server.createUser()).apiKey;
    const api = client(server.url, own);
    // HEAD answers a stream's status at once and holds no stream; the source does not exist, so each is a 404.
    const outside = '/sources/dc_01m8unknownsource0000000000/sse';
    const statuses: number[] = [];
    for (let i = 0; i < 60 && !statuses.includes(429); i++) statuses.push((await request('HEAD', `${server.url}${outside}`, { key: own })).status);
    expect(statuses).toEqual([...Array.from({ length: 50 }, () => 404), 429]);
    // The one limit counts both addresses and the rest of /v1.
    const v1 = await api.get('/v1/users/me');
    expect([v1.status, v1.body.code]).toEqual([429, 'rate_limited']);
  });
});
