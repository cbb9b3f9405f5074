// Round trips: each object the API returns, sent back where the specification takes it as input, is accepted and
// changes nothing. GET, send back, GET again and compare. An update may move updated_at (the spec's PUT is an update:
// deactivate, swap code and props, activate), and nothing else.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { startReceiver, type Receiver } from '../delivery/helpers.js';
import { expectList, expectPage, expectSingle, expectValid } from './spec.js';
import { HTTP_SECRET, type RawResponse, SHOWCASE, TIMER_ONLY, YEARLY_CRON, hit } from './fixtures.js';

type Api = ReturnType<typeof client>;
const enc = encodeURIComponent;

describe.each(DIALECTS)('round trips on %s', (dialect) => {
  let server: TestServer;
  let receiver: Receiver;
  let api: Api;
  let key: string;
  let userId: string;
  let componentId: string;
  /** Source ids by the kind of props they show. */
  const sources: Record<string, string> = {};
  let webhookId: string;

  beforeAll(async () => {
    receiver = await startReceiver();
    server = await startTestServer(dialect, { allowPrivateNetwork: true, rateLimit: 0 });
    const user = await server.createUser();
    key = user.apiKey;
    userId = user.id;
    api = client(server.url, key);
    const ok = (res: RawResponse, what: string) => {
      expect(res.status, `${what}: ${res.text}`).toBe(200);
      return res.body.data;
    };
    componentId = ok(await api.post('/v1/components', { component_code: SHOWCASE }), 'save SHOWCASE').id;
    sources['interval timer, app, secret, integer, string[], object, boolean'] = ok(
      await api.post('/v1/sources', {
        component_id: componentId,
        name: 'Round Trip Interval',
        configured_props: { token: 'sk-1', count: 2, timer: { intervalSeconds: 3600 }, tags: ['x'], extra: { a: [1, 2] }, enabled: false },
      }),
      'deploy interval',
    ).id;
    sources['cron timer'] = ok(
      await api.post('/v1/sources', {
        component_code: SHOWCASE,
        name: 'Round Trip Cron',
        configured_props: { token: 'sk-2', count: 3, timer: { cron: YEARLY_CRON } },
      }),
      'deploy cron',
    ).id;
    sources['HTTP interface and secret'] = ok(
      await api.post('/v1/sources', { component_code: HTTP_SECRET, name: 'Round Trip HTTP', configured_props: { token: 'sk-http', label: 'kept' } }),
      'deploy http',
    ).id;
    sources['timer from the prop default'] = ok(await api.post('/v1/sources', { component_code: TIMER_ONLY }), 'deploy timer only').id;
    const inactive = ok(
      await api.post('/v1/sources', { component_code: HTTP_SECRET, name: 'Round Trip Off', configured_props: { token: 'sk-off' } }),
      'deploy off',
    );
    ok(await api.put(`/v1/sources/${inactive.id}`, { component_id: inactive.component_id, name: 'Round Trip Off', active: false }), 'deactivate');
    sources.inactive = inactive.id;
    sources['deployed from a registry key'] = ok(await api.post('/v1/sources', { key: 'http-new-requests' }), 'deploy from key').id;

    webhookId = ok(await api.post(`/v1/webhooks?url=${enc(`${receiver.url}/round-trip`)}&name=round&description=${enc('round trip')}`), 'create webhook').id;
    const http = sources['HTTP interface and secret']!;
    const cron = sources['cron timer']!;
    ok(await api.post(`/v1/subscriptions?emitter_id=${http}&listener_id=${webhookId}`), 'subscribe without a name');
    ok(await api.post(`/v1/subscriptions?emitter_id=${cron}&listener_id=${webhookId}&event_name=default`), 'subscribe default');
    ok(await api.post(`/v1/subscriptions?emitter_id=${enc('dc_*')}&listener_id=${webhookId}&event_name=${enc('$errors')}`), 'subscribe glob');
    ok(await api.post(`/v1/subscriptions?emitter_id=${http}&listener_id=${sources.inactive}&event_name=orders`), 'subscribe a source');
  });

  afterAll(async () => {
    await server?.destroy();
    await receiver?.close();
  });

  async function listedSources(): Promise<any[]> {
    const res = await api.get('/v1/users/me/sources?limit=100');
    expect(res.status).toBe(200);
    expectPage(res.body, 'source.json#listItem');
    return res.body.data;
  }

  it('user: GET /v1/users/me answers the same twice, and its api_key authenticates the same user', async () => {
    const first = await api.get('/v1/users/me');
    expectSingle(first.body, 'user.json');
    const again = await client(server.url, first.body.data.api_key).get('/v1/users/me');
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.body.data.id).toBe(userId);
  });

  it.each(['saved', 'registry'])('component (%s): POST /v1/components with the code of its GET saves the same component', async (kind) => {
    const path = kind === 'saved' ? `/v1/components/${componentId}` : '/v1/components/registry/http-new-requests';
    const before = await api.get(path);
    expect(before.status).toBe(200);
    expectSingle(before.body, 'component.json');
    const saved = await api.post('/v1/components', { component_code: before.body.data.code });
    expect(saved.status, saved.text).toBe(200);
    expectSingle(saved.body, 'component.json');
    const { id: _a, created_at: _b, updated_at: _c, ...content } = before.body.data;
    const { id: _d, created_at: _e, updated_at: _f, ...savedContent } = saved.body.data;
    expect(savedContent).toEqual(content);
    // The saved component answers its id, and the original is unchanged.
    const byId = await api.get(`/v1/components/${saved.body.data.id}`);
    expect(byId.body).toEqual(saved.body);
    expect((await api.get(path)).body).toEqual(before.body);
  });

  it.each([
    'interval timer, app, secret, integer, string[], object, boolean',
    'cron timer',
    'HTTP interface and secret',
    'timer from the prop default',
    'inactive',
    'deployed from a registry key',
  ])('source (%s): PUT /v1/sources/{id} with its component_id, name, configured_props and active changes nothing', async (kind) => {
    const id = sources[kind]!;
    const before = (await listedSources()).find((s) => s.id === id);
    expect(before).toBeDefined();
    const { component_id, name, configured_props, active } = before;
    const res = await api.put(`/v1/sources/${id}`, { component_id, name, configured_props, active });
    expect(res.status, `PUT ${JSON.stringify({ component_id, name, configured_props, active })}: ${res.text}`).toBe(200);
    if (res.text !== '') expectSingle(res.body, 'source.json#updated');
    const after = (await listedSources()).find((s) => s.id === id);
    expect(after).toEqual({ ...before, updated_at: after.updated_at });
    expect(after.updated_at).toBeGreaterThanOrEqual(before.updated_at);
  });

  it('source: the secret sent back as the GET shows it keeps its value (the run sees the original)', async () => {
    const created = await api.post('/v1/sources', { component_code: HTTP_SECRET, configured_props: { token: 'sk-original' } });
    expect(created.status).toBe(200);
    const id = created.body.data.id;
    const before = (await listedSources()).find((s) => s.id === id);
    const res = await api.put(`/v1/sources/${id}`, {
      component_id: before.component_id,
      name: before.name,
      configured_props: before.configured_props,
      active: before.active,
    });
    expect(res.status, res.text).toBe(200);
    await hit(before.configured_props.http.endpoint_url, { ping: 1 });
    const events = await waitFor(
      () => api.get(`/v1/sources/${id}/event_summaries?expand=event`),
      (r) => r.body.data?.length === 1,
      { what: 'the run after the round trip' },
    );
    expect(events.body.data[0].event).toEqual({ token: 'sk-original', label: 'plain', body: { ping: 1 } });
  });

  it('subscription: POST /v1/subscriptions with the emitter_id, listener_id and event_name of each listed one changes nothing', async () => {
    const before = await api.get('/v1/users/me/subscriptions');
    expect(before.status).toBe(200);
    expectList(before.body, 'subscription.json');
    expect(before.body.data.length).toBe(4);
    for (const sub of before.body.data) {
      const res = await api.post(`/v1/subscriptions?emitter_id=${enc(sub.emitter_id)}&listener_id=${enc(sub.listener_id)}&event_name=${enc(sub.event_name)}`);
      expect(res.status, res.text).toBe(200);
      expectSingle(res.body, 'subscription.json');
      expect(res.body.data).toEqual(sub);
    }
    expect((await api.get('/v1/users/me/subscriptions')).body).toEqual(before.body);
  });

  it('subscription: DELETE /v1/subscriptions with the fields of a listed one removes exactly that one', async () => {
    const made = await api.post(`/v1/subscriptions?emitter_id=${sources['cron timer']}&listener_id=${webhookId}`);
    expect(made.status).toBe(200);
    const before = (await api.get('/v1/users/me/subscriptions')).body.data;
    const sub = before.find((s: any) => s.id === made.body.data.id);
    const res = await api.delete(`/v1/subscriptions?emitter_id=${enc(sub.emitter_id)}&listener_id=${enc(sub.listener_id)}&event_name=${enc(sub.event_name)}`);
    expect(res.status).toBe(204);
    expect((await api.get('/v1/users/me/subscriptions')).body.data).toEqual(before.filter((s: any) => s.id !== sub.id));
  });

  it('webhook: POST /v1/webhooks with the url, name and description of a listed one makes an equal webhook and changes nothing else', async () => {
    const before = await api.get('/v1/users/me/webhooks?limit=100');
    expectPage(before.body, 'webhook.json#listItem');
    const hook = before.body.data.find((w: any) => w.id === webhookId);
    const res = await api.post(`/v1/webhooks?url=${enc(hook.url)}&name=${enc(hook.name)}&description=${enc(hook.description)}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ url: hook.url, name: hook.name, description: hook.description, active: hook.active });
    expect(res.body.data.id).not.toBe(hook.id);
    const after = await api.get('/v1/users/me/webhooks?limit=100');
    expect(after.body.data.filter((w: any) => w.id !== res.body.data.id)).toEqual(before.body.data);
  });

  it('event summary: its id sent back as start_id and end_id deletes exactly that event; the others are unchanged', async () => {
    const created = await api.post('/v1/sources', { component_code: HTTP_SECRET, configured_props: { token: 't' } });
    expect(created.status).toBe(200);
    const id = created.body.data.id;
    for (let n = 1; n <= 3; n++) await hit(created.body.data.configured_props.http.endpoint_url, { n });
    const path = `/v1/sources/${id}/event_summaries?expand=event`;
    const before = (
      await waitFor(
        () => api.get(path),
        (r) => r.body.data?.length === 3,
        { what: '3 events' },
      )
    ).body.data;
    for (const e of before) expectValid('event-summary.json', e);
    const middle = before[1];
    const res = await api.delete(`/v1/sources/${id}/events?start_id=${enc(middle.id)}&end_id=${enc(middle.id)}`);
    expect(res.status).toBe(202);
    const after = await waitFor(
      () => api.get(path),
      (r) => r.body.data?.length === 2,
      { what: 'the deletion' },
    );
    expect(after.body.data).toEqual([before[0], before[2]]);
  });

  it('page_info: the cursors of a page, sent back as after and before, are accepted', async () => {
    const first = await api.get('/v1/users/me/sources?limit=2');
    expectPage(first.body, 'source.json#listItem');
    const next = await api.get(`/v1/users/me/sources?limit=2&after=${enc(first.body.page_info.end_cursor)}`);
    expect(next.status).toBe(200);
    expectPage(next.body, 'source.json#listItem');
    const back = await api.get(`/v1/users/me/sources?limit=2&before=${enc(next.body.page_info.start_cursor)}`);
    expect(back.status).toBe(200);
    expect(back.body).toEqual(first.body);
  });
});
