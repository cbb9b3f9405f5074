// A data store's 4 MB limit holds across runs that write it at the same time: each run's own check sees only what it
// loaded, so the commit checks what the store would hold, and the run that would take it past the limit fails.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanupsAfterAll } from '../helpers/cleanups.js';
import { client } from '../helpers/client.js';
import { startGatekeeper } from '../helpers/gatekeeper.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/** Sets three values of 1,000,000 characters (3,000,015 bytes with the keys and JSON quotes), then waits at the gate. */
const FILLER = `module.exports = { name: "filler", version: "1.0.0", props: { store: { type: "data_store" } },
  async run(event) {
    for (let i = 0; i < 3; i++) await this.store.set(event.tag + "-" + i, "x".repeat(1000000));
    await fetch(event.gate);
    this.$emit(event.tag);
  } };`;

describe.each(DIALECTS)('the data store size limit on %s', (dialect) => {
  const cleanups = cleanupsAfterAll();
  let server: TestServer;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    server = await startTestServer(dialect, { allowPrivateNetwork: true });
    api = client(server.url, (await server.createUser({ plan: 'paid' })).apiKey);
  });
  afterAll(async () => {
    await server?.destroy();
  });

  it('fails the run whose commit would take a store past 4 MB that two runs filled at once, and keeps the other', async () => {
    const gatekeeper = await startGatekeeper();
    cleanups(gatekeeper.close);
    const ids: string[] = [];
    for (const name of ['filler-a', 'filler-b']) {
      const deployed = await api.post('/v1/sources', { component_code: FILLER, name, configured_props: { store: 'big' } });
      expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
      ids.push(deployed.body.data.id);
    }
    // Both runs load the empty store, write 3 MB each, and wait at the gate: each fits what it loaded.
    for (const [i, id] of ids.entries()) expect((await api.post(`/v1/sources/${id}/run`, { tag: 'ab'[i], gate: `${gatekeeper.url}/gate` })).status).toBe(202);
    await waitFor(
      async () => gatekeeper.hits.get('/gate') ?? 0,
      (hits) => hits === 2,
      { what: 'both runs to wait at the gate' },
    );
    gatekeeper.open();
    const streams = (stream: string) =>
      Promise.all(ids.map(async (id) => (await api.get(`/v1/sources/${id}${stream}/event_summaries?expand=event`)).body.data));
    const [emitted, errors] = await waitFor(
      () => Promise.all([streams(''), streams('/$errors')]),
      ([e, r]) => e.flat().length + r.flat().length === 2,
      { what: 'both runs to be committed or failed' },
    );
    // The first to commit keeps its writes and its event; the second's writes would make 6,000,030 bytes.
    const kept = emitted.findIndex((events: unknown[]) => events.length === 1);
    expect(kept).toBeGreaterThanOrEqual(0);
    expect(emitted[1 - kept]).toEqual([]);
    expect(errors[kept]).toEqual([]);
    expect(errors[1 - kept].map((e: { event: { error: { name: string; message: string } } }) => e.event.error)).toEqual([
      expect.objectContaining({
        name: 'ResultsRefusedError',
        message: expect.stringContaining('data store "big" would hold 6000030 bytes, past its limit of 4194304'),
      }),
    ]);
    const tag = 'ab'[kept];
    expect((await api.get('/v1/data_stores/big/keys')).body.data.keys).toEqual([`${tag}-0`, `${tag}-1`, `${tag}-2`]);
  });
});
