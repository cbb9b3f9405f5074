// A step ported from the reference service as its docs write it today, `$.send.emit(event, channel)`, emits the event
// on that channel, as the older `$.send.emit({ raw_event, name })` does.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';
import { workflowCalls } from '../helpers/workflows.js';

const EMIT_STEP = `export default defineComponent({
  async run({ steps, $ }) {
    $.send.emit({ name: "Yoda" });
    $.send.emit({ name: "Luke", n: steps.trigger.event.n }, "jedi");
    $.send.emit({ raw_event: { name: "Han" }, name: "jedi" });
  },
});`;

const ECHO_STEP = 'export default defineComponent({ async run({ steps }) { return steps.trigger.event; } });';

describe.each(DIALECTS)('$.send.emit forms on %s', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  const { create, finishedRuns } = workflowCalls(() => api);

  beforeAll(async () => {
    server = await startTestServer(dialect);
    api = client(server.url, (await server.createUser()).apiKey);
  });
  afterAll(() => server?.destroy());

  it('takes (event, channel) as the reference service documents it, and the { raw_event, name } object', async () => {
    const emitter = await create({ name: 'emitter', steps: [{ name: 'emit', component_code: EMIT_STEP }] });
    const listener = await create({ name: 'jedi listener', steps: [{ name: 'echo', component_code: ECHO_STEP }] });
    const sub = await api.post(`/v1/subscriptions?emitter_id=${emitter.id}&listener_id=${listener.id}&event_name=jedi`);
    expect(sub.status).toBe(200);

    expect((await api.post(`/v1/workflows/${emitter.id}/run`, { n: 1 })).status).toBe(202);
    const [run] = await finishedRuns(emitter.id, 1);
    expect(run.steps.map((s: any) => [s.name, s.status, s.error])).toEqual([['emit', 'succeeded', undefined]]);

    const emitted = await api.get(`/v1/workflows/${emitter.id}/event_summaries`);
    expect(emitted.status).toBe(200);
    expect(emitted.body.data.map((e: any) => [e.metadata.name, e.event]).reverse()).toEqual([
      ['', { raw_event: { name: 'Yoda' } }],
      ['jedi', { raw_event: { name: 'Luke', n: 1 } }],
      ['jedi', { raw_event: { name: 'Han' } }],
    ]);
    const heard = await finishedRuns(listener.id, 2);
    expect(heard.map((r: any) => r.steps[0].$return_value).reverse()).toEqual([{ raw_event: { name: 'Luke', n: 1 } }, { raw_event: { name: 'Han' } }]);
  }, 30_000);
});
