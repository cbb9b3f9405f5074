// A switched-off workflow runs no step: its queued and delayed runs, and one whose step ran while it was switched off,
// wait, uncommitted, until it is switched on again, and then go on.
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';
import { type Gatekeeper, startGatekeeper } from '../helpers/gatekeeper.js';
import { workflowCalls } from '../helpers/workflows.js';
import { waitFor } from '../helpers/wait.js';
import { dueRuns } from '../../src/store/workflows.js';

const SWITCHED_OFF = /^workflow switched off: /;

describe.each(DIALECTS)('switching a workflow off on %s', (dialect) => {
  let server: TestServer;
  let gate: Gatekeeper;
  let api: ReturnType<typeof client>;
  const lines: Array<{ msg: string; runIds?: string[] }> = [];
  const { create, finishedRuns } = workflowCalls(() => api);

  beforeAll(async () => {
    gate = await startGatekeeper();
    const collect = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    server = await startTestServer(dialect, { allowPrivateNetwork: true }, { logger: pino({ level: 'info' }, collect) });
    api = client(server.url, (await server.createUser({ plan: 'paid' })).apiKey);
  });
  afterAll(async () => {
    await server?.destroy();
    await gate?.close();
  });

  const runStatuses = async (id: string) =>
    ((await api.get(`/v1/workflows/${id}/runs?limit=10`)).body.data as Array<{ id: string; status: string }>).map((run) => run.status);

  it('commits nothing of a step that ran across the switch-off and runs no queued run until it is switched on again', async () => {
    const workflow = await create({
      name: 'gated',
      steps: [
        { name: 'first', component_code: `module.exports = { async run() { await fetch(${JSON.stringify(`${gate.url}/gate`)}); return 1; } };` },
        { name: 'second', component_code: `module.exports = { async run() { await fetch(${JSON.stringify(`${gate.url}/second`)}); return 2; } };` },
      ],
    });
    const first = await api.post(`/v1/workflows/${workflow.id}/run`, { n: 1 });
    expect(first.status).toBe(202);
    await waitFor(
      async () => gate.hits.get('/gate') ?? 0,
      (n) => n === 1,
      { what: 'the first run at the gate' },
    );
    // Queued behind the first, which holds the step's queue.
    expect((await api.post(`/v1/workflows/${workflow.id}/run`, { n: 2 })).status).toBe(202);
    const off = await api.put(`/v1/workflows/${workflow.id}`, { active: false });
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    gate.open();

    // Each run is handed back (the one at the gate, then the one queued), or, without the switch-off's check, finishes.
    const handedBack = () => new Set(lines.filter((l) => SWITCHED_OFF.test(l.msg)).flatMap((l) => l.runIds ?? []));
    await waitFor(
      async () => ({ handedBack: handedBack().size, statuses: await runStatuses(workflow.id) }),
      (v) => v.handedBack === 2 || v.statuses.every((s) => s === 'succeeded'),
      { what: 'both runs handed back or finished' },
    );
    expect(await runStatuses(workflow.id)).toEqual(['queued', 'queued']);
    expect(gate.hits.get('/second') ?? 0).toBe(0);
    const runIds = (await api.get(`/v1/workflows/${workflow.id}/runs?limit=10`)).body.data.map((run: { id: string }) => run.id);
    expect((await api.get(`/v1/workflows/${workflow.id}/runs/${runIds[1]}`)).body.data.steps).toEqual([]);

    // Switched on, both go on from the first step: the one that ran across the switch-off runs it again.
    expect((await api.put(`/v1/workflows/${workflow.id}`, { active: true })).status).toBe(200);
    const runs = await finishedRuns(workflow.id, 2);
    expect(runs.map((run) => run.status)).toEqual(['succeeded', 'succeeded']);
    expect(runs.map((run) => run.steps.map((step: { $return_value: unknown }) => step.$return_value))).toEqual([
      [1, 2],
      [1, 2],
    ]);
    expect(gate.hits.get('/gate')).toBe(3);
    expect(gate.hits.get('/second')).toBe(2);
  });

  it('does not take up a delayed run that falls due while the workflow is off, and runs it once it is on again', async () => {
    const workflow = await create({
      name: 'delayed',
      steps: [
        { name: 'wait', component_code: 'module.exports = { async run({ $ }) { $.flow.delay(3600000); return "waited"; } };' },
        { name: 'after', component_code: `module.exports = { async run() { await fetch(${JSON.stringify(`${gate.url}/after`)}); return "after"; } };` },
      ],
    });
    const queued = await api.post(`/v1/workflows/${workflow.id}/run`, {});
    expect(queued.status).toBe(202);
    const runId: string = queued.body.data.id;
    await waitFor(
      () => runStatuses(workflow.id),
      (s) => s[0] === 'delayed',
      { what: 'the run delayed' },
    );
    expect((await api.put(`/v1/workflows/${workflow.id}`, { active: false })).status).toBe(200);
    // The delay ends while the workflow is off: the run is not due for any runner.
    const db = server.running.services.store.db;
    await db.updateTable('workflow_runs').set({ due_ms: 0 }).where('id', '=', runId).execute();
    expect(await dueRuns(db, Date.now(), 1000)).not.toContain(runId);

    expect((await api.put(`/v1/workflows/${workflow.id}`, { active: true })).status).toBe(200);
    const [run] = await finishedRuns(workflow.id, 1);
    expect(run.status).toBe('succeeded');
    expect(run.steps.map((step: { $return_value: unknown }) => step.$return_value)).toEqual(['waited', 'after']);
  });
});
