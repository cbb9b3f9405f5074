// Durable workflow steps: SIGKILL the server while a run's second step is running; after a restart the run resumes
// at that step, so the finished first step never runs again and the run completes.
import { describe, expect, it } from 'vitest';
import { cleanupsAfterAll, killedAfterAll } from '../helpers/cleanups.js';
import { DIALECTS } from '../helpers/server.js';
import { client } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { startGatekeeper } from '../helpers/gatekeeper.js';
import { createAccount, freshStorage, killHard, serve } from '../helpers/processes.js';

const step = (path: string) =>
  `module.exports = { async run({ steps }) { const res = await fetch(steps.trigger.event.base + "${path}"); return (await res.json()).path; } };`;

describe.each(DIALECTS)('workflow crash recovery on %s', (dialect) => {
  const cleanups = cleanupsAfterAll();
  const children = killedAfterAll();

  it('resumes a run at its unfinished step after a SIGKILL, never running a finished step twice', async () => {
    const gatekeeper = await startGatekeeper();
    cleanups(gatekeeper.close);
    const { args, cleanup } = await freshStorage(dialect);
    cleanups(cleanup);
    const storage = [...args, '--allow-private-network'];
    const key = await createAccount(args, 'durable');

    const first = await serve(storage);
    children.push(first.child);
    const created = await client(first.url, key).post('/v1/workflows', {
      name: 'three steps',
      steps: [
        { name: 'first', component_code: step('/first') },
        { name: 'gate', component_code: step('/gate') },
        { name: 'last', component_code: step('/last') },
      ],
    });
    expect(created.status).toBe(200);
    const workflowId = created.body.data.id as string;
    const started = await client(first.url, key).post(`/v1/workflows/${workflowId}/run`, { base: gatekeeper.url });
    expect(started.status).toBe(202);
    await waitFor(
      async () => gatekeeper.hits.get('/gate') ?? 0,
      (n) => n === 1,
      { what: 'the second step to be running' },
    );
    await killHard(first.child);
    gatekeeper.open();

    const second = await serve(storage);
    children.push(second.child);
    const api = client(second.url, key);
    const done = await waitFor(
      () => api.get(`/v1/workflows/${workflowId}/runs/${started.body.data.id}`),
      (res) => res.body.data?.status === 'succeeded',
      { what: 'the run to finish after the restart', timeoutMs: 60_000 },
    );
    expect(done.body.data.steps.map((s: any) => [s.name, s.status, s.$return_value])).toEqual([
      ['first', 'succeeded', '/first'],
      ['gate', 'succeeded', '/gate'],
      ['last', 'succeeded', '/last'],
    ]);
    // The finished step ran once; the one running at the kill ran again; the rest once.
    expect(Object.fromEntries(gatekeeper.hits)).toEqual({ '/first': 1, '/gate': 2, '/last': 1 });
    second.child.kill('SIGTERM');
  });
});
