// A graceful stop past --shutdown-timeout: a source run and a workflow step still running are handed back to the
// queue (said once as a warning, and as info for each; never as an error), and run after the next start.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/app.js';
import { client } from '../helpers/client.js';
import { cleanupsAfterAll } from '../helpers/cleanups.js';
import { startTestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { startReceiver } from '../delivery/helpers.js';

/** Says it started (a request to the receiver), then works for 3 s. */
const slowRun = (receiver: string, path: string) =>
  `await fetch(${JSON.stringify(receiver + path)}, { method: "POST" }); await new Promise((r) => setTimeout(r, 3000));`;

describe('a stop past --shutdown-timeout', () => {
  const cleanup = cleanupsAfterAll();

  it('hands running invocations and workflow steps back without an error line, and runs them after the next start', async () => {
    const receiver = await startReceiver();
    cleanup(receiver.close);
    const lines: Array<{ level: number; msg: string }> = [];
    const logger = createLogger({ logLevel: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const server = await startTestServer('sqlite', { shutdownTimeout: 1, allowPrivateNetwork: true }, { logger });
    cleanup(server.destroy);
    const key = (await server.createUser({ plan: 'paid' })).apiKey;
    const api = client(server.url, key);

    const source = await api.post('/v1/sources', {
      component_code: `export default { name: "slow", version: "0.0.1", async run() { ${slowRun(receiver.url, '/source')} this.$emit({ done: true }); } };`,
    });
    expect(source.status, JSON.stringify(source.body)).toBe(200);
    const workflow = await api.post('/v1/workflows', {
      name: 'slow',
      steps: [{ name: 'slow', component_code: `export default defineComponent({ async run() { ${slowRun(receiver.url, '/workflow')} return 1; } });` }],
    });
    expect(workflow.status, JSON.stringify(workflow.body)).toBe(200);
    const sourceId = source.body.data.id;
    const workflowId = workflow.body.data.id;
    expect((await api.post(`/v1/sources/${sourceId}/run`, {})).status).toBe(202);
    expect((await api.post(`/v1/workflows/${workflowId}/run`, {})).status).toBe(202);
    await waitFor(
      async () => receiver.requests.length,
      (n) => n === 2,
      { what: 'both runs started' },
    );

    await server.stop();
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    expect(lines.filter((l) => l.msg === 'shutdown timeout: work still running is handed back to the queue')).toHaveLength(1);
    expect(lines.filter((l) => l.msg.startsWith('the server is stopping: ')).map((l) => [l.level, l.msg])).toEqual(
      expect.arrayContaining([
        [30, 'the server is stopping: invocations handed back to the queue'],
        [30, 'the server is stopping: workflow runs handed back to the queue'],
      ]),
    );

    await server.restart();
    const after = client(server.url, key);
    await waitFor(
      async () => (await after.get(`/v1/sources/${sourceId}/event_summaries?expand=event`)).body.data,
      (events: Array<{ event: unknown }>) => events.length === 1,
      { what: 'the handed-back invocation run after the restart', timeoutMs: 30_000 },
    );
    await waitFor(
      async () => (await after.get(`/v1/workflows/${workflowId}/runs`)).body.data.map((r: { status: string }) => r.status),
      (statuses: string[]) => statuses.join() === 'succeeded',
      { what: 'the handed-back workflow run finished after the restart', timeoutMs: 30_000 },
    );
  });
});
