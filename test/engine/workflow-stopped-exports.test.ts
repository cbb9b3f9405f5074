// A step whose worker is stopped (its time ran out in a loop, it called process.exit, it ran out of memory) keeps
// the `$.export`s it made before, in the run view and the run list, as a step that throws does; its sends, return
// value and exit take no effect.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { workflowCalls } from '../helpers/workflows.js';

/**
 * Exports, replaces one and takes another back, queues a send and calls `$.flow.exit()` (caught, so the code goes on),
 * then `end` stops the worker.
 */
const stopsAfterExports = (end: string) => `module.exports = { async run({ $ }) {
  console.log("fetching");
  $.export("fetched", 2); $.export("fetched", 3); $.export("$summary", "fetched 3");
  $.export("dropped", true); $.export("dropped", undefined);
  $.send.emit({ raw_event: { never: true } });
  try { $.flow.exit("never"); } catch {}
  ${end}
} };`;

describe.each(DIALECTS)('exports of a step its worker stopped, on %s', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    server = await startTestServer(dialect, {});
    api = client(server.url, (await server.createUser()).apiKey);
  });
  afterAll(() => server?.destroy());

  const { create, finishedRuns } = workflowCalls(() => api);

  // The memory bomb gets the time it takes to fill the worker's heap.
  it.each([
    ['loops past its time limit', 'for (;;) {}', 1, { name: 'TimeoutError', code: 'timeout', message: 'step timed out after 1000 ms' }],
    ['calls process.exit(1)', 'process.exit(1);', 30, { name: 'ProcessExitError', code: 'process_exit', message: 'the component called process.exit(1)' }],
    [
      'runs out of memory',
      'const hoard = []; for (;;) hoard.push(new Array(100000).fill({ n: Math.random() }));',
      30,
      { name: 'OutOfMemoryError', code: 'out_of_memory' },
    ],
  ])(
    'keeps the exports of a step that %s, and none of its sends, exit or return value',
    async (_what, end, timeout_seconds, error) => {
      const code = stopsAfterExports(end);
      const workflow = await create({
        name: `stopped: ${end}`,
        timeout_seconds,
        steps: [
          { name: 'fetch', component_code: code },
          { name: 'after', component_code: 'module.exports = { async run() { return "never"; } };' },
        ],
      });
      expect((await api.post(`/v1/workflows/${workflow.id}/run`, { body: {} })).status).toBe(202);
      const [listed] = await finishedRuns(workflow.id, 1);
      const viewed = await api.get(`/v1/workflows/${workflow.id}/runs/${listed.id}`);
      expect(viewed.status).toBe(200);
      for (const run of [listed, viewed.body.data]) {
        expect(run.status).toBe('failed');
        expect(run.exit_reason).toBeUndefined();
        expect(run.error).toMatchObject({ ...error, step: 'fetch' });
        expect(run.steps).toHaveLength(1);
        const [step] = run.steps;
        expect(step).toMatchObject({ name: 'fetch', status: 'failed', exports: { fetched: 3, $summary: 'fetched 3' }, sends: [] });
        expect(Object.keys(step.exports).sort()).toEqual(['$summary', 'fetched']);
        expect(step.error).toMatchObject(error);
        expect(step.logs.map((line: { msg: string }) => line.msg)).toEqual(['fetching']);
        expect(step.$return_value).toBeUndefined();
      }
      expect((await api.get(`/v1/workflows/${workflow.id}/event_summaries`)).body.data).toEqual([]);
    },
    60_000,
  );

  it('keeps no exports of a stopped step that made none, or took back the ones it made', async () => {
    const workflow = await create({
      name: 'took back',
      steps: [{ name: 'fetch', component_code: 'module.exports = { async run({ $ }) { $.export("a", 1); $.export("a", undefined); process.exit(2); } };' }],
    });
    expect((await api.post(`/v1/workflows/${workflow.id}/run`, { body: {} })).status).toBe(202);
    const [run] = await finishedRuns(workflow.id, 1);
    expect(run.steps[0]).toMatchObject({ status: 'failed', exports: {}, error: { name: 'ProcessExitError' } });
  }, 60_000);
});
