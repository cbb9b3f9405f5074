import { describe, expect, it } from 'vitest';
import { cleanupsAfterAll, killedAfterAll } from '../helpers/cleanups.js';
import { DIALECTS } from '../helpers/server.js';
import { client, request } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { createAccount, freshStorage, killHard, serve } from '../helpers/processes.js';

const ECHO = `
module.exports = {
  name: "Echo",
  version: "0.0.1",
  props: { http: "$.interface.http" },
  async run(event) { this.$emit(event.body, { id: event.body.seq }); },
};
`;

describe.each(DIALECTS)('crash recovery on %s', (dialect) => {
  const cleanups = cleanupsAfterAll();
  const children = killedAfterAll();

  it('loses no acknowledged request and duplicates none', async () => {
    const { args: storage, cleanup } = await freshStorage(dialect);
    cleanups(cleanup);
    const key = await createAccount(storage, 'loader');

    const first = await serve(storage);
    children.push(first.child);
    const deployed = await client(first.url, key).post('/v1/sources', { component_code: ECHO });
    expect(deployed.status).toBe(200);
    const sourceId = deployed.body.data.id as string;
    const endpointPath = new URL(deployed.body.data.configured_props.http.endpoint_url).pathname;

    // Sustained load from 16 connections; the server is killed while it runs.
    const acknowledged = new Set<number>();
    let seq = 0;
    let killed = false;
    const loop = async () => {
      while (!killed) {
        const mine = seq++;
        try {
          const res = await fetch(`${first.url}${endpointPath}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ seq: mine }),
          });
          if (res.status >= 200 && res.status < 300) acknowledged.add(mine);
          await res.arrayBuffer();
        } catch {
          // Connection refused or reset once the server is gone: not acknowledged.
        }
      }
    };
    const loops = Array.from({ length: 16 }, loop);
    await waitFor(
      async () => acknowledged.size,
      (n) => n >= 500,
      { what: '500 acknowledged requests before the kill' },
    );
    await killHard(first.child);
    killed = true;
    await Promise.all(loops);
    expect(acknowledged.size).toBeGreaterThanOrEqual(500);

    const second = await serve(storage);
    children.push(second.child);
    const api = client(second.url, key);
    const seen = new Map<number, number>();
    await waitFor(
      async () => {
        seen.clear();
        let after: string | undefined;
        for (;;) {
          const page = await api.get(`/v1/sources/${sourceId}/event_summaries?limit=100&expand=event${after ? `&after=${after}` : ''}`);
          for (const e of page.body.data) seen.set(e.event.seq, (seen.get(e.event.seq) ?? 0) + 1);
          if (page.body.data.length < 100) break;
          after = page.body.page_info.end_cursor;
        }
        return seen.size;
      },
      () => [...acknowledged].every((s) => seen.has(s)),
      { what: 'every acknowledged request to have its event', timeoutMs: 60_000 },
    );
    const duplicates = [...seen].filter(([, count]) => count > 1);
    expect(duplicates).toEqual([]);
    expect([...acknowledged].filter((s) => !seen.has(s))).toEqual([]);
    const health = await request('GET', `${second.url}/healthz`);
    expect(health.status).toBe(200);
    second.child.kill('SIGTERM');
  });
});
