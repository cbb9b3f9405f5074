// SIGTERM under ingest load on a real `tributary serve`, its clients on keep-alive connections: the process exits 0;
// every request a client wrote was answered (200, or 503 in the registered format with Retry-After and Connection:
// close), none cut off by the connection closing under it; a new connection is refused; and every request it
// acknowledged is stored once it starts again.
import { Pool } from 'undici';
import { describe, expect, it } from 'vitest';
import { cleanupsAfterAll } from '../helpers/cleanups.js';
import { client } from '../helpers/client.js';
import { createAccount, freshStorage, serve } from '../helpers/processes.js';
import { waitFor } from '../helpers/wait.js';

const SLOW_ECHO =
  'export default { name: "echo", version: "0.0.1", props: { http: "$.interface.http" }, async run(e) { await new Promise((r) => setTimeout(r, 20)); this.$emit({ n: e.body.n }); } };';

describe('graceful stop', () => {
  const cleanups = cleanupsAfterAll();

  it('SIGTERM under load: exit 0, 503 (never 500) to what it turns away, and every acknowledged event stored after a restart', async () => {
    const storage = await freshStorage('sqlite');
    cleanups(storage.cleanup);
    const first = await serve(storage.args);
    const key = await createAccount(storage.args, 'stopper');
    const deployed = await client(first.url, key).post('/v1/sources', { component_code: SLOW_ECHO });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    const endpoint: string = deployed.body.data.configured_props.http.endpoint_url;

    // 16 keep-alive connections, each busy with one request after another: the server closing a connection between
    // two of them is what would cut off a request already written on it.
    const { origin, pathname } = new URL(endpoint);
    const pool = new Pool(origin, { connections: 16 });
    cleanups(() => pool.close());
    type Outcome =
      | { asked: 'endpoint' | 'api'; status: number; body: unknown; retryAfter: unknown; connection: unknown }
      | { asked: 'endpoint' | 'api'; failed: string };
    const outcomes: Outcome[] = [];
    let exited = false;
    let next = 0;
    // Three in four post an event to the endpoint; the rest ask the API, which is turned away the same way.
    const send = async (n: number): Promise<Outcome> => {
      const asked = n % 4 === 3 ? 'api' : 'endpoint';
      try {
        const answer = await pool.request(
          asked === 'api'
            ? { method: 'GET', path: '/v1/users/me', headers: { authorization: `Bearer ${key}` } }
            : { method: 'POST', path: pathname, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) },
        );
        const body: unknown = await answer.body.json();
        return { asked, status: answer.statusCode, body, retryAfter: answer.headers['retry-after'], connection: answer.headers.connection };
      } catch (error) {
        return { asked, failed: (error as { code?: string }).code ?? String(error) };
      }
    };
    // A client whose connection was refused or broken stops there, as one backing off would.
    const loops = Array.from({ length: 16 }, async () => {
      while (!exited) {
        const outcome = await send(next++);
        outcomes.push(outcome);
        if ('failed' in outcome) return;
      }
    });
    await waitFor(
      async () => outcomes.filter((o) => 'status' in o && o.status === 200).length,
      (n) => n >= 30,
      { what: 'acknowledged requests' },
    );
    const exit = new Promise<number | null>((resolve) => first.child.once('exit', (code) => resolve(code)));
    first.child.kill('SIGTERM');
    expect(await exit).toBe(0);
    exited = true;
    await Promise.all(loops);

    // A refused connection is a clean outcome (nothing was sent); a request cut off after it was written is not.
    const failures = outcomes.flatMap((o) => ('failed' in o ? [o.failed] : []));
    expect(failures.filter((code) => code !== 'ECONNREFUSED')).toEqual([]);
    const answered = outcomes.flatMap((o) => ('status' in o ? [o] : []));
    for (const answer of answered.filter((a) => a.status !== 200)) {
      expect(answer.status).toBe(503);
      expect(answer.retryAfter).toBe('5');
      expect(answer.connection).toBe('close');
      expect(answer.body).toEqual({ code: 'unavailable', error: 'the server is stopping: nothing was done; try again shortly' });
    }
    const acknowledged = answered.filter((a) => a.asked === 'endpoint' && a.status === 200).length;

    const second = await serve(storage.args);
    cleanups(async () => {
      const gone = new Promise((resolve) => second.child.once('exit', resolve));
      second.child.kill('SIGTERM');
      await gone;
    });
    const stored = await waitFor(
      () => client(second.url, key).get(`/v1/sources/${deployed.body.data.id}/event_summaries?limit=1`),
      (r) => r.body.page_info?.total_count === acknowledged,
      { what: `all ${acknowledged} acknowledged events stored`, timeoutMs: 60_000 },
    );
    expect(stored.body.page_info.total_count).toBe(acknowledged);
  });
});
