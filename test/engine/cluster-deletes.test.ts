// Two nodes on one PostgreSQL database: what one node is running when the other deletes what it runs.
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, request } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { startGatekeeper } from '../helpers/gatekeeper.js';
import { cleanupsAfterAll } from '../helpers/cleanups.js';

const SECRET = 'cluster-deletes-secret';

describe.skipIf(!DIALECTS.includes('postgres'))('deletes across nodes (PostgreSQL)', () => {
  const cleanups = cleanupsAfterAll();
  let nodeA: TestServer;
  let nodeB: TestServer;
  /** Node B's log. */
  const lines: Array<{ msg: string; sourceId?: string }> = [];

  beforeAll(async () => {
    const collect = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    // Node A only answers HTTP: were it a worker too, it could claim the gated run itself, and its delete would wait
    // for that run to end while the gate waits for the delete.
    nodeA = await startTestServer('postgres', { role: 'api', secretKey: SECRET, allowPrivateNetwork: true });
    nodeB = await startTestServer(
      'postgres',
      { secretKey: SECRET, allowPrivateNetwork: true, databaseUrl: nodeA.databaseUrl },
      { logger: pino({ level: 'info' }, collect) },
    );
  });
  afterAll(async () => {
    await nodeB?.stop();
    await nodeA?.destroy();
  });

  it('a source deleted through one node while the other runs it: the other says so, not that it lost its lease', async () => {
    const gatekeeper = await startGatekeeper();
    cleanups(gatekeeper.close);
    const key = (await nodeA.createUser({ plan: 'paid' })).apiKey;
    const deployed = await client(nodeB.url, key).post('/v1/sources', {
      component_code: `export default { name: "gated delete", version: "0.0.1", props: { http: "$.interface.http" },
        async run(event) { await fetch(event.body.gate); this.$emit({ n: event.body.n }); } };`,
    });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    const { id } = deployed.body.data;
    // Node B runs the event and holds its lease while the run waits at the gate.
    expect((await request('POST', deployed.body.data.configured_props.http.endpoint_url, { body: { n: 1, gate: `${gatekeeper.url}/gate` } })).status).toBe(200);
    await waitFor(
      async () => gatekeeper.hits.get('/gate') ?? 0,
      (n) => n === 1,
      { what: 'the run to wait at the gate on node B' },
    );
    expect((await client(nodeA.url, key).delete(`/v1/sources/${id}`)).status).toBe(204);
    gatekeeper.open();
    const said = await waitFor(
      async () => lines.filter((l) => l.sourceId === id && / before the commit/.test(l.msg)).map((l) => l.msg),
      (msgs) => msgs.length > 0,
      { what: "node B's commit to be turned away" },
    );
    expect(said).toEqual(['source deleted before the commit; nothing of the batch is committed']);
  });

  /**
   * A custom-response workflow whose first step delays 25 s (shorter than the 35 s node A's client waits, so it
   * waits on for the reply), requested on node A (api only) and delayed on node B: its request, and its run's id.
   */
  async function waitingOnDelayedRun(name: string) {
    const key = (await nodeA.createUser({ plan: 'paid' })).apiKey;
    const created = await client(nodeA.url, key).post('/v1/workflows', {
      name,
      trigger: { type: 'http', custom_response: true },
      steps: [
        { name: 'wait', component_code: 'module.exports = { async run({ $ }) { $.flow.delay(25000); } };' },
        { name: 'reply', component_code: 'module.exports = { async run({ $ }) { await $.respond({ status: 200, body: "late" }); } };' },
      ],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const workflow = created.body.data;
    const waiting = request('POST', workflow.trigger.endpoint_url, { body: {} });
    const delayed = await waitFor(
      () => client(nodeB.url, key).get(`/v1/workflows/${workflow.id}/runs?status=delayed`),
      (res) => res.body.data.length === 1,
      { what: 'the run delayed on node B' },
    );
    return { onNodeB: client(nodeB.url, key), workflowId: workflow.id as string, waiting, runId: delayed.body.data[0].id as string };
  }

  it('a client waiting on node A for a workflow deleted through node B hears so at once, not after the run timeout', async () => {
    const { onNodeB, workflowId, waiting, runId } = await waitingOnDelayedRun('deleted elsewhere');
    expect((await onNodeB.delete(`/v1/workflows/${workflowId}`)).status).toBe(204);
    // Without the signal node A would answer after timeout_seconds + 5 s (35 s), past this test's time.
    const answer = await waiting;
    expect([answer.status, answer.body]).toEqual([
      504,
      { error: `the workflow was deleted before responding; run ${runId} was deleted with it`, code: 'no_response' },
    ]);
  }, 20_000);

  it('a client waiting on node A for a workflow switched to custom_response false through node B hears so at once', async () => {
    const { onNodeB, workflowId, waiting, runId } = await waitingOnDelayedRun('switched off elsewhere');
    const put = await onNodeB.put(`/v1/workflows/${workflowId}`, { trigger: { type: 'http', custom_response: false } });
    expect(put.status).toBe(200);
    const answer = await waiting;
    expect([answer.status, answer.body]).toEqual([
      504,
      {
        error: `the workflow was changed before responding: its trigger is no longer {"type":"http","custom_response":true}, so its steps' $.respond() answers no request; run ${runId} goes on`,
        code: 'no_response',
      },
    ]);
  }, 20_000);

  it('a client waiting on node A for a run node B delays past its wait hears so as the delay begins', async () => {
    const key = (await nodeA.createUser({ plan: 'paid' })).apiKey;
    const created = await client(nodeA.url, key).post('/v1/workflows', {
      name: 'delayed elsewhere',
      trigger: { type: 'http', custom_response: true },
      steps: [
        { name: 'wait', component_code: 'module.exports = { async run({ $ }) { $.flow.delay(3600000); } };' },
        { name: 'reply', component_code: 'module.exports = { async run({ $ }) { await $.respond({ status: 200, body: "late" }); } };' },
      ],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    // Node B relays the delay to node A, whose client would otherwise wait 35 s, past this test's time.
    const answer = await request('POST', created.body.data.trigger.endpoint_url, { body: {} });
    const [run] = (await client(nodeB.url, key).get(`/v1/workflows/${created.body.data.id}/runs`)).body.data;
    expect([answer.status, answer.body]).toEqual([
      504,
      {
        error: `the workflow went into $.flow.delay for 3600 s before any step called $.respond(), past the 35 s a request waits (its timeout_seconds and 5 s); run ${run.id} goes on then, and a later $.respond() reaches no one`,
        code: 'no_response',
      },
    ]);
  }, 20_000);
});
