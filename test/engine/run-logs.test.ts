// The server's log lines about a run name it: a run that outlives its time limit is stopped, and the line saying so
// carries the source id and the invocation id (the one `POST /v1/sources/{id}/run` answered with). The run's own
// console lines, up to the moment it was stopped, are kept as its `$logs` events.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/app.js';
import { account } from '../helpers/account.js';
import { client } from '../helpers/client.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

describe('log lines of a run', () => {
  const lines: Array<Record<string, unknown>> = [];
  let server: TestServer;

  beforeAll(async () => {
    const logger = createLogger({ logLevel: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    server = await startTestServer('sqlite', { runTimeout: 1, logLevel: 'warn' }, { logger });
  });
  afterAll(async () => {
    await server?.destroy();
  });

  it('name the source and the invocation when a run is stopped at its time limit', async () => {
    const api = client(server.url, (await server.createUser({ plan: 'paid' })).apiKey);
    const deployed = await api.post('/v1/sources', { component_code: 'export default { name: "spin", version: "0.0.1", async run() { for (;;) {} } };' });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    const ran = await api.post(`/v1/sources/${deployed.body.data.id}/run`, {});
    expect(ran.status).toBe(202);
    const invocationId: string = ran.body.data.id;
    const line = await waitFor(
      async () => lines.find((l) => l.msg === 'the worker stopped during a call'),
      (found) => found !== undefined,
      { what: 'the line about the stopped run' },
    );
    expect(line).toMatchObject({ sourceId: deployed.body.data.id, invocationIds: [invocationId], reason: 'timeout', unreported: 1 });
  });

  it('keep every console line a run logged before it blocked in a synchronous loop until its time limit', async () => {
    const user = await account(server);
    const sourceId = await user.deploy(
      'export default { name: "hang", version: "0.0.1", async run() { console.log("about to loop"); for (let i = 1; i <= 3; i++) console.warn("step", i); for (;;) {} } };',
    );
    await user.runAndWait(sourceId, {});
    const [failure] = await user.eventsOf(sourceId, 1, '/$errors');
    expect(failure.event.error).toMatchObject({ name: 'TimeoutError', message: 'run timed out after 1000 ms' });
    const logs = await user.eventsOf(sourceId, 4, '/$logs');
    // Newest first.
    expect(logs.map(({ event }) => ({ k: event.k, msg: event.msg })).reverse()).toEqual([
      { k: 'log', msg: 'about to loop' },
      { k: 'warn', msg: 'step 1' },
      { k: 'warn', msg: 'step 2' },
      { k: 'warn', msg: 'step 3' },
    ]);
  });
});
