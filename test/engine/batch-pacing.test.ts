// A source whose runs are slow takes fewer of its queued invocations per batch, so that its events commit and its
// updates get through about once a second, not after up to 200 slow runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BATCH_TARGET_MS, BatchPacing, FIRST_BATCH_RUNS } from '../../src/engine/batch-pacing.js';
import type { InvocationRequest } from '../../src/runtime/types.js';
import { client, request } from '../helpers/client.js';
import { startGatekeeper, type Gatekeeper } from '../helpers/gatekeeper.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const RUN_MS = 50;
const QUEUED = 29;

describe.each(DIALECTS)('batches of a slow source on %s', (dialect) => {
  let server: TestServer;
  let gate: Gatekeeper;
  /** The runs each worker call of a source's `run` carried, by source. */
  const batches = new Map<string, number[]>();

  beforeAll(async () => {
    gate = await startGatekeeper();
    server = await startTestServer(dialect, { allowPrivateNetwork: true });
    // Looks at what each real worker call carries and passes it on unchanged.
    const runtime = server.running.services.runtime;
    const invoke = runtime.invoke.bind(runtime);
    runtime.invoke = async (call: InvocationRequest, hooks) => {
      if (call.method === 'run' && call.eventsJson) batches.set(call.sourceId, [...(batches.get(call.sourceId) ?? []), call.eventsJson.length]);
      return invoke(call, hooks);
    };
  });
  afterAll(async () => {
    await server?.destroy();
    await gate?.close();
  });

  it(`takes at most ${BATCH_TARGET_MS / RUN_MS} runs of ${RUN_MS} ms a batch, and runs every one`, async () => {
    const api = client(server.url, (await server.createUser({ plan: 'paid' })).apiKey);
    const created = await api.post('/v1/sources', {
      component_code: `export default { name: "slow", version: "0.0.1", props: { http: "$.interface.http" },
        async run(event) {
          if (event.body.gate) await fetch(event.body.gate);
          await new Promise((resolve) => setTimeout(resolve, ${RUN_MS}));
          this.$emit({ n: event.body.n });
        } };`,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id: string = created.body.data.id;
    const endpoint: string = created.body.data.configured_props.http.endpoint_url;
    // The first run waits at the gate while the rest queue behind it: without pacing, the next batch took them all.
    expect((await request('POST', endpoint, { body: { n: 0, gate: `${gate.url}/gate` } })).status).toBe(200);
    await waitFor(
      async () => gate.hits.get('/gate') ?? 0,
      (n) => n === 1,
      { what: 'the first run at the gate' },
    );
    for (let n = 1; n <= QUEUED; n++) expect((await request('POST', endpoint, { body: { n } })).status).toBe(200);
    gate.open();
    const events = await waitFor(
      async () => (await api.get(`/v1/sources/${id}/event_summaries?limit=100`)).body.data as Array<{ event: { n: number } }>,
      (e) => e.length === QUEUED + 1,
      { what: 'every run' },
    );
    expect(events.map((e) => e.event.n).reverse()).toEqual(Array.from({ length: QUEUED + 1 }, (_, n) => n));
    const sizes = batches.get(id) ?? [];
    expect(sizes[0]).toBe(1);
    expect(sizes.reduce((sum, size) => sum + size, 0)).toBe(QUEUED + 1);
    for (const size of sizes) expect(size, `batches: ${sizes.join(', ')}`).toBeLessThanOrEqual(BATCH_TARGET_MS / RUN_MS);
  });
});

describe('BatchPacing', () => {
  it('takes a small first batch, then as many as run in about a second, at least one and at most the batch size', () => {
    const pacing = new BatchPacing(200);
    expect(pacing.limit('dc_1')).toBe(FIRST_BATCH_RUNS);
    pacing.ran('dc_1', 10, 10 * 250);
    expect(pacing.limit('dc_1')).toBe(4);
    pacing.ran('dc_1', 4, 4 * 0.01);
    expect(pacing.limit('dc_1')).toBe(200);
    pacing.ran('dc_1', 1, 60_000);
    expect(pacing.limit('dc_1')).toBe(1);
    // A batch that ran nothing (its source deleted) says nothing of the time per run.
    pacing.ran('dc_1', 0, 0);
    expect(pacing.limit('dc_1')).toBe(1);
  });
});
