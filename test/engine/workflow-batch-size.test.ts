// Workflow step batches are bounded by the size of the step data they carry, not only by count: runs whose earlier
// steps exported megabytes share a worker call only while their data fits MAX_BATCH_DATA_CHARS, a larger run goes alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { MAX_BATCH_DATA_CHARS, takeBatch } from '../../src/engine/step-batches.js';
import type { HeldRun } from '../../src/engine/workflow-batch.js';
import type { InvocationRequest } from '../../src/runtime/types.js';

const EXPORT_CHARS = 2 * 1024 * 1024;
const RUNS = 30;
const BIG = `module.exports = { async run({ $ }) { $.export("blob", "x".repeat(${EXPORT_CHARS})); } };`;
const READ = 'module.exports = { async run({ steps }) { return steps.big.blob.length; } };';

describe.each(DIALECTS)('workflow batch size on %s', (dialect) => {
  let server: TestServer;
  /** Each worker call of a step: how many runs it carried and their inputs' size as JSON. */
  const calls: Array<{ runs: number; chars: number }> = [];

  beforeAll(async () => {
    server = await startTestServer(dialect);
    // Looks at what each real worker call carries and passes it on unchanged.
    const runtime = server.running.services.runtime;
    const invoke = runtime.invoke.bind(runtime);
    runtime.invoke = (request: InvocationRequest, hooks) => {
      if (request.method === 'step' && request.events) {
        calls.push({ runs: request.events.length, chars: request.events.reduce((sum: number, e) => sum + JSON.stringify(e).length, 0) });
      }
      return invoke(request, hooks);
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
    const reads = calls.filter((call) => call.chars >= EXPORT_CHARS);
    expect(reads.reduce((sum, call) => sum + call.runs, 0)).toBe(RUNS);
    for (const call of reads) expect(call.chars, `a call of ${call.runs} runs`).toBeLessThanOrEqual(MAX_BATCH_DATA_CHARS + 64 * 1024 * call.runs);
    const run = (await api.get(`/v1/workflows/${id}/runs?limit=1&status=succeeded`)).body.data[0];
    expect(run.steps[1].$return_value).toBe(EXPORT_CHARS);
  }, 180_000);
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
