// Each run waiting out a $.flow.delay goes on when its own delay ends, also when another run's delay ended first.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';

const WAIT = 'module.exports = { async run({ steps, $ }) { $.flow.delay(steps.trigger.event.ms); } };';
const AFTER = 'module.exports = { async run({ steps }) { return steps.trigger.event.name; } };';

describe.each(DIALECTS)('delayed workflow runs on %s', (dialect) => {
  let server: TestServer;
  const clock = new ManualClock();

  beforeAll(async () => {
    server = await startTestServer(dialect, {}, { clock });
  });
  afterAll(() => server?.destroy());

  it('resumes a run whose delay ends after another delayed run was taken up', async () => {
    const api = client(server.url, (await server.createUser()).apiKey);
    const created = await api.post('/v1/workflows', {
      name: 'two delays',
      steps: [
        { name: 'wait', component_code: WAIT },
        { name: 'after', component_code: AFTER },
      ],
    });
    expect(created.status).toBe(200);
    const id = created.body.data.id as string;
    for (const event of [
      { name: 'short', ms: 1000 },
      { name: 'long', ms: 2000 },
    ]) {
      expect((await api.post(`/v1/workflows/${id}/run`, event)).status).toBe(202);
      await waitFor(
        () => api.get(`/v1/workflows/${id}/runs?status=delayed&limit=1`),
        (res) => res.body.data[0]?.event.name === event.name,
        { what: `run ${event.name} delayed` },
      );
    }
    const finished = (name: string) =>
      waitFor(
        () => api.get(`/v1/workflows/${id}/runs?status=succeeded`),
        (res) => res.body.data.some((run: any) => run.event.name === name),
        { what: `run ${name} succeeded` },
      );
    clock.advance(1000);
    await finished('short');
    // The scan that took up the short run read its own past due time as the next one, and looked again only after
    // its lease watch (5 s of this clock): the long run stayed delayed past its end.
    clock.advance(1000);
    const runs = await finished('long');
    const long = runs.body.data.find((run: any) => run.event.name === 'long');
    expect(long.steps.map((step: any) => [step.name, step.status])).toEqual([
      ['wait', 'succeeded'],
      ['after', 'succeeded'],
    ]);
    expect(long.steps[1].$return_value).toBe('long');
  }, 60_000);
});
