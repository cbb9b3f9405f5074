// A cluster on one PostgreSQL database: `api` nodes answer HTTP and queue, `worker` nodes run invocations, timers
// and deliveries, woken by signals (NOTIFY) rather than by their poll; a timer fires once per due time whichever
// worker claims it; a worker killed mid-run loses nothing acknowledged and commits nothing twice.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config.js';
import { client, rawStream, request } from '../helpers/client.js';
import { BIN, createAccount, killHard } from '../helpers/processes.js';
import { createTestDatabase, DIALECTS, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { startGatekeeper } from '../helpers/gatekeeper.js';
import { cleanupsAfterAll } from '../helpers/cleanups.js';
import { ManualClock } from '../../src/lib/clock.js';
import { openStream } from '../delivery/helpers.js';

const SECRET = 'cluster-test-secret';
const runBinary = promisify(execFile);

const HTTP_SOURCE = `export default { name: "echo", version: "0.0.1", props: { http: "$.interface.http" },
  async run(event) { this.$emit({ n: event.body.n, pid: process.ppid }, { id: String(event.body.n), summary: "n=" + event.body.n }); } };`;

describe('--role', () => {
  it('api and worker need a PostgreSQL database', () => {
    expect(() => resolveConfig({ role: 'worker' })).toThrow('--role worker needs --database-url');
    expect(() => resolveConfig({ role: 'api' })).toThrow('--role api needs --database-url');
  });
});

describe.skipIf(!DIALECTS.includes('postgres'))('a cluster of api and worker nodes (PostgreSQL)', () => {
  let api1: TestServer;
  let api2: TestServer;
  const workers: TestServer[] = [];
  let key: string;

  beforeAll(async () => {
    api1 = await startTestServer('postgres', { role: 'api', secretKey: SECRET, minTimerInterval: 1 });
    // Its endpoint cache never ages out by itself: only the signal of a change can evict what it holds.
    api2 = await startTestServer(
      'postgres',
      { role: 'api', secretKey: SECRET, databaseUrl: api1.databaseUrl, minTimerInterval: 1 },
      { endpointCacheTtlMs: 3_600_000 },
    );
    key = (await api1.createUser({ plan: 'paid' })).apiKey;
  });
  afterAll(async () => {
    for (const worker of workers) await worker.stop();
    await api2?.stop();
    await api1?.destroy();
  });

  const startWorker = async () => {
    const worker = await startTestServer('postgres', { role: 'worker', secretKey: SECRET, databaseUrl: api1.databaseUrl, minTimerInterval: 1, metricsPort: 0 });
    workers.push(worker);
    return worker;
  };

  it('api nodes only queue; workers started later run what waits, and events reach live streams on the other api node', async () => {
    const api = client(api1.url, key);
    const deployed = await api.post('/v1/sources', { component_code: HTTP_SOURCE });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    const { id } = deployed.body.data;
    const endpoint: string = deployed.body.data.configured_props.http.endpoint_url;
    expect(endpoint.startsWith(api1.url)).toBe(true);

    // No worker yet: the request is acknowledged and its invocation waits in the queue.
    expect((await request('POST', endpoint, { body: { n: 1 } })).status).toBe(200);
    const queued = await api1.running.services.store.db.selectFrom('invocations').select(['id', 'lease_owner']).where('source_id', '=', id).execute();
    expect(queued).toEqual([{ id: expect.stringMatching(/^inv_/), lease_owner: null }]);
    expect((await api.get(`/v1/sources/${id}/event_summaries`)).body.data).toEqual([]);

    const stream = openStream(`${api2.url}/v1/sources/${id}/sse`, key);
    try {
      await stream.opened;
      await startWorker();
      await startWorker();
      await waitFor(
        async () => stream.messages.length,
        (n) => n === 1,
        { what: 'the queued event, run by a worker' },
      );
      // Posted to the other api node: queued there, signalled, run by a worker, streamed back through the first.
      const other = endpoint.replace(api1.url, api2.url);
      for (let n = 2; n <= 6; n++) expect((await request('POST', other, { body: { n } })).status).toBe(200);
      await waitFor(
        async () => stream.messages.length,
        (count) => count === 6,
        { what: 'six events on the stream' },
      );
      expect(stream.data().map((e) => e.event.n)).toEqual([1, 2, 3, 4, 5, 6]);
      const left = await api1.running.services.store.db.selectFrom('invocations').select('id').where('source_id', '=', id).execute();
      expect(left).toEqual([]);
    } finally {
      stream.source.close();
    }
  });

  it("only the api nodes listen for other nodes' events: a worker, which has no live streams, reads none of them back", async () => {
    while (workers.length < 2) await startWorker();
    const db = new pg.Client({ connectionString: api1.databaseUrl });
    await db.connect();
    try {
      const listening = await db.query<{ n: string }>(
        "select count(*) as n from pg_stat_activity where datname = current_database() and query = 'LISTEN tributary_events'",
      );
      expect(Number(listening.rows[0]!.n)).toBe(2);
    } finally {
      await db.end();
    }
  });

  it('a change made through one api node reaches the others at once: a deactivated source refuses ingress on both', async () => {
    const api = client(api1.url, key);
    const { id, configured_props } = (await api.post('/v1/sources', { component_code: HTTP_SOURCE })).body.data;
    const endpoint: string = configured_props.http.endpoint_url;
    const other = endpoint.replace(api1.url, api2.url);
    // Both api nodes have the endpoint cached now.
    expect((await request('POST', endpoint, { body: { n: 1 } })).status).toBe(200);
    expect((await request('POST', other, { body: { n: 2 } })).status).toBe(200);
    expect((await api.patch(`/v1/sources/${id}`, { active: false })).status).toBe(200);
    const refused = await waitFor(
      () => request('POST', other, { body: { n: 3 } }),
      (r) => r.status !== 200,
      { what: 'the other node to drop its cached endpoint' },
    );
    expect(refused.status).toBe(404);
  });

  it("a request reaching a node before another node's switch-off has: refused 404 and nothing queued, not acknowledged and left to run when switched on", async () => {
    const api = client(api1.url, key);
    // The custom-response source's first request waits for its run.
    if (!workers.length) await startWorker();
    const CUSTOM = `export default { name: "answers", version: "0.0.1", props: { http: { type: "$.interface.http", customResponse: true } },
      async run(event) { this.http.respond({ status: 200, body: "ran " + event.body.n }); } };`;
    for (const code of [HTTP_SOURCE, CUSTOM]) {
      const { id, configured_props } = (await api.post('/v1/sources', { component_code: code })).body.data;
      const other = configured_props.http.endpoint_url.replace(api1.url, api2.url);
      // api2 has the endpoint cached as active.
      expect((await request('POST', other, { body: { n: 1 } })).status).toBe(200);
      // Switched off as another node's PATCH commits it, its signal still on the way: no signal is sent at all here.
      const db = new pg.Client({ connectionString: api1.databaseUrl });
      await db.connect();
      try {
        await db.query('update sources set active = 0 where id = $1', [id]);
        const refused = await request('POST', other, { body: { n: 2 } });
        expect([refused.status, refused.body]).toEqual([404, { error: 'no active source or workflow at this endpoint', code: 'not_found' }]);
        const queued = await db.query(`select count(*)::int as n from invocations where source_id = $1 and event::jsonb->'body'->>'n' = '2'`, [id]);
        expect(queued.rows[0].n).toBe(0);
      } finally {
        await db.end();
      }
    }
  });

  it("the same for a workflow's endpoint: a request reaching a node before another node's switch-off has is refused 404 and starts no run", async () => {
    const api = client(api1.url, key);
    // The custom-response workflow's first request waits for its run.
    if (!workers.length) await startWorker();
    const reply = 'export default defineComponent({ async run({ steps, $ }) { await $.respond({ status: 202, body: { n: steps.trigger.event.body.n } }); } });';
    for (const custom_response of [false, true]) {
      const created = await api.post('/v1/workflows', {
        name: 'answers',
        trigger: { type: 'http', custom_response },
        steps: [{ name: 'reply', component_code: reply }],
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const id: string = created.body.data.id;
      const other = created.body.data.trigger.endpoint_url.replace(api1.url, api2.url);
      // api2 has the endpoint cached as active.
      expect((await request('POST', other, { body: { n: 1 } })).status).toBe(custom_response ? 202 : 200);
      const db = new pg.Client({ connectionString: api1.databaseUrl });
      await db.connect();
      try {
        // Switched off as another node's PATCH commits it, its signal still on the way: no signal is sent at all here.
        await db.query('update workflows set active = 0 where id = $1', [id]);
        const refused = await request('POST', other, { body: { n: 2 } });
        expect([refused.status, refused.body]).toEqual([404, { error: 'no active source or workflow at this endpoint', code: 'not_found' }]);
        const runs = await db.query(`select count(*)::int as n from workflow_runs where workflow_id = $1 and event::jsonb->'body'->>'n' = '2'`, [id]);
        expect(runs.rows[0].n).toBe(0);
      } finally {
        await db.end();
      }
    }
  });

  it('a key replaced through one api node, or by the CLI, ends the live streams opened with the old key on the others', async () => {
    const user = await api1.createUser({ plan: 'paid' });
    const { id } = (await client(api1.url, user.apiKey).post('/v1/sources', { component_code: HTTP_SOURCE })).body.data;
    const ended = (stream: { ended: () => boolean }, what: string) =>
      waitFor(
        async () => stream.ended(),
        (done) => done,
        { what },
      );
    const first = await rawStream(`${api2.url}/v1/sources/${id}/sse`, user.apiKey);
    const second = (await client(api1.url, user.apiKey).post('/v1/users/me/api_key')).body.data.api_key;
    try {
      await ended(first, 'the stream on the other node, opened with the key replaced through the API');
      expect(first.text()).toContain('the API key this stream was opened with was replaced');
    } finally {
      first.close();
    }
    const next = await rawStream(`${api2.url}/v1/sources/${id}/sse`, second);
    try {
      await runBinary(process.execPath, [BIN, 'users', 'rotate-key', user.id, '--database-url', api1.databaseUrl!, '--data-dir', tempDir()]);
      await ended(next, 'the stream opened with the key the CLI replaced');
    } finally {
      next.close();
    }
  });

  it("a custom response crosses nodes: the worker's respond() reaches the request waiting on the api node", async () => {
    const api = client(api1.url, key);
    const custom = await api.post('/v1/sources', {
      component_code:
        'export default { name: "answers", version: "0.0.1", props: { http: { type: "$.interface.http", customResponse: true } }, async run(event) { if (event.body.fail) throw new Error("no answer today"); this.http.respond({ status: 201, headers: { "x-node": "worker" }, body: { made: event.body.n } }); } };',
    });
    expect(custom.status, JSON.stringify(custom.body)).toBe(200);
    const endpoint: string = custom.body.data.configured_props.http.endpoint_url;
    const answer = await request('POST', endpoint.replace(api1.url, api2.url), { body: { n: 7 } });
    expect([answer.status, answer.headers.get('x-node'), answer.body]).toEqual([201, 'worker', { made: 7 }]);
    const failed = await request('POST', endpoint, { body: { fail: true } });
    expect([failed.status, failed.body]).toEqual([500, { code: 'run_failed', error: 'the source failed before responding: no answer today' }]);

    const workflow = await api.post('/v1/workflows', {
      name: 'answers',
      trigger: { type: 'http', custom_response: true },
      steps: [
        {
          name: 'reply',
          component_code:
            'export default defineComponent({ async run({ steps, $ }) { await $.respond({ status: 202, body: { echoed: steps.trigger.event.body.n } }); } });',
        },
      ],
    });
    expect(workflow.status, JSON.stringify(workflow.body)).toBe(200);
    const replied = await request('POST', workflow.body.data.trigger.endpoint_url, { body: { n: 9 } });
    expect([replied.status, replied.body]).toEqual([202, { echoed: 9 }]);
  });

  it('work queued on one api node is signalled once: the other api node does not pass the signal on', async () => {
    const api = client(api1.url, key);
    const source = await api.post('/v1/sources', { component_code: HTTP_SOURCE });
    expect(source.status, JSON.stringify(source.body)).toBe(200);
    const workflow = await api.post('/v1/workflows', {
      name: 'signalled once',
      trigger: { type: 'http' },
      steps: [{ name: 'noop', component_code: 'export default defineComponent({ async run() { return 1; } });' }],
    });
    expect(workflow.status, JSON.stringify(workflow.body)).toBe(200);

    const signals = await watchSignals(api1.databaseUrl!);
    try {
      const endpoint: string = source.body.data.configured_props.http.endpoint_url;
      expect((await request('POST', endpoint.replace(api1.url, api2.url), { body: { n: 1 } })).status).toBe(200);
      expect((await request('POST', workflow.body.data.trigger.endpoint_url, { body: { n: 2 } })).status).toBe(200);
      await waitFor(
        async () => (await api.get(`/v1/sources/${source.body.data.id}/event_summaries`)).body.data.length,
        (n) => n === 1,
        { what: 'the event, run by a worker' },
      );
      const runs = await waitFor(
        () => api.get(`/v1/workflows/${workflow.body.data.id}/runs`),
        (r) => r.body.data?.[0]?.status === 'succeeded',
        { what: 'the workflow run' },
      );
      // Two api nodes that passed signals on to each other would have sent thousands by now.
      await signals.allArrived();
      const work = signals.seen;
      expect(work.filter((m) => m.k === 'workflow_runs')).toEqual([{ k: 'workflow_runs', i: [runs.body.data[0].id] }]);
      // The api node's signal, and one from each worker that tried the source while the other ran it (see the next test).
      const invocations = work.filter((m) => m.k === 'invocations');
      expect(invocations.length).toBeLessThanOrEqual(1 + workers.length);
      expect(new Set(invocations.map((m) => JSON.stringify(m)))).toEqual(new Set([JSON.stringify({ k: 'invocations', i: [source.body.data.id] })]));
    } finally {
      await signals.end();
    }
  });

  it('a timer fires once per due time, whichever worker claims it', async () => {
    const api = client(api2.url, key);
    const timer = await api.post('/v1/sources', {
      component_code:
        'export default { name: "tick", version: "0.0.1", props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 1 } } }, async run(event) { this.$emit({ at: event.timestamp }); } };',
    });
    expect(timer.status, JSON.stringify(timer.body)).toBe(200);
    const ticks = await waitFor(
      () => api.get(`/v1/sources/${timer.body.data.id}/event_summaries?limit=100&expand=event`),
      (r) => r.body.data.length >= 5,
      { what: 'five ticks', timeoutMs: 30_000 },
    );
    const times = ticks.body.data.map((e: { event: { at: number } }) => e.event.at);
    expect(new Set(times).size).toBe(times.length);
    await api.delete(`/v1/sources/${timer.body.data.id}`);
  });

  it('a worker node, which listens on no API port, answers its health probes on its metrics listener', async () => {
    const worker = workers[0] ?? (await startWorker());
    expect(worker.running.services.config.role).toBe('worker');
    const live = await fetch(worker.running.metricsUrl!.replace('/metrics', '/healthz'));
    expect([live.status, await live.json()]).toEqual([200, { status: 'ok', database: 'ok' }]);
    const ready = await fetch(worker.running.metricsUrl!.replace('/metrics', '/readyz'));
    const checks = { database: 'ok', migrations: 'ok', worker: 'ok', worker_nodes: 'ok', disk: 'unchecked', stopping: false };
    expect([ready.status, await ready.json()]).toEqual([200, { status: 'ready', checks }]);
  });
});

describe.skipIf(!DIALECTS.includes('postgres'))('two `all` nodes and one source (PostgreSQL)', () => {
  // Both nodes read this clock, which stands still: no lease watch or poll runs, so work moves only on signals.
  const clock = new ManualClock();
  const cleanups = cleanupsAfterAll();
  let nodeA: TestServer;
  let nodeB: TestServer;

  beforeAll(async () => {
    nodeA = await startTestServer('postgres', { secretKey: SECRET, allowPrivateNetwork: true }, { clock });
    nodeB = await startTestServer('postgres', { secretKey: SECRET, allowPrivateNetwork: true, databaseUrl: nodeA.databaseUrl }, { clock });
  });
  afterAll(async () => {
    await nodeB?.stop();
    await nodeA?.destroy();
  });

  /**
   * The node running the source (holding the lease of its invocation) and the other one. Either may claim the
   * source's first run: an ingest wakes its own node, and the deploy's signal makes the other look at the queue too.
   */
  async function runningNode(sourceId: string): Promise<{ runner: TestServer; other: TestServer }> {
    const owners = await leaseOwners(nodeA.databaseUrl!, sourceId);
    const runner = [nodeA, nodeB].find((node) => owners.includes(node.running.services.dispatcher.owner));
    if (owners.length !== 1 || !runner) throw new Error(`expected one node to hold the source's lease, found ${JSON.stringify(owners)}`);
    return { runner, other: runner === nodeA ? nodeB : nodeA };
  }

  it('work queued on the node that finds the source running elsewhere is handed to the node running it, and the first node readies the source', async () => {
    const gatekeeper = await startGatekeeper();
    cleanups(gatekeeper.close);
    const key = (await nodeA.createUser({ plan: 'paid' })).apiKey;
    // Deployed through node B: its deploy loads the component in a worker there; node A has none yet.
    const deployed = await client(nodeB.url, key).post('/v1/sources', {
      component_code: `export default { name: "gated", version: "0.0.1", props: { http: "$.interface.http" },
        async run(event) { if (event.body.gate) await fetch(event.body.gate); this.$emit({ n: event.body.n }); } };`,
    });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    const { id } = deployed.body.data;
    const endpointB: string = deployed.body.data.configured_props.http.endpoint_url;
    const idleWorkers = (node: TestServer) => node.running.services.runtime.workerStates().idle;
    // Each node's readiness check keeps a worker of an account of its own.
    const idleBefore = new Map([nodeA, nodeB].map((node) => [node, idleWorkers(node)]));

    const signals = await watchSignals(nodeA.databaseUrl!);
    try {
      // One node runs the first event and holds its lease while the run waits at the gate.
      expect((await request('POST', endpointB, { body: { n: 1, gate: `${gatekeeper.url}/gate` } })).status).toBe(200);
      await waitFor(
        async () => gatekeeper.hits.get('/gate') ?? 0,
        (n) => n === 1,
        { what: 'the first run to wait at the gate' },
      );
      const { other } = await runningNode(id);
      // Queued on the other node, which finds the source held and tells the cluster instead of waiting for the lease.
      expect((await request('POST', endpointB.replace(nodeB.url, other.url), { body: { n: 2 } })).status).toBe(200);
      await waitFor(
        async () => signals.seen.some((m) => m.k === 'invocations' && m.i?.includes(id)),
        (seen) => seen,
        { what: 'the other node to signal the source it found running elsewhere' },
      );
      // Readied while it waits: a worker of the account, with the bundle loaded, for when the other node takes the
      // source over. Node B loaded one for the deploy, which serves; node A starts one.
      const readied = idleBefore.get(other)! + (other === nodeA ? 1 : 0);
      await waitFor(
        async () => idleWorkers(other),
        (idle) => idle === readied,
        { what: "the other node to keep a worker of the source's account" },
      );
    } finally {
      await signals.end();
    }
    gatekeeper.open();
    const events = await waitFor(
      () => client(nodeA.url, key).get(`/v1/sources/${id}/event_summaries?expand=event`),
      (r) => r.body.data?.length === 2,
      { what: 'both events, with the clock standing still' },
    );
    expect(events.body.data.map((e: { event: { n: number } }) => e.event.n).sort()).toEqual([1, 2]);
  });

  it('a source switched off through one node while the other runs it: that run commits nothing after the switch-off; it runs again once switched on', async () => {
    const gatekeeper = await startGatekeeper();
    cleanups(gatekeeper.close);
    const key = (await nodeA.createUser({ plan: 'paid' })).apiKey;
    const deployed = await client(nodeB.url, key).post('/v1/sources', {
      component_code: `export default { name: "gated off", version: "0.0.1", props: { http: "$.interface.http" },
        async run(event) { await fetch(event.body.gate); this.$emit({ n: event.body.n }); } };`,
    });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    const { id } = deployed.body.data;
    const endpointB: string = deployed.body.data.configured_props.http.endpoint_url;
    // One node runs the event and holds its lease while the run waits at the gate.
    expect((await request('POST', endpointB, { body: { n: 1, gate: `${gatekeeper.url}/gate` } })).status).toBe(200);
    await waitFor(
      async () => gatekeeper.hits.get('/gate') ?? 0,
      (n) => n === 1,
      { what: 'the run to wait at the gate' },
    );
    // Through the node running it, the switch-off would wait for the run (the gate opens only after it answers).
    const { other } = await runningNode(id);
    const off = await client(other.url, key).patch(`/v1/sources/${id}`, { active: false });
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    gatekeeper.open();
    // The run ends and its node tries the commit: it was committed (the row gone), or turned away (the row queued again).
    const after = await waitFor(
      () => invocationLeases(nodeA.databaseUrl!, id),
      (leases) => leases.leased === 0,
      { what: 'the run to end and its commit to be tried' },
    );
    const events = () => client(nodeA.url, key).get(`/v1/sources/${id}/event_summaries?expand=event`);
    // The run started before the switch-off; committed after it, its event came from a source that was off.
    expect((await events()).body.data).toEqual([]);
    expect(after.queued).toBe(1);
    // Kept, not dropped: switched on again, the source runs it (the gate is open now), once.
    expect((await client(nodeA.url, key).patch(`/v1/sources/${id}`, { active: true })).status).toBe(200);
    const emitted = await waitFor(events, (r) => r.body.data?.length === 1, { what: 'the run again, once switched on' });
    expect(emitted.body.data[0].event).toEqual({ n: 1 });
    expect(await invocationLeases(nodeA.databaseUrl!, id)).toEqual({ queued: 0, leased: 0 });
  });

  it('a source updated through one node while the other runs it: that run, of the old code, commits nothing after the update; it runs again with the new code', async () => {
    const gatekeeper = await startGatekeeper();
    cleanups(gatekeeper.close);
    const key = (await nodeA.createUser({ plan: 'paid' })).apiKey;
    const code = (version: number) => `export default { name: "gated update", version: "0.0.${version}", props: { http: "$.interface.http" },
      async run(event) { await fetch(event.body.gate); this.$emit({ n: event.body.n, version: ${version} }); } };`;
    const deployed = await client(nodeB.url, key).post('/v1/sources', { component_code: code(1) });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    const { id } = deployed.body.data;
    const endpointB: string = deployed.body.data.configured_props.http.endpoint_url;
    expect((await request('POST', endpointB, { body: { n: 1, gate: `${gatekeeper.url}/gate` } })).status).toBe(200);
    await waitFor(
      async () => gatekeeper.hits.get('/gate') ?? 0,
      (n) => n === 1,
      { what: 'the run of the old code to wait at the gate' },
    );
    // Through the node running it, the update would wait for the run (the gate opens only after it answers).
    const { other } = await runningNode(id);
    const updated = await client(other.url, key).patch(`/v1/sources/${id}`, { component_code: code(2) });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    gatekeeper.open();
    const events = await waitFor(
      async () => ({
        emitted: (await client(nodeA.url, key).get(`/v1/sources/${id}/event_summaries?expand=event`)).body.data,
        leases: await invocationLeases(nodeA.databaseUrl!, id),
      }),
      ({ emitted, leases }) => emitted?.length > 0 && leases.queued === 0,
      { what: 'the run to be committed' },
    );
    // Committed after the update answered, the old code's run would have emitted as if the update had not come.
    expect(events.emitted.map((e: { event: unknown }) => e.event)).toEqual([{ n: 1, version: 2 }]);
  });
});

/** The cluster's signals (kind and ids) as they go out on `tributary_signals`, read by a listener of the test's own. */
async function watchSignals(databaseUrl: string) {
  const listener = new pg.Client({ connectionString: databaseUrl });
  await listener.connect();
  const seen: Array<{ k: string; i?: string[] }> = [];
  let markerSeen: () => void = () => {};
  listener.on('notification', ({ payload }) => {
    if (payload === 'marker') return markerSeen();
    const message = JSON.parse(payload ?? '{}') as { k: string; i?: string[] };
    seen.push({ k: message.k, i: message.i });
  });
  await listener.query('listen tributary_signals');
  return {
    seen,
    /** Resolves once every signal committed so far has arrived: NOTIFY keeps commit order, so a marker sent now comes last. */
    async allArrived(): Promise<void> {
      const marker = new Promise<void>((resolve) => (markerSeen = resolve));
      await listener.query(`notify tributary_signals, 'marker'`);
      await marker;
    },
    end: () => listener.end(),
  };
}

/** Starts `tributary serve` as its own process; resolves once it says it runs. */
function node(args: string[]): Promise<{ child: ChildProcess; url: string | undefined; output: () => string }> {
  // A worker node is refused --port: it listens on none.
  const port = args.includes('worker') ? [] : ['--port', '0'];
  const child = spawn(process.execPath, [BIN, 'serve', ...port, '--log-level', 'warn', '--rate-limit', '0', '--secret-key', SECRET, ...args], {
    env: { PATH: process.env.PATH ?? '' },
  });
  let output = '';
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening at (http:\/\/\S+) |worker node is running/.exec(output);
      if (match) resolve({ child, url: match[1], output: () => output });
    });
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${output}`)));
  });
}

/** The source's queued invocations, and how many of them a node holds. */
/** The nodes holding leases on the source's invocations, by their lease owner names. */
async function leaseOwners(databaseUrl: string, sourceId: string): Promise<string[]> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query('select distinct lease_owner from invocations where source_id = $1 and lease_owner is not null', [sourceId]);
    return rows.map((row: { lease_owner: string }) => row.lease_owner);
  } finally {
    await db.end();
  }
}

async function invocationLeases(databaseUrl: string, sourceId: string): Promise<{ queued: number; leased: number }> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query(
      'select count(*)::int as queued, (count(*) filter (where lease_owner is not null))::int as leased from invocations where source_id = $1',
      [sourceId],
    );
    return rows[0] as { queued: number; leased: number };
  } finally {
    await db.end();
  }
}

describe.skipIf(!DIALECTS.includes('postgres'))('a worker node lost under load (PostgreSQL)', () => {
  // The last event's run takes 5 s: a node holding it is mid-run for that long, whatever batches came before.
  const SLOW = `export default { name: "slow", version: "0.0.1", props: { http: "$.interface.http" },
    async run(event) { await new Promise((r) => setTimeout(r, event.body.n === 20 ? 5000 : 100)); this.$emit({ n: event.body.n }); } };`;

  /** An api node, an account, a worker that is about to be lost, holding leases on acknowledged invocations. */
  async function clusterWithBusyWorker(database: { url: string }, started: ChildProcess[]) {
    const storage = (dir: string) => ['--data-dir', dir, '--database-url', database.url];
    const api = await node([...storage(tempDir()), '--role', 'api']);
    started.push(api.child);
    const key = await createAccount(storage(tempDir()), 'failover');
    const doomed = await node([...storage(tempDir()), '--role', 'worker']);
    started.push(doomed.child);
    const calls = client(api.url!, key);
    const slow = await calls.post('/v1/sources', { component_code: SLOW });
    expect(slow.status, JSON.stringify(slow.body)).toBe(200);
    const { id } = slow.body.data;
    const endpoint: string = slow.body.data.configured_props.http.endpoint_url;
    // A first event, so that the worker has its component's process running when the others are claimed.
    expect((await request('POST', endpoint, { body: { n: 0 } })).status).toBe(200);
    await waitFor(
      () => calls.get(`/v1/sources/${id}/event_summaries`),
      (r) => r.body.data.length === 1,
      { what: 'the first event' },
    );
    for (let n = 1; n <= 20; n++) expect((await request('POST', endpoint, { body: { n } })).status).toBe(200);
    // Every invocation left, the last one included, is held by the worker: it is inside its last, slow batch, and
    // has something to commit when it is lost or paused now (a batch it had already committed would leave nothing).
    await waitFor(
      () => invocationLeases(database.url, id),
      ({ queued, leased }) => leased > 0 && leased === queued,
      { what: 'the worker to hold every invocation left' },
    );
    const survivor = () => node([...storage(tempDir()), '--role', 'worker']).then((n) => started.push(n.child));
    const allEvents = () =>
      waitFor(
        () => calls.get(`/v1/sources/${id}/event_summaries?limit=100&expand=event`),
        (r) => r.body.data.length >= 21,
        { what: 'all 21 events, the lost worker’s taken over after its leases end', timeoutMs: 60_000 },
      );
    return { doomed, survivor, allEvents };
  }

  const numbersOf = (res: { body: { data: Array<{ event: { n: number } }> } }) => res.body.data.map((e) => e.event.n).sort((a, b) => a - b);
  const zeroToTwenty = Array.from({ length: 21 }, (_, i) => i);

  it('SIGKILL: its claimed invocations are taken over once their leases end; every acknowledged event is emitted once', async () => {
    const database = await createTestDatabase();
    const started: ChildProcess[] = [];
    try {
      const cluster = await clusterWithBusyWorker(database, started);
      await killHard(cluster.doomed.child);
      await cluster.survivor();
      expect(numbersOf(await cluster.allEvents())).toEqual(zeroToTwenty);
    } finally {
      for (const child of started) if (child.exitCode === null && child.signalCode === null) await killHard(child);
      await database.drop();
    }
  });

  it('paused past its leases (SIGSTOP): the node that took over commits; the paused one, resumed, commits nothing (fencing)', async () => {
    const database = await createTestDatabase();
    const started: ChildProcess[] = [];
    try {
      const cluster = await clusterWithBusyWorker(database, started);
      cluster.doomed.child.kill('SIGSTOP');
      await cluster.survivor();
      const taken = await cluster.allEvents();
      expect(numbersOf(taken)).toEqual(zeroToTwenty);
      cluster.doomed.child.kill('SIGCONT');
      // Once resumed it finishes its run and tries to commit; the fence turns it away. Paused inside a transaction
      // instead, it finds that PostgreSQL ended the session (which freed the survivor). Either way the survivor's events
      // stay the only ones: what the resumed node would have emitted would show as duplicates.
      await waitFor(
        async () => cluster.doomed.output(),
        (output) => ['lease lost before the commit', 'could not commit a batch', 'could not drain a source'].some((said) => output.includes(said)),
        { what: 'the resumed node to try its commit' },
      );
      const exited = new Promise((resolve) => cluster.doomed.child.once('exit', resolve));
      cluster.doomed.child.kill('SIGTERM');
      await exited;
      expect(numbersOf(await cluster.allEvents())).toEqual(zeroToTwenty);
    } finally {
      for (const child of started) if (child.exitCode === null && child.signalCode === null) await killHard(child);
      await database.drop();
    }
  });
});
