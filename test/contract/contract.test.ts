// Contract tests: every endpoint of the specification (/work/shared/spec/interface.md), called on a real server with
// real data, each answer checked against the JSON Schemas written from the specification (schemas/*.json, see spec.ts):
// resources, envelopes, empty lists, error bodies, include/exclude on every endpoint, expand, paths with and without a
// trailing slash, and the served OpenAPI document against the same schemas.
//
// Where the specification is silent ("not shown"), the README's documented behaviour is asserted and the test says so.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client, request } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { startReceiver, type Receiver } from '../delivery/helpers.js';
import {
  SPEC_ENDPOINTS,
  type SchemaName,
  type SpecEndpoint,
  describeProblems,
  expectError,
  expectList,
  expectPage,
  expectSingle,
  expectValid,
  expectValidPart,
  fieldsOf,
  operationOf,
  problemsOf,
  requiredFieldsOf,
  responseSchemaOf,
} from './spec.js';
import { HTTP_SECRET, type RawResponse, SHOWCASE, TINY, WORKFLOW_STEPS, YEARLY_CRON, hit, send, withSlash, withoutSlash } from './fixtures.js';

type Api = ReturnType<typeof client>;
interface Account {
  id: string;
  key: string;
  api: Api;
}

const enc = encodeURIComponent;
/** An id of the right shape that no resource has. */
const UNKNOWN = '0'.repeat(26);
const BIG_TEXT = 'x'.repeat(2000);

const label = (e: SpecEndpoint) => `${e.method} ${e.path}`;

describe.each(DIALECTS)('contract with the specification on %s', (dialect) => {
  let server: TestServer;
  let receiver: Receiver;
  let me: Account;
  let paid: Account;
  let openapi: any;
  /** Data made once in beforeAll, with the answers of the requests that made it. */
  const made: Record<
    | 'component'
    | 'tiny'
    | 'sourceA'
    | 'sourceCron'
    | 'sourceKey'
    | 'sourceT'
    | 'webhook'
    | 'webhook2'
    | 'subDefault'
    | 'subGlob'
    | 'subChannel'
    | 'componentFromUrl'
    | 'componentCodeAndUrl'
    | 'workflow',
    RawResponse
  > = {} as any;
  /** The events of source A, newest first, with expand=event: default stream, $errors and $logs. */
  let emits: any[];
  let errors: any[];
  /** The seed workflow's events and errors, newest first, with expand=event. */
  let workflowEmits: any[];
  let workflowErrors: any[];

  const url = (p: string) => `${server.url}${p}`;
  const A = () => made.sourceA.body.data;
  const webhookId = () => made.webhook.body.data.id as string;
  const tinyId = () => made.tiny.body.data.id as string;
  const workflowId = () => made.workflow.body.data.id as string;

  async function account(plan: 'free' | 'paid' = 'free'): Promise<Account> {
    const user = await server.createUser({ plan });
    return { id: user.id, key: user.apiKey, api: client(server.url, user.apiKey) };
  }

  async function deployTiny(who: Account = me, name?: string): Promise<string> {
    const res = await who.api.post('/v1/sources', { component_id: who === me ? tinyId() : undefined, component_code: who === me ? undefined : TINY, name });
    expect(res.status, res.text).toBe(200);
    return res.body.data.id;
  }

  beforeAll(async () => {
    receiver = await startReceiver();
    // Webhooks and component_url point at the local receiver; no rate limit for the few hundred requests below.
    server = await startTestServer(dialect, { allowPrivateNetwork: true, rateLimit: 0 });
    me = await account();
    paid = await account('paid');
    const api = me.api;
    const ok = (res: RawResponse, what: string) => {
      expect(res.status, `${what}: ${res.text}`).toBe(200);
      return res;
    };

    made.component = ok(await api.post('/v1/components', { component_code: SHOWCASE }), 'save SHOWCASE');
    made.tiny = ok(await api.post('/v1/components', { component_code: TINY }), 'save TINY');
    receiver.answerAt('/code/tiny.js', () => ({ status: 200, headers: { 'content-type': 'text/javascript' }, body: TINY }));
    made.componentFromUrl = await api.post('/v1/components', { component_url: `${receiver.url}/code/tiny.js` });
    made.componentCodeAndUrl = await api.post('/v1/components', { component_code: TINY, component_url: `${receiver.url}/code/elsewhere.js` });
    made.sourceA = ok(
      await api.post('/v1/sources', {
        component_id: made.component.body.data.id,
        name: 'Contract A',
        configured_props: { token: 'sk-contract', count: 4, timer: { intervalSeconds: 3600 }, tags: ['a', 'b'], extra: { deep: { x: 1 } }, enabled: true },
      }),
      'deploy A',
    );
    made.sourceCron = ok(
      await api.post('/v1/sources', {
        component_code: SHOWCASE,
        name: 'Contract Cron',
        configured_props: { token: 'sk-cron', count: 1, timer: { cron: YEARLY_CRON }, color: 'green' },
      }),
      'deploy Cron',
    );
    made.sourceKey = ok(await api.post('/v1/sources', { key: 'http-new-requests' }), 'deploy from key');
    made.sourceT = ok(await api.post('/v1/sources', { component_id: tinyId(), name: 'Contract T' }), 'deploy T');

    // Events through the HTTP endpoint: two emits (default stream, channel "orders"), one over 1 KB, one failing run.
    const endpoint = A().configured_props.http.endpoint_url as string;
    await hit(endpoint, { n: 1 });
    await hit(endpoint, { n: 2, channel: 'orders' });
    await hit(endpoint, { big: BIG_TEXT });
    await hit(endpoint, { fail: 'contract failure' });
    await hit(made.sourceKey.body.data.configured_props.http.endpoint_url, { hello: 'world' });
    emits = (
      await waitFor(
        () => api.get(`/v1/sources/${A().id}/event_summaries?limit=100&expand=event`),
        (r) => r.body.data?.length === 3,
        { what: '3 emits of A' },
      )
    ).body.data;
    errors = (
      await waitFor(
        () => api.get(`/v1/sources/${A().id}/$errors/event_summaries?limit=100&expand=event`),
        (r) => r.body.data?.length === 1,
        { what: 'the $errors event of A' },
      )
    ).body.data;
    await waitFor(
      () => api.get(`/v1/sources/${A().id}/$logs/event_summaries?limit=100`),
      (r) => r.body.data?.length >= 3,
      { what: 'the $logs events of A' },
    );
    await waitFor(
      () => api.get(`/v1/sources/${made.sourceKey.body.data.id}/event_summaries`),
      (r) => r.body.data?.length === 1,
      { what: 'the event of the key source' },
    );

    // The seed workflow (made through the extension API): one run emits, one fails in its second step.
    made.workflow = ok(await api.post('/v1/workflows', { name: 'Contract workflow', steps: WORKFLOW_STEPS }), 'create workflow');
    const accepted = (res: RawResponse, what: string) => expect(res.status, `${what}: ${res.text}`).toBe(202);
    accepted(await api.post(`/v1/workflows/${workflowId()}/run`, { n: 1 }), 'run workflow');
    accepted(await api.post(`/v1/workflows/${workflowId()}/run`, { fail: 'contract workflow failure' }), 'fail workflow');
    workflowEmits = (
      await waitFor(
        () => api.get(`/v1/workflows/${workflowId()}/event_summaries?limit=100&expand=event`),
        (r) => r.body.data?.length === 2,
        { what: 'the 2 emits of the workflow' },
      )
    ).body.data;
    workflowErrors = (
      await waitFor(
        () => api.get(`/v1/workflows/${workflowId()}/$errors/event_summaries?limit=100&expand=event`),
        (r) => r.body.data?.length === 1,
        { what: 'the $errors event of the workflow' },
      )
    ).body.data;

    made.webhook = ok(await api.post(`/v1/webhooks?url=${enc(`${receiver.url}/contract`)}&name=orders&description=${enc('new orders')}`), 'create webhook');
    made.webhook2 = ok(await api.post(`/v1/webhooks?url=${enc(`${receiver.url}/contract-2`)}&name=second&description=two`), 'create webhook 2');
    made.subDefault = ok(await api.post(`/v1/subscriptions?emitter_id=${A().id}&listener_id=${webhookId()}`), 'subscribe default');
    made.subGlob = ok(await api.post(`/v1/subscriptions?emitter_id=${enc('dc_*')}&listener_id=${webhookId()}&event_name=${enc('$errors')}`), 'subscribe glob');
    made.subChannel = ok(
      await api.post(`/v1/subscriptions?emitter_id=${A().id}&listener_id=${made.sourceKey.body.data.id}&event_name=orders`),
      'subscribe channel',
    );
    openapi = (await request('GET', url('/v1/openapi.json'), { key: me.key })).body;
  });

  afterAll(async () => {
    await server?.destroy();
    await receiver?.close();
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('users', () => {
    it('GET /v1/users/me answers { data: <user> } in the free-plan shape', async () => {
      const res = await me.api.get('/v1/users/me');
      expect(res.status).toBe(200);
      expectSingle(res.body, 'user.json');
      expect(res.body.data.id).toBe(me.id);
      expect(res.body.data.api_key).toBe(me.key);
      expect(Object.keys(res.body.data).sort()).toEqual(requiredFieldsOf('user.json', res.body.data).sort());
      expect(res.body.data.billing_period_start_ts).toBeUndefined();
    });

    it('GET /v1/users/me answers { data: <user> } in the paid-plan shape', async () => {
      const res = await paid.api.get('/v1/users/me');
      expect(res.status).toBe(200);
      expectSingle(res.body, 'user.json');
      expect(res.body.data.api_key).toBeUndefined();
      expect(res.body.data.billing_period_start_ts).toBeLessThan(res.body.data.billing_period_end_ts);
    });

    it('the api_key of GET /v1/users/me is the key that authenticates the account', async () => {
      const key = (await me.api.get('/v1/users/me')).body.data.api_key;
      const res = await client(server.url, key).get('/v1/users/me');
      expect(res.status).toBe(200);
      expect(res.body.data.id).toBe(me.id);
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('components', () => {
    it('POST /v1/components answers { data: <component> } for component_code', () => {
      const res = made.component;
      expect(res.status).toBe(200);
      expectSingle(res.body, 'component.json');
      const data = res.body.data;
      expect(data).toMatchObject({ code: SHOWCASE, name: 'Contract Showcase', version: '1.2.3' });
      const props = Object.fromEntries(data.configurable_props.map((p: any) => [p.name, p]));
      expect(Object.keys(props)).toEqual(expect.arrayContaining(['github', 'http', 'timer', 'token', 'count', 'color', 'enabled', 'tags', 'extra']));
      expect(props.github).toMatchObject({ type: 'app', app: 'github' });
      expect(props.token).toMatchObject({ type: 'string', label: 'API token', description: 'A **secret** token' });
      expect(props.tags.type).toBe('string[]');
      expect(props.color.default).toBe('red');
      expect(data.created_at).toBe(data.updated_at);
    });

    it('POST /v1/components answers { data: <component> } for component_url', () => {
      const res = made.componentFromUrl;
      expect(res.status, res.text).toBe(200);
      expectSingle(res.body, 'component.json');
      expect(res.body.data).toMatchObject({ code: TINY, name: 'Contract Tiny' });
    });

    it('POST /v1/components uses component_code when both are given (component_url is only metadata)', () => {
      const res = made.componentCodeAndUrl;
      expect(res.status, res.text).toBe(200);
      expectSingle(res.body, 'component.json');
      expect(res.body.data.code).toBe(TINY);
      expect(res.body.data.code_hash).toBe(made.tiny.body.data.code_hash);
    });

    it('GET /v1/components/{id} answers the saved component', async () => {
      const res = await me.api.get(`/v1/components/${made.component.body.data.id}`);
      expect(res.status).toBe(200);
      expectSingle(res.body, 'component.json');
      expect(res.body.data).toEqual(made.component.body.data);
    });

    it('GET /v1/components/{key} answers a component saved with that key', async () => {
      const res = await me.api.get('/v1/components/contract-showcase');
      expect(res.status).toBe(200);
      expectSingle(res.body, 'component.json');
      expect(res.body.data.code).toBe(SHOWCASE);
      // Two components carry the key (SHOWCASE saved, then deployed from its code); which one is not specified.
      expect([made.component.body.data.id, made.sourceCron.body.data.component_id]).toContain(res.body.data.id);
    });

    it.each([
      'http-new-requests',
      'schedule-custom-interval',
      'json_feed-new-items',
    ])('GET /v1/components/registry/%s answers { data: <component> }', async (key) => {
      const res = await me.api.get(`/v1/components/registry/${key}`);
      expect(res.status).toBe(200);
      expectSingle(res.body, 'component.json');
    });

    it('refuses an action without run (run is required) with 422 component_invalid', async () => {
      const res = await me.api.post('/v1/components', { component_code: 'module.exports = { type: "action", name: "No Run", version: "1" };' });
      expectError(res, 422, 'component_invalid');
    });

    // A deliberate reading (README, Extensions and lenient readings): registry sources such as the schedule app's
    // custom interval have no run and emit their triggering event, so a source without run is saved.
    it('saves a source without run (it emits its triggering event), unlike an action without run', async () => {
      const res = await me.api.post('/v1/components', { component_code: 'module.exports = { name: "No Run", version: "1" };' });
      expect(res.status).toBe(200);
      expectSingle(res.body, 'component.json');
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('sources', () => {
    it('POST /v1/sources answers { data: <source> } with user_id and active true (component_id)', () => {
      const res = made.sourceA;
      expect(res.status).toBe(200);
      expectSingle(res.body, 'source.json');
      expect(res.body.data).toMatchObject({
        user_id: me.id,
        component_id: made.component.body.data.id,
        active: true,
        name: 'Contract A',
        name_slug: 'contract-a',
      });
    });

    it('POST /v1/sources answers { data: <source> } for component_code, and for a registry key', () => {
      for (const res of [made.sourceCron, made.sourceKey]) {
        expect(res.status).toBe(200);
        expectSingle(res.body, 'source.json');
        expect(res.body.data).toMatchObject({ user_id: me.id, active: true });
      }
    });

    it('names a source after the name slug of its component when no name is given', () => {
      expect(made.sourceKey.body.data).toMatchObject({ name: 'new-requests', name_slug: 'new-requests' });
    });

    it('returns a timer prop as { cron, interval_seconds } and an HTTP prop as { endpoint_url }', () => {
      const a = made.sourceA.body.data.configured_props;
      expectValid('source.json#timerProp', a.timer, 'interval timer');
      expect(a.timer).toEqual({ cron: null, interval_seconds: 3600 });
      expectValid('source.json#httpProp', a.http, 'HTTP prop');
      const cron = made.sourceCron.body.data.configured_props;
      expectValid('source.json#timerProp', cron.timer, 'cron timer');
      expect(cron.timer.cron).toBe(YEARLY_CRON);
      expectValid('source.json#httpProp', cron.http, 'HTTP prop');
      expect(cron.http.endpoint_url).not.toBe(a.http.endpoint_url);
      expectValid('source.json#httpProp', made.sourceKey.body.data.configured_props.http, 'HTTP prop of the key source');
      expect(made.sourceA.body.data.configured_props).toMatchObject({ count: 4, tags: ['a', 'b'], extra: { deep: { x: 1 } }, enabled: true, color: 'red' });
    });

    it('prefers component_id when component_code and component_url are given too', async () => {
      const res = await me.api.post('/v1/sources', {
        component_id: tinyId(),
        component_code: 'not even javascript',
        component_url: `${receiver.url}/nothing.js`,
      });
      expect(res.status, res.text).toBe(200);
      expectSingle(res.body, 'source.json');
      expect(res.body.data.component_id).toBe(tinyId());
    });

    it('GET /v1/users/me/sources answers a page of sources without user_id', async () => {
      const res = await me.api.get('/v1/users/me/sources?limit=100');
      expect(res.status).toBe(200);
      expectPage(res.body, 'source.json#listItem');
      const { user_id: _userId, ...withoutUser } = made.sourceA.body.data;
      expect(res.body.data.find((s: any) => s.id === A().id)).toEqual(withoutUser);
      expect(res.body.page_info.total_count).toBe(res.body.data.length);
    });

    it('reports, for a source deployed from a registry key, a component_id that GET /v1/components/{id} answers', async () => {
      const res = await me.api.get(`/v1/components/${made.sourceKey.body.data.component_id}`);
      expect(res.status, res.text).toBe(200);
      expectSingle(res.body, 'component.json');
      expect(res.body.data.name).toBe('New Requests');
    });

    it('PUT /v1/sources/{id} updates name, active and code, keeping the id', async () => {
      const id = await deployTiny(me, 'Before Update');
      const off = await me.api.put(`/v1/sources/${id}`, { component_id: tinyId(), name: 'After Update', active: false });
      expect(off.status, off.text).toBe(200);
      // The spec does not show this body; the README's { data: <source> } is checked when there is one.
      if (off.text !== '') expectSingle(off.body, 'source.json#updated');
      const listed = async () => (await me.api.get('/v1/users/me/sources?limit=100')).body.data.find((s: any) => s.id === id);
      expect(await listed()).toMatchObject({ id, name: 'After Update', active: false });
      const on = await me.api.put(`/v1/sources/${id}`, { component_id: tinyId(), name: 'After Update', active: true });
      expect(on.status).toBe(200);
      expect(await listed()).toMatchObject({ active: true });
      // active defaults to true
      await me.api.put(`/v1/sources/${id}`, { component_id: tinyId(), name: 'After Update', active: false });
      const defaulted = await me.api.put(`/v1/sources/${id}`, { component_id: tinyId(), name: 'After Update' });
      expect(defaulted.status).toBe(200);
      expect(await listed()).toMatchObject({ active: true });
      // component_code replaces the code, same id
      const recoded = await me.api.put(`/v1/sources/${id}`, { component_code: TINY.replace('0.0.1', '0.0.2'), name: 'After Update' });
      expect(recoded.status, recoded.text).toBe(200);
      const after = await listed();
      expect(after.id).toBe(id);
      expect(after.component_id).not.toBe(tinyId());
      const component = await me.api.get(`/v1/components/${after.component_id}`);
      expect(component.body.data.version).toBe('0.0.2');
    });

    it("PUT /v1/sources/{id} without name names the source after the component's name slug", async () => {
      const id = await deployTiny(me, 'Named By Hand');
      const res = await me.api.put(`/v1/sources/${id}`, { component_id: tinyId() });
      expect(res.status, res.text).toBe(200);
      const listed = (await me.api.get('/v1/users/me/sources?limit=100')).body.data.find((s: any) => s.id === id);
      expect(listed.name).toBe('contract-tiny');
    });

    it('PUT /v1/sources/{id} with none of component_id, component_code, component_url answers 400', async () => {
      const id = await deployTiny(me);
      expectError(await me.api.put(`/v1/sources/${id}`, { name: 'x', active: true }), 400, 'invalid_request');
    });

    it('DELETE /v1/sources/{id} deletes the source (204 as the README says; the spec shows no status)', async () => {
      const id = await deployTiny();
      const res = await me.api.delete(`/v1/sources/${id}`);
      expect(res.status).toBe(204);
      const list = await me.api.get('/v1/users/me/sources?limit=100');
      expect(list.body.data.map((s: any) => s.id)).not.toContain(id);
      expectError(await me.api.delete(`/v1/sources/${id}`), 404, 'not_found');
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('source events', () => {
    it('GET /v1/sources/{id}/event_summaries answers a page of event summaries', async () => {
      const res = await me.api.get(`/v1/sources/${A().id}/event_summaries`);
      expect(res.status).toBe(200);
      expectPage(res.body, 'event-summary.json');
      expect(res.body.page_info.total_count).toBe(3);
      for (const e of res.body.data) expect(e.metadata.emitter_id).toBe(A().id);
      expect(res.body.data.map((e: any) => e.metadata.name).sort()).toEqual(['', '', 'orders']);
    });

    it('expand=event returns the full event data; without it, data over 1 KB may be truncated', async () => {
      const plain = await me.api.get(`/v1/sources/${A().id}/event_summaries`);
      const expanded = await me.api.get(`/v1/sources/${A().id}/event_summaries?expand=event`);
      expect(expanded.status).toBe(200);
      expectPage(expanded.body, 'event-summary.json');
      const bodies = expanded.body.data.map((e: any) => e.event);
      expect(bodies).toEqual(expect.arrayContaining([{ n: 1 }, { n: 2, channel: 'orders' }, { big: BIG_TEXT }]));
      const bigId = expanded.body.data.find((e: any) => e.event.big).id;
      const truncated = plain.body.data.find((e: any) => e.id === bigId).event;
      expect(typeof truncated).toBe('object');
      // Small events are never truncated.
      for (const e of plain.body.data.filter((x: any) => x.id !== bigId)) {
        expect(e.event).toEqual(expanded.body.data.find((x: any) => x.id === e.id).event);
      }
    });

    it('limit returns the last N events', async () => {
      const res = await me.api.get(`/v1/sources/${A().id}/event_summaries?limit=1&expand=event`);
      expect(res.status).toBe(200);
      expectPage(res.body, 'event-summary.json');
      expect(res.body.page_info).toMatchObject({ total_count: 3, count: 1 });
      expect(res.body.data[0].event).toEqual({ big: BIG_TEXT });
    });

    it('event ids are <epoch_ms>-<sequence> and order by time', () => {
      const keys = emits.map((e) => e.id.split('-').map(Number) as [number, number]);
      const sorted = [...keys].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
      // Newest first (README) is the reverse of emission order, which the ids follow.
      expect(keys).toEqual(sorted.reverse());
      for (const e of emits) expect(Math.abs(e.indexed_at_ms - Number(e.id.split('-')[0]))).toBeLessThan(60_000);
    });

    it('$errors events (README: GET /v1/sources/{id}/$errors/event_summaries) carry error, original_event and original_context', () => {
      expect(errors).toHaveLength(1);
      expectValid('event-summary.json', errors[0]);
      expect(errors[0].metadata.name).toBe('$errors');
      expectValid('event-summary.json#errorEvent', errors[0].event);
      expect(errors[0].event.original_event.body).toEqual({ fail: 'contract failure' });
    });

    it('$logs events (README: GET /v1/sources/{id}/$logs/event_summaries) are event summaries', async () => {
      const res = await me.api.get(`/v1/sources/${A().id}/$logs/event_summaries?limit=100`);
      expect(res.status).toBe(200);
      expectPage(res.body, 'event-summary.json');
    });

    it('DELETE /v1/sources/{id}/events answers 202: start_id = end_id deletes one event, start_id later ones, end_id earlier ones, none all', async () => {
      const created = await me.api.post('/v1/sources', { component_code: HTTP_SECRET, configured_props: { token: 't' } });
      expect(created.status).toBe(200);
      const id = created.body.data.id;
      for (let n = 1; n <= 6; n++) await hit(created.body.data.configured_props.http.endpoint_url, { n });
      const list = async () => (await me.api.get(`/v1/sources/${id}/event_summaries?limit=100&expand=event`)).body.data.map((e: any) => e.event.body.n);
      const ids = (
        await waitFor(
          () => me.api.get(`/v1/sources/${id}/event_summaries?limit=100&expand=event`),
          (r) => r.body.data?.length === 6,
        )
      ).body.data
        .slice()
        .reverse()
        .map((e: any) => e.id); // oldest first: ids[0] is n=1
      const remove = async (query: string, expected: number[]) => {
        const res = await me.api.delete(`/v1/sources/${id}/events${query}`);
        expect(res.status, `DELETE events${query}`).toBe(202);
        // Deletion is asynchronous: wait for it.
        await waitFor(list, (left) => JSON.stringify(left) === JSON.stringify(expected), { what: `events after DELETE${query}` });
      };
      await remove(`?start_id=${ids[2]}&end_id=${ids[2]}`, [6, 5, 4, 2, 1]);
      await remove(`?start_id=${ids[4]}`, [4, 2, 1]);
      await remove(`?end_id=${ids[1]}`, [4]);
      await remove('', []);
    });

    it('GET /sources/{id}/sse (no /v1, as the spec writes it) streams event summaries, replaying after Last-Event-ID', async () => {
      const oldest = emits[emits.length - 1].id;
      const res = await send('GET', url(`/sources/${A().id}/sse`), {
        key: me.key,
        headers: { 'last-event-id': oldest },
        until: (messages) => messages.filter((m) => m.data !== undefined).length >= 2,
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const summaries = res.messages.filter((m) => m.data !== undefined);
      expect(summaries).toHaveLength(2);
      for (const m of summaries) {
        const summary = JSON.parse(m.data!);
        expectValid('event-summary.json', summary, 'streamed event');
        expect(m.id).toBe(summary.id);
      }
      expect(summaries.map((m) => m.id)).toEqual([emits[1].id, emits[0].id]);
    });

    it('GET /v1/sources/{id}/sse (README) streams too', async () => {
      const res = await send('GET', url(`/v1/sources/${A().id}/sse`), { key: me.key });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('subscriptions', () => {
    it('POST /v1/subscriptions answers { data: <subscription> } (README; the spec does not show it)', () => {
      for (const res of [made.subDefault, made.subGlob, made.subChannel]) {
        expect(res.status).toBe(200);
        expectSingle(res.body, 'subscription.json');
      }
      expect(made.subDefault.body.data).toMatchObject({ emitter_id: A().id, listener_id: webhookId(), event_name: '' });
      expect(made.subGlob.body.data).toMatchObject({ emitter_id: 'dc_*', listener_id: webhookId(), event_name: '$errors' });
      expect(made.subChannel.body.data).toMatchObject({ emitter_id: A().id, listener_id: made.sourceKey.body.data.id, event_name: 'orders' });
    });

    it('GET /v1/users/me/subscriptions answers { data: [<subscription>] } without page_info', async () => {
      const res = await me.api.get('/v1/users/me/subscriptions');
      expect(res.status).toBe(200);
      expectList(res.body, 'subscription.json');
      for (const sub of [made.subDefault, made.subGlob, made.subChannel]) expect(res.body.data).toContainEqual(sub.body.data);
    });

    it('DELETE /v1/subscriptions removes exactly the triple; event_name= removes one made without a name', async () => {
      const cron = made.sourceCron.body.data.id;
      const named = await me.api.post(`/v1/subscriptions?emitter_id=${cron}&listener_id=${webhookId()}&event_name=gone`);
      const unnamed = await me.api.post(`/v1/subscriptions?emitter_id=${cron}&listener_id=${webhookId()}`);
      expect([named.status, unnamed.status]).toEqual([200, 200]);
      const res = await me.api.delete(`/v1/subscriptions?emitter_id=${cron}&listener_id=${webhookId()}&event_name=gone`);
      expect(res.status).toBe(204);
      let ids = (await me.api.get('/v1/users/me/subscriptions')).body.data.map((s: any) => s.id);
      expect(ids).not.toContain(named.body.data.id);
      expect(ids).toContain(unnamed.body.data.id);
      expect((await me.api.delete(`/v1/subscriptions?emitter_id=${cron}&listener_id=${webhookId()}&event_name=`)).status).toBe(204);
      ids = (await me.api.get('/v1/users/me/subscriptions')).body.data.map((s: any) => s.id);
      expect(ids).not.toContain(unnamed.body.data.id);
      expectError(await me.api.delete(`/v1/subscriptions?emitter_id=${cron}&listener_id=${webhookId()}&event_name=`), 404, 'not_found');
    });

    it('POST /v1/auto_subscriptions subscribes the listener to sources created afterwards only', async () => {
      const before = (await me.api.get('/v1/users/me/subscriptions')).body.data;
      const res = await me.api.post(`/v1/auto_subscriptions?event_name=auto-stream&listener_id=${webhookId()}`);
      try {
        expect(res.status).toBe(200);
        // README shape; the spec does not show this response.
        expectSingle(res.body, 'auto-subscription.json');
        expect(res.body.data).toMatchObject({ listener_id: webhookId(), event_name: 'auto-stream' });
        expect((await me.api.get('/v1/users/me/subscriptions')).body.data).toEqual(before);
        const id = await deployTiny();
        const after = await me.api.get('/v1/users/me/subscriptions');
        expectList(after.body, 'subscription.json');
        expect(after.body.data).toContainEqual({ id: expect.any(String), emitter_id: id, listener_id: webhookId(), event_name: 'auto-stream' });
      } finally {
        await me.api.delete(`/v1/auto_subscriptions?event_name=auto-stream&listener_id=${webhookId()}`);
      }
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('webhooks', () => {
    it('POST /v1/webhooks answers { data: <webhook> } with user_id and active true', () => {
      const res = made.webhook;
      expect(res.status).toBe(200);
      expectSingle(res.body, 'webhook.json');
      expect(res.body.data).toMatchObject({ user_id: me.id, url: `${receiver.url}/contract`, name: 'orders', description: 'new orders', active: true });
    });

    it.each([
      ['no protocol', 'example.com/hook'],
      ['another protocol', 'ftp://example.com/hook'],
      ['no hostname', 'http://'],
      ['a port but no hostname', 'https://:8443/hook'],
    ])('POST /v1/webhooks refuses a url with %s (400)', async (_what, bad) => {
      expectError(await me.api.post(`/v1/webhooks?url=${enc(bad)}&name=n&description=d`), 400, 'invalid_request');
    });

    it('POST /v1/webhooks accepts a port and a path', async () => {
      const res = await me.api.post(`/v1/webhooks?url=${enc('https://example.com:8443/a/b?c=d')}&name=n&description=d`);
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.url).toBe('https://example.com:8443/a/b?c=d');
    });

    it('POST /v1/webhooks takes name and description as optional, null when left out (README, Extensions and lenient readings)', async () => {
      const res = await me.api.post(`/v1/webhooks?url=${enc('https://example.com/bare')}`);
      expect(res.status, res.text).toBe(200);
      expectSingle(res.body, 'webhook.json');
      expect(res.body.data).toMatchObject({ name: null, description: null, url: 'https://example.com/bare', active: true });
    });

    it('GET /v1/users/me/webhooks answers a page of webhooks without user_id', async () => {
      const res = await me.api.get('/v1/users/me/webhooks?limit=100');
      expect(res.status).toBe(200);
      expectPage(res.body, 'webhook.json#listItem');
      const listed = res.body.data.find((w: any) => w.id === webhookId());
      const { id, name, description, url: hookUrl, active, created_at, updated_at } = made.webhook.body.data;
      expect(listed).toEqual({ id, name, description, url: hookUrl, active, created_at, updated_at });
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('workflows', () => {
    it('GET /v1/workflows/{id}/event_summaries answers a page of event summaries whose event is { raw_event }', async () => {
      const res = await me.api.get(`/v1/workflows/${workflowId()}/event_summaries?expand=event`);
      expect(res.status).toBe(200);
      expectPage(res.body, 'event-summary.json');
      expect(res.body.data).toEqual(workflowEmits);
      expect(workflowEmits.map((e) => e.event)).toEqual([{ raw_event: { n: 1, at: 'second' } }, { raw_event: { n: 1, at: 'first' } }]);
      for (const e of workflowEmits) expect(e.metadata).toMatchObject({ emitter_id: workflowId(), name: '' });
      expect(res.body.page_info).toMatchObject({ total_count: 2, count: 2 });
    });

    it('GET /v1/workflows/{id}/$errors/event_summaries answers the error with every field of the workflow error table', async () => {
      const res = await me.api.get(`/v1/workflows/${workflowId()}/$errors/event_summaries?expand=event`);
      expect(res.status).toBe(200);
      expectPage(res.body, 'event-summary.json');
      const [item] = workflowErrors;
      expect(res.body.data).toEqual(workflowErrors);
      expect(item.metadata).toMatchObject({ emitter_id: workflowId(), name: '$errors' });
      expectValid('event-summary.json#workflowErrorEvent', item.event);
      expect(item.event.original_event).toEqual({ fail: 'contract workflow failure' });
      expect(item.event.original_context).toMatchObject({
        workflow_id: workflowId(),
        deployment_id: `d_${workflowId().slice(2)}`,
        owner_id: me.id,
        verified: false,
      });
      expect(item.event.error).toMatchObject({ cellId: 'second', code: 'Error' });
      expect(item.event.error.stack).toContain('contract workflow failure');
    });

    it.each([
      '/event_summaries',
      '/$errors/event_summaries',
      '/event_summaries?expand=event&limit=5',
    ])('GET /v1/workflows/{unknown id}%s answers 404 with an error body', async (suffix) => {
      expectError(await me.api.get(`/v1/workflows/p_${UNKNOWN}${suffix}`), 404, 'not_found');
    });

    it("answers 404 for another account's workflow", async () => {
      const other = await account();
      expectError(await other.api.get(`/v1/workflows/${workflowId()}/event_summaries`), 404, 'not_found');
      expectError(await other.api.get(`/v1/workflows/${workflowId()}/$errors/event_summaries`), 404, 'not_found');
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('pagination', () => {
    const lists = [
      ['/v1/users/me/sources', 'source.json#listItem'],
      ['/v1/users/me/webhooks', 'webhook.json#listItem'],
      ['/v1/sources/{A}/event_summaries', 'event-summary.json'],
    ] as const;

    it.each(lists)('%s pages with limit, after and before', async (template, item) => {
      const path = template.replace('{A}', A().id);
      const all = await me.api.get(`${path}?limit=100`);
      expect(all.body.data.length).toBeGreaterThanOrEqual(2);
      const first = await me.api.get(`${path}?limit=1`);
      expect(first.status).toBe(200);
      expectPage(first.body, item);
      expect(first.body.page_info).toMatchObject({ total_count: all.body.page_info.total_count, count: 1 });
      expect(first.body.data[0].id).toBe(all.body.data[0].id);
      const second = await me.api.get(`${path}?limit=1&after=${enc(first.body.page_info.end_cursor)}`);
      expect(second.status).toBe(200);
      expectPage(second.body, item);
      expect(second.body.data[0].id).toBe(all.body.data[1].id);
      const back = await me.api.get(`${path}?limit=1&before=${enc(second.body.page_info.start_cursor)}`);
      expect(back.status).toBe(200);
      expectPage(back.body, item);
      expect(back.body.data[0].id).toBe(all.body.data[0].id);
    });

    it('the default page size is 10', async () => {
      const many = await account();
      // One after the other: concurrent deploys of one name can fail on PostgreSQL (a slug race, not this test's subject).
      for (let i = 0; i < 11; i++) await deployTiny(many);
      const res = await many.api.get('/v1/users/me/sources');
      expect(res.status).toBe(200);
      expectPage(res.body, 'source.json#listItem');
      expect(res.body.page_info).toMatchObject({ total_count: 11, count: 10 });
      const rest = await many.api.get(`/v1/users/me/sources?after=${enc(res.body.page_info.end_cursor)}`);
      expectPage(rest.body, 'source.json#listItem');
      expect(rest.body.page_info).toMatchObject({ total_count: 11, count: 1 });
    });

    it.each(['0', '101', '-1', '1.5', 'ten'])('limit=%s is refused with 400 on every paginated list', async (limit) => {
      for (const [template] of lists) {
        expectError(await me.api.get(`${template.replace('{A}', A().id)}?limit=${limit}`), 400, 'invalid_request', `${template} limit=${limit}`);
      }
    });

    it('a cursor the list did not give out is refused with 400', async () => {
      for (const [template] of lists) {
        const path = template.replace('{A}', A().id);
        expectError(await me.api.get(`${path}?after=not-a-cursor`), 400, 'invalid_cursor', `${path} after`);
        expectError(await me.api.get(`${path}?before=not-a-cursor`), 400, 'invalid_cursor', `${path} before`);
      }
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('empty lists (a fresh account)', () => {
    let fresh: Account;
    beforeAll(async () => {
      fresh = await account();
    });

    it('GET /v1/users/me/subscriptions answers { data: [] }', async () => {
      const res = await fresh.api.get('/v1/users/me/subscriptions');
      expect(res.status).toBe(200);
      expectList(res.body, 'subscription.json');
      expect(res.body).toEqual({ data: [] });
    });

    it.each(['/v1/users/me/sources', '/v1/users/me/webhooks'])('GET %s answers an empty page with string cursors', async (path) => {
      const res = await fresh.api.get(path);
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual([]);
      expect(res.body.page_info).toMatchObject({ total_count: 0, count: 0 });
      expectPage(res.body, path.endsWith('sources') ? 'source.json#listItem' : 'webhook.json#listItem');
    });

    it.each([
      'event_summaries',
      '$logs/event_summaries',
      '$errors/event_summaries',
    ])('GET /v1/sources/{id}/%s of a source without events answers an empty page with string cursors', async (suffix) => {
      const quiet = await account();
      const id = await deployTiny(quiet);
      const res = await quiet.api.get(`/v1/sources/${id}/${suffix}`);
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual([]);
      expect(res.body.page_info).toMatchObject({ total_count: 0, count: 0 });
      expectPage(res.body, 'event-summary.json');
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  // Concrete requests for each endpoint of the spec, used by the authentication and trailing-slash tests.

  interface Concrete {
    method: string;
    /** The path as the spec writes it, made concrete (with its /v1, except the stream). */
    path: string;
    body?: unknown;
    /** What the request answers when it is authenticated. */
    status: number;
  }

  let variant = 0;
  async function concrete(endpoint: SpecEndpoint): Promise<Concrete> {
    const n = ++variant;
    const base = { method: endpoint.method, status: endpoint.status };
    switch (label(endpoint)) {
      case 'POST /components':
        return { ...base, path: '/v1/components', body: { component_code: TINY } };
      case 'GET /components/{key|id}':
        return { ...base, path: `/v1/components/${tinyId()}` };
      case 'GET /components/registry/{key}':
        return { ...base, path: '/v1/components/registry/http-new-requests' };
      case 'GET /users/me/sources/':
        return { ...base, path: '/v1/users/me/sources/' };
      case 'POST /sources/':
        return { ...base, path: '/v1/sources/', body: { component_id: tinyId() } };
      case 'PUT /sources/{id}':
        return { ...base, path: `/v1/sources/${made.sourceT.body.data.id}`, body: { component_id: tinyId(), name: 'Contract T', active: true } };
      case 'DELETE /sources/{id}':
        return { ...base, path: `/v1/sources/${await deployTiny()}` };
      case 'GET /sources/{id}/sse':
        return { ...base, path: `/sources/${A().id}/sse` };
      case 'GET /sources/{id}/event_summaries':
        return { ...base, path: `/v1/sources/${A().id}/event_summaries` };
      case 'DELETE /sources/{id}/events':
        return { ...base, path: `/v1/sources/${made.sourceT.body.data.id}/events` };
      case 'POST /subscriptions':
        return { ...base, path: `/v1/subscriptions?emitter_id=${A().id}&listener_id=${webhookId()}&event_name=concrete` };
      case 'POST /auto_subscriptions':
        // An auto-subscription to a stream nothing emits; harmless to the sources created later.
        return { ...base, path: `/v1/auto_subscriptions?event_name=never-emitted&listener_id=${made.webhook2.body.data.id}` };
      case 'DELETE /subscriptions': {
        const sub = await me.api.post(`/v1/subscriptions?emitter_id=${A().id}&listener_id=${webhookId()}&event_name=to-delete-${n}`);
        expect(sub.status).toBe(200);
        return { ...base, path: `/v1/subscriptions?emitter_id=${A().id}&listener_id=${webhookId()}&event_name=to-delete-${n}` };
      }
      case 'GET /users/me/subscriptions':
        return { ...base, path: '/v1/users/me/subscriptions' };
      case 'POST /webhooks':
        return { ...base, path: `/v1/webhooks?url=${enc(`${receiver.url}/concrete`)}&name=concrete&description=made+by+a+test` };
      case 'GET /users/me/webhooks':
        return { ...base, path: '/v1/users/me/webhooks' };
      case 'GET /workflows/{workflow_id}/event_summaries':
        return { ...base, path: `/v1/workflows/${workflowId()}/event_summaries` };
      case 'GET /workflows/{workflow_id}/$errors/event_summaries':
        return { ...base, path: `/v1/workflows/${workflowId()}/$errors/event_summaries` };
      case 'GET /users/me':
        return { ...base, path: '/v1/users/me' };
      default:
        throw new Error(`no concrete request for ${label(endpoint)}`);
    }
  }

  describe('authentication', () => {
    it.each(SPEC_ENDPOINTS.map((e) => [label(e), e] as const))('%s answers 401 without a key and with an unknown key', async (_label, endpoint) => {
      for (const key of [null, 'trb_not-a-key']) {
        const call = await concrete(endpoint);
        const res = await send(call.method, url(call.path), { key, body: call.body });
        expectError(res, 401, 'unauthorized', `${call.method} ${call.path} key=${key}`);
        expect(res.headers.get('www-authenticate')).toBe('Bearer');
      }
    });
  });

  describe('paths with and without a trailing slash', () => {
    it.each(SPEC_ENDPOINTS.map((e) => [label(e), e] as const))('%s answers the same with and without a trailing slash', async (_label, endpoint) => {
      for (const form of [withoutSlash, withSlash]) {
        const call = await concrete(endpoint);
        const path = form(call.path);
        const res = await send(call.method, url(path), { key: me.key, body: call.body });
        expect.soft(res.status, `${call.method} ${path}: ${res.text.slice(0, 300)}`).toBe(call.status);
        if (endpoint.response && res.status === call.status && call.status < 300) {
          expect.soft(problemsOf(endpoint.response.envelope, res.body), `${call.method} ${path}: envelope`).toEqual([]);
          const data = res.body?.data;
          const items = Array.isArray(data) ? data : [data];
          for (const item of items) expect.soft(problemsOf(endpoint.response.item, item), `${call.method} ${path}: ${JSON.stringify(item)}`).toEqual([]);
        }
      }
      if (endpoint.path === '/auto_subscriptions') {
        await me.api.delete(`/v1/auto_subscriptions?event_name=never-emitted&listener_id=${made.webhook2.body.data.id}`);
      }
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('error bodies', () => {
    const unknownCases: Array<[string, () => Promise<RawResponse>]> = [
      ['GET /v1/components/{unknown id}', () => me.api.get(`/v1/components/sc_${UNKNOWN}`)],
      ['GET /v1/components/{unknown key}', () => me.api.get('/v1/components/no-such-key')],
      ['GET /v1/components/registry/{unknown key}', () => me.api.get('/v1/components/registry/no_such-key')],
      ['POST /v1/sources with an unknown component_id', () => me.api.post('/v1/sources', { component_id: `sc_${UNKNOWN}` })],
      ['PUT /v1/sources/{unknown id}', () => me.api.put(`/v1/sources/dc_${UNKNOWN}`, { component_id: tinyId() })],
      ['DELETE /v1/sources/{unknown id}', () => me.api.delete(`/v1/sources/dc_${UNKNOWN}`)],
      ['GET /v1/sources/{unknown id}/event_summaries', () => me.api.get(`/v1/sources/dc_${UNKNOWN}/event_summaries`)],
      ['DELETE /v1/sources/{unknown id}/events', () => me.api.delete(`/v1/sources/dc_${UNKNOWN}/events`)],
      ['GET /sources/{unknown id}/sse', () => send('GET', url(`/sources/dc_${UNKNOWN}/sse`), { key: me.key })],
      ['POST /v1/subscriptions with an unknown emitter', () => me.api.post(`/v1/subscriptions?emitter_id=dc_${UNKNOWN}&listener_id=${webhookId()}`)],
      ['POST /v1/subscriptions with an unknown listener', () => me.api.post(`/v1/subscriptions?emitter_id=${A().id}&listener_id=wh_${UNKNOWN}`)],
      ['POST /v1/auto_subscriptions with an unknown listener', () => me.api.post(`/v1/auto_subscriptions?event_name=x&listener_id=wh_${UNKNOWN}`)],
      ['DELETE /v1/subscriptions of no subscription', () => me.api.delete(`/v1/subscriptions?emitter_id=dc_${UNKNOWN}&listener_id=wh_${UNKNOWN}&event_name=`)],
      ["GET /v1/components/{another account's id}", async () => (await account()).api.get(`/v1/components/${made.component.body.data.id}`)],
      ["GET /v1/sources/{another account's id}/event_summaries", async () => (await account()).api.get(`/v1/sources/${A().id}/event_summaries`)],
    ];

    it.each(unknownCases)('%s answers 404 with an error body', async (_what, call) => {
      expectError(await call(), 404, 'not_found');
    });

    const badCases: Array<[string, () => Promise<RawResponse>]> = [
      ['POST /v1/components with neither component_code nor component_url', () => me.api.post('/v1/components', {})],
      ['POST /v1/components with a component_code that is not a string', () => me.api.post('/v1/components', { component_code: 42 })],
      ['POST /v1/sources with none of component_id, component_code, component_url', () => me.api.post('/v1/sources', { name: 'x' })],
      [
        'PUT /v1/sources/{id} with an active that is not a boolean',
        () => me.api.put(`/v1/sources/${made.sourceT.body.data.id}`, { component_id: tinyId(), active: 'yes' }),
      ],
      ['POST /v1/subscriptions without emitter_id', () => me.api.post(`/v1/subscriptions?listener_id=${webhookId()}`)],
      ['POST /v1/subscriptions without listener_id', () => me.api.post(`/v1/subscriptions?emitter_id=${A().id}`)],
      ['POST /v1/auto_subscriptions without event_name', () => me.api.post(`/v1/auto_subscriptions?listener_id=${webhookId()}`)],
      ['POST /v1/auto_subscriptions without listener_id', () => me.api.post('/v1/auto_subscriptions?event_name=x')],
      ['DELETE /v1/subscriptions without emitter_id', () => me.api.delete(`/v1/subscriptions?listener_id=${webhookId()}&event_name=`)],
      ['POST /v1/webhooks without url', () => me.api.post('/v1/webhooks?name=n&description=d')],
      ['GET /v1/sources/{id}/event_summaries?expand=everything', () => me.api.get(`/v1/sources/${A().id}/event_summaries?expand=everything`)],
      ['DELETE /v1/sources/{id}/events?start_id=not-an-id', () => me.api.delete(`/v1/sources/${made.sourceT.body.data.id}/events?start_id=not-an-id`)],
      ['GET /v1/users/me?include=id;drop', () => me.api.get('/v1/users/me?include=id;drop')],
      [
        'POST /v1/components with malformed JSON',
        () => request('POST', url('/v1/components'), { key: me.key, raw: { body: '{"component_code": ', contentType: 'application/json' } }),
      ],
    ];

    it.each(badCases)('%s answers 400 with an error body', async (_what, call) => {
      expectError(await call(), 400, 'invalid_request');
    });

    it('code that does not load answers 422 component_invalid with an error body', async () => {
      expectError(await me.api.post('/v1/components', { component_code: 'module.exports = {' }), 422, 'component_invalid');
      expectError(await me.api.post('/v1/sources', { component_code: 'module.exports = { name: 1 }' }), 422, 'component_invalid');
    });

    it('configured_props that do not validate answer 422 props_invalid with an error body', async () => {
      const res = await me.api.post('/v1/sources', {
        component_id: made.component.body.data.id,
        configured_props: { count: 99, timer: { intervalSeconds: 1 } },
      });
      expectError(res, 422, 'props_invalid');
    });

    it('an unknown route answers 404 with an error body', async () => {
      expectError(await me.api.get('/v1/no/such/route'), 404, 'not_found');
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  // include / exclude: "accepted by every endpoint", as query parameters on GET or in the body of POST (and PUT).
  // Each field of each object the endpoint returns is included alone, then excluded alone; the rest of the answer
  // (envelope, page_info) stays as it is. Values are compared with the unfiltered answer where the request does not
  // make a new resource each time.

  interface FieldCase {
    label: string;
    item: SchemaName;
    envelope: 'envelope.json' | 'page.json' | 'list.json';
    status?: number;
    /** The request with the field selection (none for the reference answer). */
    call: (selection: Record<string, string>) => Promise<RawResponse>;
    sameValues: boolean;
    /** Fields whose values may differ from one answer to the next. */
    volatile?: string[];
  }

  /** `path` with the selection added to its query string. */
  const query = (path: string, selection: Record<string, string>) => {
    const parts = Object.entries(selection).map(([k, v]) => `${k}=${enc(v)}`);
    return parts.length === 0 ? path : `${path}${path.includes('?') ? '&' : '?'}${parts.join('&')}`;
  };

  const fieldCases: FieldCase[] = [
    {
      label: 'GET /v1/users/me',
      item: 'user.json',
      envelope: 'envelope.json',
      call: (s) => me.api.get(query('/v1/users/me', s)),
      sameValues: true,
      volatile: ['daily_compute_time_used', 'daily_invocations_used'],
    },
    {
      label: 'GET /v1/users/me (paid plan)',
      item: 'user.json',
      envelope: 'envelope.json',
      call: (s) => paid.api.get(query('/v1/users/me', s)),
      sameValues: true,
      volatile: ['billing_period_invocations'],
    },
    {
      label: 'POST /v1/components',
      item: 'component.json',
      envelope: 'envelope.json',
      call: (s) => me.api.post('/v1/components', { component_code: TINY, ...s }),
      sameValues: false,
    },
    {
      label: 'GET /v1/components/{id}',
      item: 'component.json',
      envelope: 'envelope.json',
      call: (s) => me.api.get(query(`/v1/components/${made.component.body.data.id}`, s)),
      sameValues: true,
    },
    {
      label: 'GET /v1/components/{key}',
      item: 'component.json',
      envelope: 'envelope.json',
      call: (s) => me.api.get(query('/v1/components/contract-showcase', s)),
      sameValues: true,
    },
    {
      label: 'GET /v1/components/registry/{key}',
      item: 'component.json',
      envelope: 'envelope.json',
      call: (s) => me.api.get(query('/v1/components/registry/http-new-requests', s)),
      sameValues: true,
    },
    {
      label: 'GET /v1/users/me/sources',
      item: 'source.json#listItem',
      envelope: 'page.json',
      call: (s) => me.api.get(query('/v1/users/me/sources?limit=5', s)),
      sameValues: true,
    },
    {
      label: 'POST /v1/sources',
      item: 'source.json',
      envelope: 'envelope.json',
      call: (s) => me.api.post('/v1/sources', { component_id: tinyId(), ...s }),
      sameValues: false,
    },
    {
      label: 'PUT /v1/sources/{id}',
      item: 'source.json#updated',
      envelope: 'envelope.json',
      call: (s) => me.api.put(`/v1/sources/${made.sourceT.body.data.id}`, { component_id: tinyId(), name: 'Contract T', active: true, ...s }),
      sameValues: true,
      volatile: ['updated_at'],
    },
    {
      label: 'GET /v1/sources/{id}/event_summaries',
      item: 'event-summary.json',
      envelope: 'page.json',
      call: (s) => me.api.get(query(`/v1/sources/${A().id}/event_summaries`, s)),
      sameValues: true,
    },
    {
      label: 'GET /v1/sources/{id}/event_summaries?expand=event',
      item: 'event-summary.json',
      envelope: 'page.json',
      call: (s) => me.api.get(query(`/v1/sources/${A().id}/event_summaries?expand=event`, s)),
      sameValues: true,
    },
    {
      label: 'GET /v1/sources/{id}/$errors/event_summaries (README)',
      item: 'event-summary.json',
      envelope: 'page.json',
      call: (s) => me.api.get(query(`/v1/sources/${A().id}/$errors/event_summaries`, s)),
      sameValues: true,
    },
    {
      label: 'POST /v1/subscriptions (selection in the body)',
      item: 'subscription.json',
      envelope: 'envelope.json',
      call: (s) => me.api.post(`/v1/subscriptions?emitter_id=${A().id}&listener_id=${webhookId()}&event_name=fields`, s),
      sameValues: true,
    },
    {
      label: 'POST /v1/subscriptions (selection in the query)',
      item: 'subscription.json',
      envelope: 'envelope.json',
      call: (s) => me.api.post(query(`/v1/subscriptions?emitter_id=${A().id}&listener_id=${webhookId()}&event_name=fields`, s)),
      sameValues: true,
    },
    {
      label: 'GET /v1/users/me/subscriptions',
      item: 'subscription.json',
      envelope: 'list.json',
      call: (s) => me.api.get(query('/v1/users/me/subscriptions', s)),
      sameValues: true,
    },
    {
      label: 'POST /v1/auto_subscriptions (selection in the body)',
      item: 'auto-subscription.json',
      envelope: 'envelope.json',
      call: (s) => me.api.post(`/v1/auto_subscriptions?event_name=never-emitted&listener_id=${made.webhook2.body.data.id}`, s),
      sameValues: true,
    },
    {
      label: 'POST /v1/webhooks (selection in the body)',
      item: 'webhook.json',
      envelope: 'envelope.json',
      call: (s) => me.api.post(`/v1/webhooks?url=${enc(`${receiver.url}/fields`)}&name=fields&description=d`, s),
      sameValues: false,
    },
    {
      label: 'POST /v1/webhooks (selection in the query)',
      item: 'webhook.json',
      envelope: 'envelope.json',
      call: (s) => me.api.post(query(`/v1/webhooks?url=${enc(`${receiver.url}/fields`)}&name=fields&description=d`, s)),
      sameValues: false,
    },
    {
      label: 'GET /v1/users/me/webhooks',
      item: 'webhook.json#listItem',
      envelope: 'page.json',
      call: (s) => me.api.get(query('/v1/users/me/webhooks?limit=5', s)),
      sameValues: true,
    },
  ];

  describe('include and exclude', () => {
    afterAll(async () => {
      await me?.api.delete(`/v1/auto_subscriptions?event_name=never-emitted&listener_id=${made.webhook2?.body.data.id}`);
    });

    const itemsOf = (body: any): any[] => (Array.isArray(body?.data) ? body.data : [body?.data]);

    for (const mode of ['include', 'exclude'] as const) {
      it.each(fieldCases.map((c) => [c.label, c] as const))(`%s: ${mode}=<field> for each field of the object`, async (_label, c) => {
        const reference = await c.call({});
        expect(reference.status, reference.text.slice(0, 300)).toBe(c.status ?? 200);
        const refItems = itemsOf(reference.body);
        expect(refItems.length).toBeGreaterThan(0);
        const present = fieldsOf(c.item).filter((f) => refItems.some((item) => item && f in item));
        expect(present.length).toBeGreaterThan(0);
        for (const field of present) {
          const res = await c.call({ [mode]: field });
          const what = `${c.label} ${mode}=${field}`;
          expect.soft(res.status, `${what}: ${res.text.slice(0, 300)}`).toBe(c.status ?? 200);
          if (res.status !== (c.status ?? 200)) continue;
          expect.soft(res.body && Object.keys(res.body).sort(), `${what}: envelope keys`).toEqual(Object.keys(reference.body).sort());
          if (c.envelope === 'page.json') {
            expectValid('page-info.json', res.body.page_info, what);
            expect.soft(res.body.page_info, `${what}: page_info untouched`).toEqual(reference.body.page_info);
          }
          const items = itemsOf(res.body);
          expect.soft(items.length, `${what}: item count`).toBe(refItems.length);
          items.forEach((item, i) => {
            const ref = refItems[i];
            const expectedKeys = mode === 'include' ? Object.keys(ref).filter((k) => k === field) : Object.keys(ref).filter((k) => k !== field);
            expect.soft(Object.keys(item ?? {}).sort(), `${what}: fields of item ${i}`).toEqual(expectedKeys.sort());
            expectValidPart(c.item, item, what);
            if (c.sameValues) {
              for (const k of Object.keys(item ?? {})) {
                if (!c.volatile?.includes(k)) expect.soft(item[k], `${what}: value of ${k}`).toEqual(ref[k]);
              }
            }
          });
        }
      });
    }

    it('include with several fields keeps each of them (GET query and POST body)', async () => {
      const got = await me.api.get('/v1/users/me/sources?include=id,name,active');
      expect(got.status).toBe(200);
      for (const item of got.body.data) expect(Object.keys(item).sort()).toEqual(['active', 'id', 'name']);
      const posted = await me.api.post('/v1/components', { component_code: TINY, exclude: 'code,configurable_props,code_hash' });
      expect(posted.status).toBe(200);
      expect(Object.keys(posted.body.data).sort()).toEqual(['created_at', 'id', 'name', 'updated_at', 'version']);
    });

    it('include with a space after the comma ("id, email") keeps both fields', async () => {
      const res = await me.api.get(`/v1/users/me?include=${enc('id, email')}`);
      expect(res.status, res.text).toBe(200);
      expect(res.body.data).toEqual({ id: me.id, email: expect.any(String) });
    });

    it.each(['include=id', 'exclude=id'])('GET /sources/{id}/sse?%s is accepted (200)', async (selection) => {
      const res = await send('GET', url(`/sources/${A().id}/sse?${selection}`), { key: me.key });
      expect(res.status, res.text).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    });

    it.each(['include=id', 'exclude=id'])('DELETE /v1/sources/{id}?%s answers 204 and deletes', async (selection) => {
      const id = await deployTiny();
      const res = await me.api.delete(`/v1/sources/${id}?${selection}`);
      expect(res.status, res.text).toBe(204);
      expect((await me.api.get('/v1/users/me/sources?limit=100')).body.data.map((s: any) => s.id)).not.toContain(id);
    });

    it.each(['include=id', 'exclude=id'])('DELETE /v1/sources/{id}/events?%s answers 202', async (selection) => {
      const res = await me.api.delete(`/v1/sources/${made.sourceT.body.data.id}/events?${selection}`);
      expect(res.status, res.text).toBe(202);
    });

    it.each(['include=id', 'exclude=id'])('DELETE /v1/subscriptions?…&%s answers 204 and deletes', async (selection) => {
      const triple = `emitter_id=${A().id}&listener_id=${webhookId()}&event_name=del-${selection.replace('=', '-')}`;
      const sub = await me.api.post(`/v1/subscriptions?${triple}`);
      expect(sub.status).toBe(200);
      const res = await me.api.delete(`/v1/subscriptions?${triple}&${selection}`);
      expect.soft(res.status, `DELETE /v1/subscriptions?${triple}&${selection}: ${res.text}`).toBe(204);
      expect((await me.api.get('/v1/users/me/subscriptions')).body.data.map((s: any) => s.id)).not.toContain(sub.body.data.id);
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('the OpenAPI document', () => {
    it('(the comparison itself) finds undescribed fields, narrower types and extra requirements, and follows $ref', () => {
      const endpoint = SPEC_ENDPOINTS.find((e) => e.path === '/users/me/webhooks')!;
      const spec = responseSchemaOf(endpoint);
      const doc = {
        components: {
          schemas: {
            Info: { type: 'object', properties: { total_count: { type: 'string' }, count: { type: 'number' }, start_cursor: { type: ['string', 'null'] } } },
          },
        },
      };
      const oas = {
        type: 'object',
        required: ['page_info', 'data', 'extra'],
        properties: { page_info: { $ref: '#/components/schemas/Info' }, data: { type: 'array', items: { type: 'object', properties: { id: {} } } }, extra: {} },
      };
      expect(describeProblems(doc, spec, oas)).toEqual(
        expect.arrayContaining([
          '$.page_info.total_count: the spec allows integer, OpenAPI string',
          '$.page_info.end_cursor: required by the spec, not described by OpenAPI',
          '$.data[].name: required by the spec, not described by OpenAPI',
          '$.extra: required by OpenAPI, optional or absent in the spec',
        ]),
      );
      expect(describeProblems(doc, spec, oas).join('\n')).not.toMatch(/\.count|start_cursor|\.id:/);
      expect(describeProblems({}, spec, spec)).toEqual([]);
      const user = responseSchemaOf(SPEC_ENDPOINTS.find((e) => e.path === '/users/me')!);
      expect(describeProblems({}, user, user)).toEqual([]);
    });

    it('is served at /v1/openapi.json', () => {
      expect(openapi?.openapi).toMatch(/^3\./);
      expect(typeof openapi.paths).toBe('object');
    });

    it.each(SPEC_ENDPOINTS.map((e) => [label(e), e] as const))('documents %s with its status and a schema describing the spec response', (_label, endpoint) => {
      const operation = operationOf(openapi, endpoint);
      expect(operation, `${label(endpoint)} is in the OpenAPI document`).toBeDefined();
      const documented = Object.keys(operation.responses ?? {});
      expect(documented, `${label(endpoint)} documents status ${endpoint.status}`).toContain(String(endpoint.status));
      const spec = responseSchemaOf(endpoint);
      if (!spec) return;
      const oas = operation.responses?.[String(endpoint.status)]?.content?.['application/json']?.schema;
      expect(oas, `${label(endpoint)}: an application/json schema for ${endpoint.status}`).toBeDefined();
      expect(describeProblems(openapi, spec, oas)).toEqual([]);
    });
  });
});
