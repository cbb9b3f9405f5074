// SIGTERM under ingest load on a real `tributary serve`: the process exits 0; requests it turned away got 503 in the
// registered format with Retry-After; every request it acknowledged is stored once it starts again.
import { describe, expect, it } from 'vitest';
import { cleanupsAfterAll } from '../helpers/cleanups.js';
import { client, request } from '../helpers/client.js';
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

    const answers: Array<{ status: number; body: unknown; retryAfter: string | null } | 'no connection'> = [];
    let exited = false;
    let next = 0;
    const loops = Array.from({ length: 6 }, async () => {
      while (!exited) {
        const n = next++;
        try {
          const answer = await request('POST', endpoint, { body: { n } });
          answers.push({ status: answer.status, body: answer.body, retryAfter: answer.headers.get('retry-after') });
        } catch {
          answers.push('no connection');
        }
      }
    });
    await waitFor(
      async () => answers.filter((a) => a !== 'no connection' && a.status === 200).length,
      (n) => n >= 30,
      { what: 'acknowledged requests' },
    );
    const exit = new Promise<number | null>((resolve) => first.child.once('exit', (code) => resolve(code)));
    first.child.kill('SIGTERM');
    expect(await exit).toBe(0);
    exited = true;
    await Promise.all(loops);

    const answered = answers.filter((a) => a !== 'no connection');
    for (const answer of answered.filter((a) => a.status !== 200)) {
      expect(answer.status).toBe(503);
      expect(answer.retryAfter).toBe('5');
      expect(answer.body).toEqual({ code: 'unavailable', error: 'the server is stopping: nothing was done; try again shortly' });
    }
    const acknowledged = answered.filter((a) => a.status === 200).length;

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
