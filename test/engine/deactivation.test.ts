// Runs queued before a source is switched off wait while it is off, and run once it is switched on again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';
import { type Gatekeeper, startGatekeeper } from '../helpers/gatekeeper.js';
import { waitFor } from '../helpers/wait.js';
import type { SourceLocks } from '../../src/engine/source-locks.js';

/** Its deactivate() waits at the gate; each run emits the state its hooks last wrote, so a run after deactivate() shows "off". */
const gatedSource = (gate: string) => `
module.exports = {
  name: "gated",
  version: "0.0.1",
  props: { http: { type: "$.interface.http" }, db: "$.service.db" },
  hooks: {
    async activate() { this.db.set("state", "on"); },
    async deactivate() { await fetch(${JSON.stringify(`${gate}/gate`)}); this.db.set("state", "off"); },
  },
  async run(event) { this.$emit({ state: this.db.get("state"), n: event.body ? event.body.n : event.n }); },
};
`;

describe.each(DIALECTS)('switching a source off on %s', (dialect) => {
  let server: TestServer;
  let gate: Gatekeeper;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    gate = await startGatekeeper();
    server = await startTestServer(dialect, { allowPrivateNetwork: true });
    api = client(server.url, (await server.createUser({ plan: 'paid' })).apiKey);
  });
  afterAll(async () => {
    await server?.destroy();
    await gate?.close();
  });

  it('holds runs queued before deactivate() (an acknowledged HTTP request, a manual run) until the source is on again', async () => {
    const created = await api.post('/v1/sources', { component_code: gatedSource(gate.url) });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id: string = created.body.data.id;
    const endpoint: string = created.body.data.configured_props.http.endpoint_url;

    // The update holds the source while its deactivate() waits at the gate; the source is still on meanwhile.
    const switchingOff = api.patch(`/v1/sources/${id}`, { active: false });
    await waitFor(
      async () => gate.hits.get('/gate') ?? 0,
      (n) => n === 1,
      { what: 'deactivate() at the gate' },
    );
    const acknowledged = await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: 1 }) });
    expect(acknowledged.status).toBe(200);
    expect((await api.post(`/v1/sources/${id}/run`, { n: 2 })).status).toBe(202);
    gate.open();
    const off = await switchingOff;
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    expect(off.body.data.active).toBe(false);

    // Switched on at once: the runs queued before the switch-off were next in line, so without the hold they ran
    // between the two changes, after deactivate() (state "off"). Held, they run after activate(), in order.
    expect((await api.patch(`/v1/sources/${id}`, { active: true })).status).toBe(200);
    const events = await waitFor(
      async () => (await api.get(`/v1/sources/${id}/event_summaries?limit=10`)).body.data as Array<{ event: { state: string; n: number } }>,
      (e) => e.length >= 2,
      { what: 'both held runs' },
    );
    expect(events.map((e) => e.event).reverse()).toEqual([
      { state: 'on', n: 1 },
      { state: 'on', n: 2 },
    ]);
    const queued = await server.running.services.store.db.selectFrom('invocations').select('id').where('source_id', '=', id).execute();
    expect(queued).toEqual([]);
  });

  it('lets an update through between two batches of a busy source, not once its queue is empty', async () => {
    // Without the turn, a source whose queue never empties (requests arriving as fast as it runs them) held its
    // updates, switch-offs and deletes for as long as the requests kept coming.
    const held = await startGatekeeper();
    try {
      const created = await api.post('/v1/sources', {
        component_code: `export default { name: "labelled", version: "0.0.1",
          props: { http: "$.interface.http", label: { type: "string" } },
          async run(event) { await fetch(${JSON.stringify(`${held.url}/gate`)}); this.$emit({ n: event.body.n, label: this.label }); } };`,
        configured_props: { label: 'before' },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const id: string = created.body.data.id;
      const post = (n: number) =>
        fetch(created.body.data.configured_props.http.endpoint_url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ n }),
        });
      expect((await post(1)).status).toBe(200);
      await waitFor(
        async () => held.hits.get('/gate') ?? 0,
        (n) => n === 1,
        { what: 'the first run at the gate' },
      );
      // Queued behind the running batch, in that order: the second request, then the update.
      expect((await post(2)).status).toBe(200);
      const updating = api.patch(`/v1/sources/${id}`, { configured_props: { label: 'after' } });
      // Private to the dispatcher; read here so that the gate opens only once the update is in line.
      const { locks } = server.running.services.dispatcher as unknown as { locks: SourceLocks };
      await waitFor(
        async () => locks.hasWaiting(id),
        (waiting) => waiting,
        { what: 'the update to wait for the source' },
      );
      held.open();
      expect((await updating).status).toBe(200);
      const events = await waitFor(
        async () => (await api.get(`/v1/sources/${id}/event_summaries?limit=10`)).body.data as Array<{ event: { n: number; label: string } }>,
        (e) => e.length >= 2,
        { what: 'both runs' },
      );
      expect(events.map((e) => e.event).reverse()).toEqual([
        { n: 1, label: 'before' },
        { n: 2, label: 'after' },
      ]);
    } finally {
      await held.close();
    }
  });
});
