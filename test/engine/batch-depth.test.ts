// A batch of one source's runs at different listener depths: each run's events are routed at its own depth.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_LISTENER_DEPTH } from '../../src/commit/router.js';
import { queueInvocations } from '../../src/commit/invocations.js';
import { sameDepthRuns } from '../../src/commit/effects.js';
import { account, emitsOf } from '../delivery/helpers.js';
import { waitFor } from '../helpers/wait.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';

/** Emits its run's trigger event; the run of "first" waits for HOLD_URL's answer first. */
const RELAY_STEP = `module.exports = { async run({ steps, $ }) {
  if (steps.trigger.event === "first") await (await fetch("HOLD_URL")).text();
  $.send.emit({ raw_event: steps.trigger.event });
} };`;

/** An HTTP server whose answers wait until `release()`; `requested` resolves at its first request. */
async function holdingServer(): Promise<{ url: string; requested: Promise<void>; release: () => void; close: () => Promise<void> }> {
  let release!: () => void;
  let heard!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const requested = new Promise<void>((resolve) => (heard = resolve));
  const server = http.createServer((_request, response) => {
    heard();
    void released.then(() => response.end('released'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, requested, release, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('sameDepthRuns', () => {
  it('splits where the depth changes, keeping the order', () => {
    expect(sameDepthRuns([0, 0, 0])).toEqual([{ depth: 0, from: 0, to: 3 }]);
    expect(sameDepthRuns([8, 0, 0, 8])).toEqual([
      { depth: 8, from: 0, to: 1 },
      { depth: 0, from: 1, to: 3 },
      { depth: 8, from: 3, to: 4 },
    ]);
    expect(sameDepthRuns([])).toEqual([]);
  });
});

describe.each(DIALECTS)('a batch of runs at different listener depths on %s', (dialect) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(dialect, { allowPrivateNetwork: true });
  });
  afterAll(async () => {
    await server?.destroy();
  });

  it("routes a direct run's events to listeners though a run beside it in the batch has passed the hop limit", async () => {
    const a = await account(server);
    const emitter = await a.deploy();
    const listener = await a.deploy();
    await a.subscribe(emitter, listener);
    const userId = (await a.api.get('/v1/users/me')).body.data.id;
    // Both rows in one commit, so that one batch takes them: a listener run at the hop limit (the end of a chain of
    // sources) and a manual run, which starts no chain.
    const { store, dispatcher } = server.running.services;
    const queued = await store.db.transaction().execute((trx) =>
      queueInvocations(
        trx,
        store.dialect,
        [
          { sourceId: emitter, userId, trigger: 'listener', event: emitsOf([{ event: 'deep' }]), depth: MAX_LISTENER_DEPTH },
          { sourceId: emitter, userId, trigger: 'manual', event: emitsOf([{ event: 'direct' }]), depth: 0 },
        ],
        Date.now(),
      ),
    );
    dispatcher.wake([emitter]);
    await waitFor(
      () => store.db.selectFrom('invocations').select('id').where('id', 'in', queued).execute(),
      (rows) => rows.length === 0,
      { what: 'both runs to complete' },
    );
    // The deep run's event is cut and reported; the direct run's event reaches the listener.
    const [report] = await a.eventsOf(emitter, 1, '/$errors');
    expect(report.event.error.message).toBe(
      `1 event(s) of ${emitter} were not delivered to ${listener}: they have passed through ${MAX_LISTENER_DEPTH} listener hops, ` +
        `the most allowed is ${MAX_LISTENER_DEPTH} (do subscriptions form a loop?)`,
    );
    const heard = await a.eventsOf(listener, 1);
    expect(heard.map((e) => e.event.event)).toEqual(['direct']);
    expect((await a.eventsOf(emitter, 2)).map((e) => e.event).sort()).toEqual(['deep', 'direct']);
  });

  it("routes a workflow's direct run's events to listeners though a run beside it in the step's batch has passed the hop limit", async () => {
    const hold = await holdingServer();
    try {
      const a = await account(server);
      const code = RELAY_STEP.replace('HOLD_URL', hold.url);
      const created = await a.api.post('/v1/workflows', { name: 'relay', steps: [{ name: 'relay', component_code: code }] });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const workflow = created.body.data.id;
      const listener = await a.deploy();
      await a.subscribe(workflow, listener);
      const userId = (await a.api.get('/v1/users/me')).body.data.id;
      const { workflowRuns } = server.running.services;
      // The first run holds the step's queue: the two queued meanwhile make its next batch, one call of both.
      await workflowRuns.queue([{ workflowId: workflow, userId, trigger: 'manual', event: 'first', depth: 0 }]);
      await hold.requested;
      await workflowRuns.queue([
        { workflowId: workflow, userId, trigger: 'event', event: 'deep', depth: MAX_LISTENER_DEPTH },
        { workflowId: workflow, userId, trigger: 'manual', event: 'direct', depth: 0 },
      ]);
      hold.release();
      await waitFor(
        () => a.api.get(`/v1/workflows/${workflow}/runs?limit=10`),
        (r) => r.body.data.filter((run: { status: string }) => run.status === 'succeeded').length === 3,
        { what: 'the three runs to succeed' },
      );
      const errors = await waitFor(
        () => a.api.get(`/v1/workflows/${workflow}/$errors/event_summaries?expand=event`),
        (r) => r.body.data?.length >= 1,
        { what: "the workflow's loop report" },
      );
      expect(errors.body.data[0].event.error.message).toBe(
        `1 event(s) of ${workflow} were not delivered to ${listener}: they have passed through ${MAX_LISTENER_DEPTH} listener hops, ` +
          `the most allowed is ${MAX_LISTENER_DEPTH} (do subscriptions form a loop?)`,
      );
      const heard = await a.eventsOf(listener, 2);
      expect(heard.map((e) => e.event.event)).toEqual([{ raw_event: 'direct' }, { raw_event: 'first' }]);
    } finally {
      await hold.close();
    }
  });
});
