// Workflow step batches are bounded by the size of the step data they carry, not only by count: runs whose earlier
// steps exported megabytes share a worker call only while their data fits MAX_BATCH_DATA_CHARS, a larger run goes alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { MAX_BATCH_DATA_CHARS, StepBatches, takeBatch } from '../../src/engine/step-batches.js';
import type { HeldRun } from '../../src/engine/workflow-batch.js';
import type { InvocationRequest } from '../../src/runtime/types.js';

const EXPORT_CHARS = 2 * 1024 * 1024;
const RUNS = 30;
const BIG = `module.exports = { async run({ $ }) { $.export("blob", "x".repeat(${EXPORT_CHARS})); } };`;
const READ = 'module.exports = { async run({ steps }) { return steps.big.blob.length; } };';

describe.each(DIALECTS)('workflow batch size on %s', (dialect) => {
  let server: TestServer;
  /** Each worker call of a step: its workflow, how many runs it carried, and their inputs' and results' size as JSON. */
  const calls: Array<{ workflowId: string; runs: number; chars: number; resultChars: number }> = [];

  beforeAll(async () => {
    server = await startTestServer(dialect);
    // Looks at what each real worker call carries and passes it on unchanged.
    const runtime = server.running.services.runtime;
    const invoke = runtime.invoke.bind(runtime);
    runtime.invoke = async (request: InvocationRequest, hooks) => {
      const result = await invoke(request, hooks);
      if (request.method === 'step' && request.events) {
        const chars = request.events.reduce((sum: number, e) => sum + JSON.stringify(e).length, 0);
        const resultChars = result.outcomes.reduce((sum, outcome) => sum + JSON.stringify(outcome.step ?? null).length, 0);
        calls.push({ workflowId: request.sourceId, runs: request.events.length, chars, resultChars });
      }
      return result;
    };
  });
  afterAll(() => server?.destroy());

  it('splits runs whose step data would pass the bound into several worker calls, and every run still succeeds', async () => {
    const api = client(server.url, (await server.createUser()).apiKey);
    const created = await api.post('/v1/workflows', {
      name: 'large exports',
      steps: [
        { name: 'big', component_code: BIG },
        { name: 'read', component_code: READ },
      ],
    });
    expect(created.status).toBe(200);
    const id = created.body.data.id as string;
    const started = await Promise.all(Array.from({ length: RUNS }, (_, n) => api.post(`/v1/workflows/${id}/run`, { n })));
    expect(started.map((res) => res.status)).toEqual(started.map(() => 202));
    const count = async (status: string) => (await api.get(`/v1/workflows/${id}/runs?limit=1&status=${status}`)).body.page_info.total_count as number;
    await waitFor(
      async () => ({ succeeded: await count('succeeded'), failed: await count('failed') }),
      (counts) => counts.succeeded + counts.failed === RUNS,
      { timeoutMs: 120_000, what: 'every run finished' },
    );
    expect(await count('succeeded')).toBe(RUNS);
    const reads = calls.filter((call) => call.workflowId === id && call.chars >= EXPORT_CHARS);
    expect(reads.reduce((sum, call) => sum + call.runs, 0)).toBe(RUNS);
    for (const call of reads) expect(call.chars, `a call of ${call.runs} runs`).toBeLessThanOrEqual(MAX_BATCH_DATA_CHARS + 64 * 1024 * call.runs);
    const run = (await api.get(`/v1/workflows/${id}/runs?limit=1&status=succeeded`)).body.data[0];
    expect(run.steps[1].$return_value).toBe(EXPORT_CHARS);
  }, 180_000);

  it("counts what a step's last batch returned: its next batches stop at the bound too", async () => {
    const api = client(server.url, (await server.createUser()).apiKey);
    const created = await api.post('/v1/workflows', { name: 'large results', steps: [{ name: 'big', component_code: BIG }] });
    expect(created.status).toBe(200);
    const id = created.body.data.id as string;
    const count = async () => (await api.get(`/v1/workflows/${id}/runs?limit=1&status=succeeded`)).body.page_info.total_count as number;
    const round = async (finished: number) => {
      const started = await Promise.all(Array.from({ length: RUNS }, (_, n) => api.post(`/v1/workflows/${id}/run`, { n })));
      expect(started.map((res) => res.status)).toEqual(started.map(() => 202));
      await waitFor(count, (n) => n === finished, { timeoutMs: 120_000, what: `${finished} runs succeeded` });
    };
    // The first round teaches the runner what the step returns; the second is cut by it.
    await round(RUNS);
    const firstRound = calls.filter((call) => call.workflowId === id).length;
    await round(2 * RUNS);
    const second = calls.filter((call) => call.workflowId === id).slice(firstRound);
    expect(second.reduce((sum, call) => sum + call.runs, 0)).toBe(RUNS);
    for (const call of second) expect(call.resultChars, `a call of ${call.runs} runs`).toBeLessThanOrEqual(MAX_BATCH_DATA_CHARS + 64 * 1024 * call.runs);
  }, 240_000);
});

describe('takeBatch', () => {
  const held = (dataChars: number) => ({ dataChars }) as HeldRun;

  it('takes runs up to the count and the size, and a run larger than the bound alone', () => {
    const queue = [held(10), held(10), held(30), held(5), held(5)];
    expect(takeBatch(queue, 100, 25).map((h) => h.dataChars)).toEqual([10, 10]);
    expect(takeBatch(queue, 100, 25).map((h) => h.dataChars)).toEqual([30]);
    expect(takeBatch(queue, 1, 25).map((h) => h.dataChars)).toEqual([5]);
    expect(takeBatch(queue, 100, 25).map((h) => h.dataChars)).toEqual([5]);
    expect(queue).toEqual([]);
  });
});

describe('StepBatches', () => {
  const held = (dataChars: number) => ({ dataChars }) as HeldRun;

  it('takes a small first batch of a step not seen yet (after a start, a backlog of 100 could return 800 MB), then cuts by what the step returned', () => {
    const batches = new StepBatches();
    const queue = Array.from({ length: 30 }, () => held(100));
    expect(batches.take('p_1#0', queue, 100)).toHaveLength(2);
    batches.ran('p_1#0', 2 * 1024 * 1024, 2, 2);
    expect(batches.take('p_1#0', queue, 100)).toHaveLength(7);
    // Another step is not known by the first one's results.
    expect(batches.take('p_1#1', queue, 100)).toHaveLength(2);
  });

  it('takes as many runs of a slow step as ran in about a second', () => {
    const batches = new StepBatches();
    const queue = Array.from({ length: 30 }, () => held(100));
    batches.take('p_1#0', queue, 100);
    batches.ran('p_1#0', 100, 2, 2 * 250);
    expect(batches.take('p_1#0', queue, 100)).toHaveLength(4);
    batches.ran('p_1#0', 100, 4, 4 * 0.5);
    expect(batches.take('p_1#0', queue, 100)).toHaveLength(24);
  });
});
