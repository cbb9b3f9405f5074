// A run reads `running` while a step of it runs: its first step, and the step after a `$.flow.delay`, as any other.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';
import { type Gatekeeper, startGatekeeper } from '../helpers/gatekeeper.js';
import { workflowCalls } from '../helpers/workflows.js';
import { waitFor } from '../helpers/wait.js';

describe.each(DIALECTS)('the status of a run whose step runs, on %s', (dialect) => {
  let server: TestServer;
  let firstGate: Gatekeeper;
  let afterGate: Gatekeeper;
  let api: ReturnType<typeof client>;
  const { create, finishedRuns } = workflowCalls(() => api);

  beforeAll(async () => {
    firstGate = await startGatekeeper();
    afterGate = await startGatekeeper();
    server = await startTestServer(dialect, { allowPrivateNetwork: true });
    api = client(server.url, (await server.createUser({ plan: 'paid' })).apiKey);
  });
  afterAll(async () => {
    await server?.destroy();
    await firstGate?.close();
    await afterGate?.close();
  });

  /** The run as GET shows it, and the ids `?status=` lists for each state. */
  const seen = async (workflowId: string, runId: string) => {
    const run = (await api.get(`/v1/workflows/${workflowId}/runs/${runId}`)).body.data;
    const listed: Record<string, string[]> = {};
    for (const status of ['queued', 'running', 'delayed']) {
      listed[status] = (await api.get(`/v1/workflows/${workflowId}/runs?status=${status}`)).body.data.map((r: { id: string }) => r.id);
    }
    return { status: run.status, resumes_at_ms: run.resumes_at_ms, steps: run.steps.length, listed };
  };

  it('shows the run running, and lists it under ?status=running, while its first step and the step after its delay run', async () => {
    const workflow = await create({
      name: 'held steps',
      steps: [
        {
          name: 'first',
          component_code: `module.exports = { async run({ $ }) { await fetch(${JSON.stringify(`${firstGate.url}/gate`)}); $.flow.delay(50); return 1; } };`,
        },
        { name: 'after', component_code: `module.exports = { async run() { await fetch(${JSON.stringify(`${afterGate.url}/gate`)}); return 2; } };` },
      ],
    });
    const runId: string = (await api.post(`/v1/workflows/${workflow.id}/run`, {})).body.data.id;
    await waitFor(
      async () => firstGate.hits.get('/gate') ?? 0,
      (n) => n === 1,
      { what: 'the first step at its gate' },
    );
    // It read `queued` (and ?status=running listed nothing) for as long as its first step ran.
    expect(await seen(workflow.id, runId)).toEqual({
      status: 'running',
      resumes_at_ms: undefined,
      steps: 0,
      listed: { queued: [], running: [runId], delayed: [] },
    });
    firstGate.open();
    await waitFor(
      async () => afterGate.hits.get('/gate') ?? 0,
      (n) => n === 1,
      { what: 'the step after the delay at its gate' },
    );
    // It read `delayed`, with a resumes_at_ms gone by, for as long as the step after its delay ran.
    expect(await seen(workflow.id, runId)).toEqual({
      status: 'running',
      resumes_at_ms: undefined,
      steps: 1,
      listed: { queued: [], running: [runId], delayed: [] },
    });
    afterGate.open();
    const [run] = await finishedRuns(workflow.id, 1);
    expect([run.status, run.steps.map((step: { $return_value: unknown }) => step.$return_value)]).toEqual(['succeeded', [1, 2]]);
  });
});
