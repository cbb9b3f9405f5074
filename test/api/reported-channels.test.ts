// The channel an event is emitted on ($emit's name, $.send.emit()'s name, $.send.sse()'s channel), held to its rules
// by the server too: a component that rewrites what its worker reports (a toJSON on Object.prototype, which the
// worker's JSON.stringify of its report calls) gets past the worker's checks, and the server checks again before
// anything is kept. A channel past 200 characters could be neither subscribed to nor streamed, and `$errors` would be
// delivered as the emitter's errors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { workflowCalls } from '../helpers/workflows.js';

/** Code that edits its call's report once, as it leaves the worker: `edit` sees the call's `result`. */
const rewriting = (edit: string) => `Object.defineProperty(Object.prototype, "toJSON", { configurable: true, writable: true, value: function () {
    const value = this;
    if (value.t === "outcomes" && value.results.length) { delete Object.prototype.toJSON; const result = value.results[0]; ${edit} }
    return value;
  } });`;

describe.each(DIALECTS)('channels a worker reports, on %s', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  const { create, finishedRuns } = workflowCalls(() => api);

  beforeAll(async () => {
    server = await startTestServer(dialect);
    api = client(server.url, (await server.createUser({ plan: 'paid' })).apiKey);
  });
  afterAll(async () => {
    await server?.destroy();
  });

  it("fails a source's run whose reported $emit channel is past 200 characters, keeping none of its events", async () => {
    const code = `module.exports = { name: "forger", version: "1.0.0", async run() {
      ${rewriting('result.outcome.emits[0].name = "c".repeat(201);')}
      this.$emit("small", { name: "short" });
    } };`;
    const created = await api.post('/v1/sources', { component_code: code });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id: string = created.body.data.id;
    expect((await api.post(`/v1/sources/${id}/run`, {})).status).toBe(202);
    const errors = await waitFor(
      async () => (await api.get(`/v1/sources/${id}/$errors/event_summaries?expand=event`)).body.data,
      (data: any[]) => data.length > 0,
      { what: 'the run to fail' },
    );
    expect(errors[0].event.error).toMatchObject({ name: 'RangeError', message: '$emit name (the channel) may be at most 200 characters' });
    expect((await api.get(`/v1/sources/${id}/event_summaries`)).body.data).toEqual([]);
  });

  it('fails a step whose reported $.send.emit() or $.send.sse() channel the worker would have refused, emitting nothing', async () => {
    const cases: Array<[string, string]> = [
      ['result.outcome.step.sends[0].payload.name = "c".repeat(201);', '$.send.emit() name (the channel) may be at most 200 characters'],
      ['result.outcome.step.sends[0].payload.name = "$errors";', `$.send.emit() name "$errors" is reserved for the workflow's $errors stream`],
      ['result.outcome.step.sends[0].payload.name = 7;', '$.send.emit() name (the channel) must be a string'],
      ['result.outcome.step.sends[1].payload.channel = "c".repeat(201);', '$.send.sse(): channel may be at most 200 characters'],
    ];
    for (const [edit, message] of cases) {
      const step = `export default defineComponent({ async run({ $ }) {
        ${rewriting(edit)}
        $.send.emit({ raw_event: 1, name: "short" });
        $.send.sse({ channel: "live", payload: 2 });
        return "sent";
      } });`;
      const workflow = await create({ name: 'forger', steps: [{ name: 'send', component_code: step }] });
      expect((await api.post(`/v1/workflows/${workflow.id}/run`, { body: {} })).status).toBe(202);
      const [run] = await finishedRuns(workflow.id, 1);
      expect([run.status, run.steps[0].error], edit).toEqual(['failed', expect.objectContaining({ name: 'RangeError', message })]);
      expect((await api.get(`/v1/workflows/${workflow.id}/event_summaries`)).body.data, edit).toEqual([]);
    }
  });
});
