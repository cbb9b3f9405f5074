// Ownership: every endpoint, extensions included, answers another account's ids with the 404 an unknown id gets, and
// changes nothing of the owner's: sources, components, webhooks, subscriptions, workflows, runs, connected accounts,
// data stores, the options API, deliveries and both live streams.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client, request } from '../helpers/client.js';
import { emitterSource } from '../helpers/components.js';
import { workflowCalls } from '../helpers/workflows.js';
import { waitFor } from '../helpers/wait.js';

/** A component with an options() prop, a data_store prop and a key of its own, to publish in the owner's registry. */
const COMPONENT = `module.exports = {
  name: "owned", key: "owned-component", version: "0.0.1",
  props: { size: { type: "string", async options() { return ["s", "m"]; } }, store: { type: "data_store" } },
  async run() { await this.store.set("k", 1); this.$emit({ n: 1 }); },
};`;
const STEP = 'module.exports = { async run({ steps }) { return steps.trigger.event; } };';

type Call = [method: string, path: string, body?: unknown];

describe.each(DIALECTS)("another account's resources on %s", (dialect) => {
  let server: TestServer;
  let owner: ReturnType<typeof client>;
  let intruder: ReturnType<typeof client>;
  let intruderKey: string;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    server = await startTestServer(dialect, { allowPrivateNetwork: true });
    owner = client(server.url, (await server.createUser()).apiKey);
    intruderKey = (await server.createUser()).apiKey;
    intruder = client(server.url, intruderKey);

    const ok = async (res: Promise<{ status: number; body: any }>, status = 200) => {
      const answer = await res;
      expect(answer.status, JSON.stringify(answer.body)).toBe(status);
      return answer.body.data;
    };
    ids.component = (await ok(owner.post('/v1/components', { component_code: COMPONENT }))).id;
    await ok(owner.post(`/v1/components/${ids.component}/publish`, {}));
    ids.source = (await ok(owner.post('/v1/sources', { component_id: ids.component, configured_props: { size: 's', store: 'owned' } }))).id;
    ids.webhook = (await ok(owner.post(`/v1/webhooks?url=${encodeURIComponent('http://127.0.0.1:9/owned')}`))).id;
    await ok(owner.post(`/v1/subscriptions?emitter_id=${ids.source}&listener_id=${ids.webhook}`));
    const workflow = await ok(owner.post('/v1/workflows', { name: 'owned', steps: [{ name: 'echo', component_code: STEP }] }));
    ids.workflow = workflow.id;
    ids.stepComponent = workflow.steps[0].component_id;
    ids.run = (await ok(owner.post(`/v1/workflows/${ids.workflow}/run`, { n: 1 }), 202)).id;
    ids.account = (await ok(owner.post('/v1/accounts', { app: 'acme', name: 'Acme', credentials: { api_key: 'owned-key' } }))).id;
    expect((await owner.post(`/v1/sources/${ids.source}/run`, {})).status).toBe(202);
    // The run and the source's run are done, so that the owner's data holds still between the two snapshots.
    await workflowCalls(() => owner).finishedRuns(workflow.id, 1);
    const events = await waitFor(
      () => owner.get(`/v1/sources/${ids.source}/event_summaries`),
      (res) => res.body.data.length === 1,
      { what: "the owner's source to emit" },
    );
    ids.event = events.body.data[0].id;
    ids.dataStore = (await owner.get('/v1/data_stores')).body.data[0].id;

    const mine = await intruder.post('/v1/sources', { component_code: emitterSource() });
    ids.mySource = mine.body.data.id;
    ids.myWebhook = (await intruder.post(`/v1/webhooks?url=${encodeURIComponent('http://127.0.0.1:9/mine')}`)).body.data.id;
    ids.myWorkflow = (await ok(intruder.post('/v1/workflows', { name: 'mine', steps: [{ name: 'echo', component_code: STEP }] }))).id;
  });
  afterAll(() => server?.destroy());

  /** Everything of the owner's the intruder might have changed, read by the owner. */
  async function ownersData(): Promise<unknown> {
    const paths = [
      '/v1/users/me/sources?limit=100',
      '/v1/users/me/components?limit=100',
      '/v1/users/me/webhooks?limit=100',
      '/v1/users/me/subscriptions',
      '/v1/users/me/workflows?limit=100',
      '/v1/users/me/accounts?limit=100',
      '/v1/data_stores',
      `/v1/data_stores/${ids.dataStore}/keys`,
      `/v1/data_stores/${ids.dataStore}/records?key=k`,
      `/v1/sources/${ids.source}/event_summaries?expand=event`,
      `/v1/workflows/${ids.workflow}/runs`,
      `/v1/webhooks/${ids.webhook}`,
      `/v1/accounts/${ids.account}`,
      '/v1/components/registry/owned-component',
    ];
    return Promise.all(paths.map(async (path) => [path, (await owner.get(path)).body]));
  }

  it('answers 404 not_found naming the resource on every endpoint, and changes nothing of the owner', async () => {
    const before = await ownersData();
    const { component, stepComponent, source, webhook, workflow, run, account, dataStore, event } = ids;
    const notFound = (what: string) => ({ error: `${what} not found`, code: 'not_found' });
    const cases: Array<[Call, ReturnType<typeof notFound>]> = [
      [['GET', `/v1/components/${component}`], notFound(`component "${component}"`)],
      [['GET', `/v1/components/${stepComponent}`], notFound(`component "${stepComponent}"`)],
      [['GET', '/v1/components/owned-component'], notFound('component "owned-component"')],
      [['GET', '/v1/components/registry/owned-component'], notFound('registry component "owned-component"')],
      [['POST', `/v1/components/${component}/props/size/options`, {}], notFound(`component "${component}"`)],
      [['POST', `/v1/components/${component}/props/reload`, {}], notFound(`component "${component}"`)],
      [['POST', `/v1/components/${component}/publish`, {}], notFound(`component "${component}"`)],
      [['POST', '/v1/sources', { component_id: component, configured_props: { size: 's', store: 'owned' } }], notFound(`component "${component}"`)],
      [['POST', '/v1/sources', { key: 'owned-component', configured_props: { size: 's', store: 'owned' } }], notFound('registry component "owned-component"')],
      [['GET', `/v1/sources/${source}`], notFound(`source "${source}"`)],
      [['PUT', `/v1/sources/${source}`, { active: false }], notFound(`source "${source}"`)],
      [['PATCH', `/v1/sources/${source}`, { name: 'mine now' }], notFound(`source "${source}"`)],
      [['DELETE', `/v1/sources/${source}`], notFound(`source "${source}"`)],
      [['POST', `/v1/sources/${source}/run`, {}], notFound(`source "${source}"`)],
      [['GET', `/v1/sources/${source}/event_summaries`], notFound(`source "${source}"`)],
      [['GET', `/v1/sources/${source}/$logs/event_summaries`], notFound(`source "${source}"`)],
      [['GET', `/v1/sources/${source}/$errors/event_summaries`], notFound(`source "${source}"`)],
      [['DELETE', `/v1/sources/${source}/events?start_id=${event}`], notFound(`source "${source}"`)],
      [['GET', `/v1/sources/${source}/sse`], notFound(`source "${source}"`)],
      [['GET', `/sources/${source}/sse`], notFound(`source "${source}"`)],
      [['PATCH', `/v1/sources/${ids.mySource}`, { component_id: component }], notFound(`component "${component}"`)],
      [['GET', `/v1/webhooks/${webhook}`], notFound(`webhook "${webhook}"`)],
      [['GET', `/v1/webhooks/${webhook}/deliveries`], notFound(`webhook "${webhook}"`)],
      [['DELETE', `/v1/webhooks/${webhook}`], notFound(`webhook "${webhook}"`)],
      [['POST', `/v1/subscriptions?emitter_id=${source}&listener_id=${ids.myWebhook}`], notFound(`emitter "${source}"`)],
      [['POST', `/v1/subscriptions?emitter_id=${workflow}&listener_id=${ids.myWebhook}`], notFound(`emitter "${workflow}"`)],
      [['POST', `/v1/subscriptions?emitter_id=${source}&listener_id=${ids.myWorkflow}`], notFound(`emitter "${source}"`)],
      [['POST', `/v1/subscriptions?emitter_id=${ids.mySource}&listener_id=${webhook}`], notFound(`listener "${webhook}"`)],
      [['POST', `/v1/subscriptions?emitter_id=${ids.mySource}&listener_id=${source}`], notFound(`listener "${source}"`)],
      [['POST', `/v1/subscriptions?emitter_id=${ids.mySource}&listener_id=${workflow}`], notFound(`listener "${workflow}"`)],
      [['POST', `/v1/auto_subscriptions?event_name=default&listener_id=${workflow}`], notFound(`listener "${workflow}"`)],
      [['GET', `/v1/workflows/${workflow}`], notFound(`workflow "${workflow}"`)],
      [['PUT', `/v1/workflows/${workflow}`, { name: 'mine now' }], notFound(`workflow "${workflow}"`)],
      [['DELETE', `/v1/workflows/${workflow}`], notFound(`workflow "${workflow}"`)],
      [['POST', `/v1/workflows/${workflow}/run`, { n: 2 }], notFound(`workflow "${workflow}"`)],
      [['GET', `/v1/workflows/${workflow}/runs`], notFound(`workflow "${workflow}"`)],
      [['GET', `/v1/workflows/${workflow}/runs/${run}`], notFound(`workflow "${workflow}"`)],
      [['POST', `/v1/workflows/${workflow}/runs/${run}/replay`, {}], notFound(`workflow "${workflow}"`)],
      [['GET', `/v1/workflows/${ids.myWorkflow}/runs/${run}`], notFound(`run "${run}" of workflow "${ids.myWorkflow}"`)],
      [['POST', `/v1/workflows/${ids.myWorkflow}/runs/${run}/replay`, {}], notFound(`run "${run}" of workflow "${ids.myWorkflow}"`)],
      [['GET', `/v1/workflows/${workflow}/event_summaries`], notFound(`workflow "${workflow}"`)],
      [['GET', `/v1/workflows/${workflow}/$errors/event_summaries`], notFound(`workflow "${workflow}"`)],
      [['GET', `/v1/workflows/${workflow}/sse`], notFound(`workflow "${workflow}"`)],
      [['GET', `/workflows/${workflow}/sse`], notFound(`workflow "${workflow}"`)],
      [
        ['POST', '/v1/workflows', { name: 'x', trigger: { type: 'source', source_id: source, event_name: '' }, steps: [{ name: 's', component_code: STEP }] }],
        notFound(`source "${source}"`),
      ],
      [['POST', '/v1/workflows', { name: 'y', steps: [{ name: 's', component_id: stepComponent }] }], notFound(`steps[0] ("s"): component "${stepComponent}"`)],
      [['PUT', `/v1/workflows/${ids.myWorkflow}`, { trigger: { type: 'source', source_id: source, event_name: '$errors' } }], notFound(`source "${source}"`)],
      [
        ['PUT', `/v1/workflows/${ids.myWorkflow}`, { steps: [{ name: 's', component_id: component, configured_props: { size: 's', store: 'x' } }] }],
        notFound(`steps[0] ("s"): component "${component}"`),
      ],
      [['GET', `/v1/accounts/${account}`], notFound(`connected account "${account}"`)],
      [['PUT', `/v1/accounts/${account}`, { name: 'mine now' }], notFound(`connected account "${account}"`)],
      [['DELETE', `/v1/accounts/${account}?force=true`], notFound(`connected account "${account}"`)],
      [['GET', `/v1/data_stores/${dataStore}/keys`], notFound(`data store "${dataStore}"`)],
      [['GET', '/v1/data_stores/owned/keys'], notFound('data store "owned"')],
      [['GET', `/v1/data_stores/${dataStore}/records?key=k`], notFound(`data store "${dataStore}"`)],
      [['GET', '/v1/data_stores/owned/records?key=k'], notFound('data store "owned"')],
      [['DELETE', `/v1/data_stores/${dataStore}/records?key=k`], notFound(`data store "${dataStore}"`)],
      [['DELETE', '/v1/data_stores/owned/records?key=k'], notFound('data store "owned"')],
    ];
    for (const [[method, path, body], expected] of cases) {
      const res = await request(method, `${server.url}${path}`, { key: intruderKey, body });
      expect([res.status, res.body], `${method} ${path}`).toEqual([404, expected]);
    }
    // A HEAD on a stream answers as its GET would (it has no body).
    for (const path of [`/v1/sources/${source}/sse`, `/workflows/${workflow}/sse`]) {
      expect((await request('HEAD', `${server.url}${path}`, { key: intruderKey })).status, `HEAD ${path}`).toBe(404);
    }
    // The streaming save refuses another account's workflow before its stream opens, in JSON, as the plain route does.
    const streamed = await request('PUT', `${server.url}/v1/workflows/${workflow}/stream`, { key: intruderKey, body: { name: 'mine now' } });
    expect([streamed.status, streamed.body]).toEqual([404, notFound(`workflow "${workflow}"`)]);
    // The intruder's own lists show none of it.
    for (const path of [
      '/v1/users/me/sources',
      '/v1/users/me/components',
      '/v1/users/me/webhooks',
      '/v1/users/me/workflows',
      '/v1/users/me/accounts',
      '/v1/data_stores',
    ]) {
      const ids = (await intruder.get(`${path}?limit=100`)).body.data.map((item: { id: string }) => item.id);
      expect(ids, path).not.toContain(source);
      for (const id of Object.values({ component, stepComponent, webhook, workflow, account, dataStore })) expect(ids, path).not.toContain(id);
    }
    expect((await intruder.get('/v1/users/me/subscriptions')).body).toEqual({ data: [] });
    expect(await ownersData()).toEqual(before);
  });
});
