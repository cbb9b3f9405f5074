// A run's running time is its own also where runs share a step's worker call: one that has used up its time fails
// alone, and the runs beside it in the batch run their step.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';

// The slow run takes its time; every run then waits a second of the server's clock, moved by hand below.
const FIRST =
  'module.exports = { async run({ steps, $ }) { if (steps.trigger.event.slow) await new Promise((r) => setTimeout(r, 1500)); $.flow.delay(1000); } };';
const SECOND = 'module.exports = { async run({ steps }) { return steps.trigger.event.name; } };';

describe.each(DIALECTS)('workflow running time on %s', (dialect) => {
  let server: TestServer;
  const clock = new ManualClock();

  beforeAll(async () => {
    server = await startTestServer(dialect, {}, { clock });
  });
  afterAll(() => server?.destroy());

  it('fails only the run that used its time when its batchmates still have theirs', async () => {
    const api = client(server.url, (await server.createUser()).apiKey);
    const created = await api.post('/v1/workflows', {
      name: 'own time',
      timeout_seconds: 10,
      steps: [
        { name: 'first', component_code: FIRST },
        { name: 'second', component_code: SECOND },
      ],
    });
    expect(created.status).toBe(200);
    const id = created.body.data.id as string;
    // Taken up together once due, in due-time then id order: the first alone, the others (the slow run last) as one batch.
    for (const event of [{ name: 'a' }, { name: 'b' }, { name: 'c' }, { name: 'slow', slow: true }]) {
      expect((await api.post(`/v1/workflows/${id}/run`, event)).status).toBe(202);
      await waitFor(
        () => api.get(`/v1/workflows/${id}/runs?status=delayed&limit=1`),
        (res) => res.body.data[0]?.event.name === event.name,
        { what: `run ${event.name} delayed` },
      );
    }
    // One second of running time: the slow run has used it, the others have nearly all of theirs.
    expect((await api.put(`/v1/workflows/${id}`, { timeout_seconds: 1 })).status).toBe(200);
    clock.advance(2000);
    const runs = await waitFor(
      () => api.get(`/v1/workflows/${id}/runs`),
      (res) => res.body.data.every((run: any) => run.status === 'succeeded' || run.status === 'failed'),
      { what: 'every run finished' },
    );
    const byName = Object.fromEntries(runs.body.data.map((run: any) => [run.event.name, run]));
    expect(byName.slow.status).toBe('failed');
    expect(byName.slow.error).toMatchObject({ name: 'TimeoutError', message: 'the run used its 1000 ms of running time' });
    for (const name of ['a', 'b', 'c']) {
      expect(byName[name].status, name).toBe('succeeded');
      expect(byName[name].steps[1].$return_value).toBe(name);
    }
  }, 60_000);
});
