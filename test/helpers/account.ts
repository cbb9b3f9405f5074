// A fresh account on a test server, with the few calls most tests make: deploy, run and wait, read events.
import { expect } from 'vitest';
import { client } from './client.js';
import { waitFor } from './wait.js';
import { emitterSource } from './components.js';
import type { TestServer } from './server.js';

/** The event that makes `emitterSource()` emit these items. */
export const emitsOf = (items: Array<{ event: unknown; meta?: object }>) => ({ emits: items.map((i) => ({ event: i.event, meta: i.meta ?? {} })) });

export async function account(server: TestServer) {
  const key = (await server.createUser()).apiKey;

  async function deploy(code = emitterSource()): Promise<string> {
    const res = await helpers.api.post('/v1/sources', { component_code: code });
    expect(res.status).toBe(200);
    return res.body.data.id;
  }

  /** Queues a manual run and waits until the queue has run it (its effects are then committed). */
  async function runAndWait(sourceId: string, event: unknown): Promise<void> {
    const res = await helpers.api.post(`/v1/sources/${sourceId}/run`, event);
    expect(res.status).toBe(202);
    expect(res.body.data.id).toMatch(/^inv_/);
    await waitFor(
      () => server.running.services.store.db.selectFrom('invocations').select('id').where('id', '=', res.body.data.id).execute(),
      (rows) => rows.length === 0,
      { what: `invocation ${res.body.data.id} to complete` },
    );
  }

  /** Events of a stream ('' default, '/$logs', '/$errors'), newest first, once there are at least `n`. */
  async function eventsOf(id: string, n: number, stream = ''): Promise<any[]> {
    const res = await waitFor(
      () => helpers.api.get(`/v1/sources/${id}${stream}/event_summaries?expand=event&limit=100`),
      (r) => r.body.data?.length >= n,
      { what: `${n} events on ${id}${stream}` },
    );
    return res.body.data;
  }

  const helpers = {
    key,
    /** Bound on each use, so that it follows the server across restarts (which change its port). */
    get api() {
      return client(server.url, key);
    },
    deploy,
    runAndWait,
    eventsOf,
  };
  return helpers;
}
