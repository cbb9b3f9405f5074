// Dedupe and ts ordering of runs that run and commit as one batch: each run is deduped after the runs before it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../helpers/client.js';
import { type Gatekeeper, startGatekeeper } from '../helpers/gatekeeper.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/** Emits `ids` (with `ts` when given) under `dedupe`; a run with `gate` first waits at the gate. */
const gatedEmitter = (gate: string, dedupe: string) => `
module.exports = {
  name: "batched ${dedupe}",
  version: "0.0.1",
  dedupe: "${dedupe}",
  async run(event) {
    if (event.gate) await fetch(${JSON.stringify(`${gate}/gate`)});
    for (const e of event.emits) this.$emit({ id: e.id }, e);
  },
};
`;

describe.each(DIALECTS)('dedupe of batched runs on %s', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    server = await startTestServer(dialect, { allowPrivateNetwork: true });
    api = client(server.url, (await server.createUser({ plan: 'paid' })).apiKey);
  });
  afterAll(() => server?.destroy());

  /** Runs `first` while it holds the gate, queues `rest` behind it (one batch), opens the gate; the emitted ids, oldest first. */
  async function emittedIds(dedupe: string, first: object[], rest: object[][], expected: number): Promise<unknown[]> {
    // A gate of its own: an opened gate stays open.
    const gate: Gatekeeper = await startGatekeeper();
    try {
      return await emittedIdsAt(gate, dedupe, first, rest, expected);
    } finally {
      await gate.close();
    }
  }

  async function emittedIdsAt(gate: Gatekeeper, dedupe: string, first: object[], rest: object[][], expected: number): Promise<unknown[]> {
    const created = await api.post('/v1/sources', { component_code: gatedEmitter(gate.url, dedupe) });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id: string = created.body.data.id;
    expect((await api.post(`/v1/sources/${id}/run`, { gate: true, emits: first })).status).toBe(202);
    await waitFor(
      async () => gate.hits.get('/gate') ?? 0,
      (n) => n === 1,
      { what: 'the first run at the gate' },
    );
    const queued: string[] = [];
    for (const emits of rest) {
      const res = await api.post(`/v1/sources/${id}/run`, { emits });
      expect(res.status).toBe(202);
      queued.push(res.body.data.id);
    }
    gate.open();
    await waitFor(
      () => server.running.services.store.db.selectFrom('invocations').select('id').where('id', 'in', queued).execute(),
      (rows) => rows.length === 0,
      { what: 'the queued runs to complete' },
    );
    const res = await api.get(`/v1/sources/${id}/event_summaries?limit=100`);
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(expected);
    return (res.body.data as Array<{ event: { id: unknown } }>).map((e) => e.event.id).reverse();
  }

  it('last: a run emits only what follows the id the run before it ended with, also within one batch', async () => {
    const poll = [{ id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }];
    expect(await emittedIds('last', [{ id: 1 }, { id: 2 }, { id: 3 }], [poll, poll], 4)).toEqual([1, 2, 3, 4]);
  });

  it('greatest: ts orders the events of one run, not those of the runs batched with it', async () => {
    // One by one: the second run's 5 is emitted, the third run's 3 (an older ts) is not above it.
    expect(await emittedIds('greatest', [{ id: 1 }], [[{ id: 5, ts: 2000 }], [{ id: 3, ts: 1000 }]], 2)).toEqual([1, 5]);
  });
});
