// A dependency outage under load, end to end: PostgreSQL cut off (through a TCP proxy, so that other tests' server
// stays up), for one node and for a cluster, and SQLite's disk full (a small tmpfs). While it lasts, requests get 503
// (507 for a full disk) with Retry-After and a JSON body, never a 500 or a hang; nothing acknowledged is lost (and a
// request whose COMMIT was cut off is answered as perhaps stored, never as not written); the service recovers by
// itself when the dependency returns; the log says so once when it starts and once when it ends.
import { execFileSync, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/app.js';
import { client, request } from '../helpers/client.js';
import { createTestDatabase, DIALECTS, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { cleanupsAfterAll } from '../helpers/cleanups.js';
import { proxyInFrontOf, type TcpProxy } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait.js';
import { openStream, startReceiver } from '../delivery/helpers.js';
import { mountTmpfs } from '../helpers/mounts.js';
import { startGatekeeper } from '../helpers/gatekeeper.js';
import pg from 'pg';

/** How many invocations wait in the queue, read straight from the database. */
async function invocationsQueued(databaseUrl: string): Promise<number> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    return (await db.query('select count(*)::int as n from invocations')).rows[0].n as number;
  } finally {
    await db.end();
  }
}

const require = createRequire(import.meta.url);

const ECHO = 'export default { name: "echo", version: "0.0.1", props: { http: "$.interface.http" }, async run(e) { this.$emit({ n: e.body.n }); } };';
/** Keeps whole bodies as events, so that a load fills a disk. */
const KEEPER = 'export default { name: "keeper", version: "0.0.1", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body); } };';

/** JSON log lines of a server, collected. */
function collectedLogger() {
  const lines: Array<{ level: number; msg: string }> = [];
  const logger = createLogger({ logLevel: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { logger, lines };
}

/** Requests sent by `concurrency` loops until stopped, each answer kept. */
function loadOn(endpoint: string, body: (n: number) => object, concurrency = 6) {
  const answers: Array<{ n: number; status: number; retryAfter: string | null; body: any }> = [];
  let stopped = false;
  let next = 0;
  const loops = Array.from({ length: concurrency }, async () => {
    while (!stopped) {
      const n = next++;
      const answer = await request('POST', endpoint, { body: body(n) });
      answers.push({ n, status: answer.status, retryAfter: answer.headers.get('retry-after'), body: answer.body });
    }
  });
  return {
    answers,
    since: (index: number) => answers.slice(index),
    stop: async () => {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

async function storedCount(server: TestServer, key: string, sourceId: string): Promise<number> {
  const res = await client(server.url, key).get(`/v1/sources/${sourceId}/event_summaries?limit=1`);
  return res.body.page_info.total_count as number;
}

/** The `n` of every event the source stored, read page by page. */
async function storedNumbers(server: TestServer, key: string, sourceId: string): Promise<number[]> {
  const numbers: number[] = [];
  let after = '';
  for (;;) {
    const res = await client(server.url, key).get(`/v1/sources/${sourceId}/event_summaries?limit=100&expand=event${after}`);
    if (res.status !== 200) throw new Error(`reading the stored events answered ${res.status}: ${JSON.stringify(res.body)}`);
    numbers.push(...res.body.data.map((summary: { event: { n: number } }) => summary.event.n));
    if (res.body.data.length < 100) return numbers;
    after = `&after=${res.body.page_info.end_cursor}`;
  }
}

/** The log lines of background work meeting an outage and seeing its end. */
const BACKGROUND_DOWN = 'the database is unreachable: runs, timers and deliveries wait, and go on by themselves once it is back';
const BACKGROUND_BACK = 'the database is back: runs, timers and deliveries go on';

/** What PostgreSQL unreachable answers: nothing written, or (the connection lost during COMMIT) perhaps written. */
const NOT_WRITTEN = { code: 'unavailable', error: 'the database is unreachable: nothing was written; try again shortly' };
const PERHAPS_WRITTEN = {
  code: 'unavailable',
  error: 'the database connection was lost while this request was being committed: it may have been stored; try again shortly',
};

type Load = ReturnType<typeof loadOn>;

/**
 * Under `load`: `count` requests acknowledged, then the proxy cut (or frozen) until `count` are refused, then restored
 * (or thawed) until `count` are acknowledged again.
 */
async function cutUnderLoad(proxy: TcpProxy, load: Load, count: number, logTail: () => string, how: 'cut' | 'freeze' = 'cut'): Promise<void> {
  try {
    await waitFor(
      async () => load.answers.filter((a) => a.status === 200).length,
      (n) => n >= count,
      { what: 'acknowledged requests' },
    );
    if (how === 'cut') proxy.cut();
    else proxy.freeze();
    const cutAt = load.answers.length;
    await waitFor(
      async () => load.since(cutAt).filter((a) => a.status === 503).length,
      (n) => n >= count,
      { what: 'requests refused while down' },
    );
    if (how === 'cut') proxy.restore();
    else proxy.thaw();
    const restoredAt = load.answers.length;
    await waitFor(
      async () => load.since(restoredAt).filter((a) => a.status === 200).length,
      (n) => n >= count,
      { what: 'requests acknowledged again', timeoutMs: 30_000 },
    ).catch((error: Error) => {
      const seen = load.since(restoredAt);
      throw new Error(`${error.message}; ${seen.length} answers since the restore: ${JSON.stringify(seen.slice(-1))} LOG ${logTail()}`);
    });
  } finally {
    await load.stop();
  }
}

/**
 * Every refused request was a 503 saying nothing (or perhaps something) was written; every acknowledged request is
 * stored once, and beyond them only requests whose COMMIT's outcome could not be known. Returns the stored `n`s.
 */
async function expectAcknowledgedStoredOnce(load: Load, stored: () => Promise<number[]>): Promise<number[]> {
  const refused = load.answers.filter((a) => a.status !== 200);
  expect(refused.length).toBeGreaterThan(0);
  for (const answer of refused) {
    expect([answer.status, answer.retryAfter]).toEqual([503, '5']);
    expect([NOT_WRITTEN, PERHAPS_WRITTEN]).toContainEqual(answer.body);
  }
  const acknowledged = new Set(load.answers.filter((a) => a.status === 200).map((a) => a.n));
  const perhaps = new Set(refused.filter((a) => a.body.error === PERHAPS_WRITTEN.error).map((a) => a.n));
  const numbers = await waitFor(stored, (found) => [...acknowledged].every((n) => found.includes(n)), {
    what: `all ${acknowledged.size} acknowledged events stored`,
    timeoutMs: 60_000,
  });
  expect(numbers.length).toBe(new Set(numbers).size);
  expect(numbers.filter((n) => !acknowledged.has(n) && !perhaps.has(n))).toEqual([]);
  return numbers;
}

/**
 * During an outage (ingest to `endpoint` refused with `status`): an unknown route answered 404 and a request without
 * a key 401 between two refusals, neither reaching the database; the outage stays one in the log.
 */
async function expectNotReachedAnswersKeepOneOutage(endpoint: string, base: string, key: string, status: number): Promise<void> {
  expect((await request('POST', endpoint, { body: { n: 1 } })).status).toBe(status);
  expect((await request('GET', `${base}/v1/no-such-route`, { key })).status).toBe(404);
  expect((await request('GET', `${base}/v1/users/me`)).status).toBe(401);
  expect((await request('POST', endpoint, { body: { n: 2 } })).status).toBe(status);
}

describe.skipIf(!DIALECTS.includes('postgres'))('PostgreSQL unreachable under load', () => {
  const cleanup = cleanupsAfterAll();

  /** One node on its own database behind a proxy, with an echo source under load from a paid account. */
  async function nodeBehindProxy(options: { queryTimeoutMs?: number } = {}) {
    const database = await createTestDatabase();
    cleanup(database.drop);
    const { proxy, url } = await proxyInFrontOf(database.url);
    cleanup(proxy.close);
    const { logger, lines } = collectedLogger();
    // Every acknowledged event is looked for afterwards: none may be trimmed by retention meanwhile.
    const server = await startTestServer('postgres', { databaseUrl: url, logLevel: 'warn', eventRetention: 100_000 }, { logger, ...options });
    cleanup(server.stop);
    const key = (await server.createUser({ plan: 'paid' })).apiKey;
    const deployed = await client(server.url, key).post('/v1/sources', { component_code: ECHO });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    const load = loadOn(deployed.body.data.configured_props.http.endpoint_url, (n) => ({ n }));
    const stored = () => storedNumbers(server, key, deployed.body.data.id);
    return { proxy, lines, server, key, load, stored };
  }

  it('answers 503 with Retry-After while it is down, never 500; loses nothing acknowledged; recovers by itself; logs it twice', async () => {
    const { proxy, lines, load, stored } = await nodeBehindProxy();
    await cutUnderLoad(proxy, load, 20, () => JSON.stringify(lines.slice(-2)));
    await expectAcknowledgedStoredOnce(load, stored);
    expect(lines.filter((l) => l.msg.includes('requests are answered 503 until it recovers'))).toHaveLength(1);
    expect(lines.filter((l) => l.msg.startsWith('recovered: requests are answered again'))).toHaveLength(1);
    // The work loops and the cluster's connections, each retrying every second, say it once too.
    await waitFor(
      async () => lines.filter((l) => l.msg === BACKGROUND_BACK).length,
      (n) => n === 1,
      { what: 'the end of the outage in the log' },
    );
    expect(lines.filter((l) => l.msg === BACKGROUND_DOWN)).toHaveLength(1);
  });

  it('a database that stops answering without closing its connections: 503 once a statement waits past the limit, then recovers', async () => {
    // A short statement limit, so that the test need not wait the default 20 s.
    const { proxy, lines, server, key, load, stored } = await nodeBehindProxy({ queryTimeoutMs: 1000 });
    await cutUnderLoad(proxy, load, 10, () => JSON.stringify(lines.slice(-2)), 'freeze');
    await expectAcknowledgedStoredOnce(load, stored);
    const me = await client(server.url, key).get('/v1/users/me');
    expect(me.status).toBe(200);
  });

  it('says the outage once when requests that do not reach the database (a 404, a 401) are answered during it', async () => {
    const database = await createTestDatabase();
    cleanup(database.drop);
    const { proxy, url } = await proxyInFrontOf(database.url);
    cleanup(proxy.close);
    const { logger, lines } = collectedLogger();
    const server = await startTestServer('postgres', { databaseUrl: url, logLevel: 'warn' }, { logger });
    cleanup(server.stop);
    const key = (await server.createUser({ plan: 'paid' })).apiKey;
    const deployed = await client(server.url, key).post('/v1/sources', { component_code: ECHO });
    const endpoint: string = deployed.body.data.configured_props.http.endpoint_url;
    proxy.cut();
    await expectNotReachedAnswersKeepOneOutage(endpoint, server.url, key, 503);
    // The health checks say it as the API does: 503, Retry-After, a JSON body.
    const health = await request('GET', `${server.url}/healthz`);
    expect([health.status, health.headers.get('retry-after'), health.body]).toEqual([503, '5', { status: 'error', database: 'unreachable' }]);
    const ready = await request('GET', `${server.url}/readyz`);
    expect([ready.status, ready.headers.get('retry-after'), ready.body.not_ready]).toEqual([503, '5', ['database', 'migrations']]);
    proxy.restore();
    await waitFor(
      async () => (await request('POST', endpoint, { body: { n: 3 } })).status,
      (status) => status === 200,
      { what: 'an ingest acknowledged again' },
    );
    expect(lines.filter((l) => l.msg.endsWith('requests are answered 503 until it recovers'))).toHaveLength(1);
    expect(lines.filter((l) => l.msg.startsWith('recovered: requests are answered again'))).toHaveLength(1);
  });

  /** A database behind a proxy that can be cut, a gatekeeper, and a server on them; the server stops with both let through. */
  async function gatedServerBehindProxy(overrides: Parameters<typeof startTestServer>[1], logger?: ReturnType<typeof createLogger>) {
    const database = await createTestDatabase();
    cleanup(database.drop);
    const { proxy, url } = await proxyInFrontOf(database.url);
    cleanup(proxy.close);
    const gatekeeper = await startGatekeeper();
    cleanup(gatekeeper.close);
    const server = await startTestServer('postgres', { databaseUrl: url, allowPrivateNetwork: true, ...overrides }, logger ? { logger } : {});
    cleanup(server.stop);
    cleanup(() => {
      gatekeeper.open();
      proxy.restore();
    });
    return { database, proxy, gatekeeper, server };
  }

  it('a custom-response request queued before the outage whose wait ends during it: 503 saying its run goes on once the database is back, not 504 no_response', async () => {
    const { logger, lines } = collectedLogger();
    // A short run timeout: the wait for respond() is the run timeout and 5 s.
    const { database, proxy, gatekeeper, server } = await gatedServerBehindProxy({ logLevel: 'warn', runTimeout: 2 }, logger);
    const key = (await server.createUser({ plan: 'paid' })).apiKey;
    const deployed = await client(server.url, key).post('/v1/sources', {
      component_code: `export default { name: "answering", version: "0.0.1", props: { http: { type: "$.interface.http", customResponse: true } },
        async run(e) { if (e.body.gate) await fetch(e.body.gate); this.http.respond({ status: 201, body: "ran " + e.body.n }); this.$emit({ n: e.body.n }); } };`,
    });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    const endpoint: string = deployed.body.data.configured_props.http.endpoint_url;
    // The first run holds the source (runs of a source take turns), so that the second request stays queued.
    const first = request('POST', endpoint, { body: { n: 1, gate: `${gatekeeper.url}/gate` } });
    await waitFor(
      async () => gatekeeper.hits.get('/gate') ?? 0,
      (hits) => hits === 1,
      { what: 'the first run waiting at the gate' },
    );
    const second = request('POST', endpoint, { body: { n: 2 } });
    await waitFor(
      () => invocationsQueued(database.url),
      (queued) => queued === 2,
      { what: 'the second request queued' },
    );
    proxy.cut();
    // Neither run could commit (nor the first's time-out be recorded) while the database was away: both go on once
    // it is back, and each client hears so, not a 504 blaming the component.
    for (const answer of [await first, await second]) {
      expect({ status: answer.status, retryAfter: answer.headers.get('retry-after'), body: answer.body }).toEqual({
        status: 503,
        retryAfter: '5',
        body: {
          code: 'unavailable',
          error: expect.stringMatching(
            /^the database is unreachable: this request was queued before it went away, but its response could not be awaited; its invocation inv_\w+ runs \(or ran, on another node\) without its response reaching anyone \(sending the request again runs it again\)$/,
          ),
        },
      });
    }
    gatekeeper.open();
    proxy.restore();
    // Queued, it was not lost: it runs once the database is back.
    await waitFor(
      async () => (await storedNumbers(server, key, deployed.body.data.id).catch(() => [])).sort(),
      (numbers) => numbers.includes(1) && numbers.includes(2),
      { what: 'the queued request run after the outage' },
    );
    expect(lines.filter((l) => l.msg.endsWith('requests are answered 503 until it recovers'))).toHaveLength(1);
  });

  it('the same for a custom-response workflow: 503 saying its run goes on once the database is back, not 504 no_response', async () => {
    const { proxy, gatekeeper, server } = await gatedServerBehindProxy({ logLevel: 'silent' });
    const key = (await server.createUser({ plan: 'paid' })).apiKey;
    const created = await client(server.url, key).post('/v1/workflows', {
      name: 'answering',
      timeout_seconds: 2,
      trigger: { type: 'http', custom_response: true },
      steps: [
        {
          name: 'answer',
          component_code: `export default defineComponent({ async run({ steps, $ }) { const { n, gate } = steps.trigger.event.body;
            if (gate) await fetch(gate); await $.respond({ status: 201, body: "ran " + n }); } });`,
        },
      ],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const endpoint: string = created.body.data.trigger.endpoint_url;
    const first = request('POST', endpoint, { body: { n: 1, gate: `${gatekeeper.url}/gate` } });
    await waitFor(
      async () => gatekeeper.hits.get('/gate') ?? 0,
      (hits) => hits === 1,
      { what: 'the first run waiting at the gate' },
    );
    proxy.cut();
    const refused = await first;
    expect({ status: refused.status, retryAfter: refused.headers.get('retry-after'), body: refused.body }).toEqual({
      status: 503,
      retryAfter: '5',
      body: {
        code: 'unavailable',
        error: expect.stringMatching(
          /^the database is unreachable: this request was queued before it went away, but its response could not be awaited; its run wr_\w+ runs \(or ran, on another node\) without its response reaching anyone \(sending the request again runs it again\)$/,
        ),
      },
    });
    gatekeeper.open();
    proxy.restore();
    const runs = await waitFor(
      () => client(server.url, key).get(`/v1/workflows/${created.body.data.id}/runs`),
      (res) => res.status === 200 && res.body.data[0]?.status === 'succeeded',
      { what: 'the run finished once the database is back' },
    );
    expect(runs.body.data).toHaveLength(1);
  });

  it('a cluster (api node, two workers) under load: every acknowledged event stored once, streamed in order, sent to its webhook; two lines of log per node', async () => {
    const database = await createTestDatabase();
    cleanup(database.drop);
    const { proxy, url } = await proxyInFrontOf(database.url);
    cleanup(proxy.close);
    const settings = { databaseUrl: url, secretKey: 'outage-test-secret', logLevel: 'warn' as const, eventRetention: 100_000, allowPrivateNetwork: true };
    const logs = [collectedLogger(), collectedLogger(), collectedLogger()];
    const nodes: TestServer[] = [];
    for (const [i, role] of (['api', 'worker', 'worker'] as const).entries()) {
      const node = await startTestServer('postgres', { ...settings, role }, { logger: logs[i]!.logger });
      cleanup(node.stop);
      nodes.push(node);
    }
    const api = nodes[0]!;
    const receiver = await startReceiver();
    cleanup(receiver.close);
    const key = (await api.createUser({ plan: 'paid' })).apiKey;
    const deployed = await client(api.url, key).post('/v1/sources', { component_code: ECHO });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    const sourceId: string = deployed.body.data.id;
    const hook = await client(api.url, key).post(`/v1/webhooks?${new URLSearchParams({ url: `${receiver.url}/hook`, name: 'hook', description: 'outage' })}`);
    expect((await client(api.url, key).post(`/v1/subscriptions?emitter_id=${sourceId}&listener_id=${hook.body.data.id}`)).status).toBe(200);
    const stream = openStream(`${api.url}/v1/sources/${sourceId}/sse`, key);
    cleanup(async () => stream.source.close());
    await stream.opened;

    const load = loadOn(deployed.body.data.configured_props.http.endpoint_url, (n) => ({ n }), 4);
    await cutUnderLoad(proxy, load, 50, () => JSON.stringify(logs.map(({ lines }) => lines.slice(-2))));
    const stored = await expectAcknowledgedStoredOnce(load, () => storedNumbers(api, key, sourceId));
    // The live stream on the api node got every event once, oldest first, across the outage (the list is newest first).
    const oldestFirst = [...stored].reverse();
    await waitFor(
      async () => stream.messages.length,
      (n) => n >= oldestFirst.length,
      { what: 'every stored event on the live stream' },
    );
    expect(stream.data().map((e) => e.event.n)).toEqual(oldestFirst);
    // Webhooks are at least once: an attempt whose record the outage cut off is made again.
    const delivered = await waitFor(
      async () => new Set(receiver.on('/hook').map((r) => JSON.parse(r.body).event.n as number)),
      (seen) => oldestFirst.every((n) => seen.has(n)),
      { what: 'every stored event sent to the webhook' },
    );
    expect(delivered.size).toBe(oldestFirst.length);
    for (const { lines } of logs) {
      await waitFor(
        async () => lines.filter((l) => l.msg === BACKGROUND_BACK).length,
        (n) => n === 1,
        { what: "a node's log to say the outage ended" },
      );
    }
    // Each node, whatever its loops and connections retried meanwhile: the outage once, its end once.
    const said = logs.map(({ lines }) => lines.map((l) => l.msg));
    // The first request refused names the outage: unreachable, or (a queue insert in flight) of unknown outcome.
    expect(said[0]!.filter((msg) => msg !== BACKGROUND_DOWN && msg !== BACKGROUND_BACK)).toEqual([
      expect.stringMatching(
        /^the database (is unreachable|connection was lost while this request was being committed); requests are answered 503 until it recovers$/,
      ),
      expect.stringMatching(/^recovered: requests are answered again after \d+ were refused$/),
    ]);
    for (const messages of said) {
      expect(messages.filter((msg) => msg === BACKGROUND_DOWN)).toHaveLength(1);
      expect(messages.filter((msg) => msg === BACKGROUND_BACK)).toHaveLength(1);
    }
    expect(said[1]!.filter((msg) => msg !== BACKGROUND_DOWN && msg !== BACKGROUND_BACK)).toEqual([]);
    expect(said[2]!.filter((msg) => msg !== BACKGROUND_DOWN && msg !== BACKGROUND_BACK)).toEqual([]);
  });
});

describe('SQLite on a full disk under load', () => {
  it(
    'answers 507 with Retry-After while the disk is full, never 500; loses nothing acknowledged; recovers once it grows',
    { timeout: 180_000 },
    async (context) => {
      const mountPoint = tempDir('tributary-full-disk-');
      if (!mountTmpfs(mountPoint, 12)) {
        context.skip();
        return;
      }
      const { logger, lines } = collectedLogger();
      let server: TestServer | undefined;
      try {
        server = await startTestServer('sqlite', { dataDir: path.join(mountPoint, 'data'), logLevel: 'warn', eventRetention: 100_000 }, { logger });
        const key = (await server.createUser({ plan: 'paid' })).apiKey;
        const deployed = await client(server.url, key).post('/v1/sources', { component_code: KEEPER });
        expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
        // Big bodies fill the disk quickly: each is kept as an event.
        const padding = 'x'.repeat(64 * 1024);
        const load = loadOn(deployed.body.data.configured_props.http.endpoint_url, (n) => ({ n, padding }), 4);
        try {
          await waitFor(
            async () => load.answers.filter((a) => a.status === 507).length,
            (n) => n >= 10,
            {
              what: 'the disk to fill',
              timeoutMs: 60_000,
            },
          ).catch((error: Error) => {
            const counts: Record<number, number> = {};
            for (const a of load.answers) counts[a.status] = (counts[a.status] ?? 0) + 1;
            throw new Error(
              `${error.message}; statuses ${JSON.stringify(counts)}; last ${JSON.stringify(load.answers.at(-1)?.body)} LOG ${JSON.stringify(lines.find((l) => l.msg === 'request failed'))}`,
            );
          });
          const full = await request('GET', `${server.url}/readyz`);
          expect([full.status, full.body.checks.disk]).toEqual([503, 'full']);
          expect(full.body.not_ready).toContain('disk');
          execFileSync('mount', ['-o', 'remount,size=512m', mountPoint]);
          expect((await request('GET', `${server.url}/readyz`)).body).toMatchObject({ status: 'ready', checks: { disk: 'ok' } });
          const grownAt = load.answers.length;
          await waitFor(
            async () => load.since(grownAt).filter((a) => a.status === 200).length,
            (n) => n >= 20,
            { what: 'requests acknowledged again' },
          );
        } finally {
          await load.stop();
        }
        const refused = load.answers.filter((a) => a.status !== 200);
        expect(refused.length).toBeGreaterThanOrEqual(10);
        for (const answer of refused) {
          expect(answer.status).toBe(507);
          expect(answer.retryAfter).toBe('30');
          expect(answer.body).toEqual({
            code: 'insufficient_storage',
            error: "the data directory's disk is full: nothing was written; try again once there is room",
          });
        }
        const acknowledged = load.answers.filter((a) => a.status === 200).length;
        await waitFor(
          () => storedCount(server!, key, deployed.body.data.id),
          (n) => n === acknowledged,
          { what: `all ${acknowledged} acknowledged events stored`, timeoutMs: 60_000 },
        );
        // A line when refusals start and one when a write goes through again, not one per request. Near full, a write
        // may find room freed by a checkpoint and end the outage before the next one starts: each start has its end.
        const started = lines.filter((l) => l.msg.includes('requests are answered 507 until it recovers')).length;
        const ended = lines.filter((l) => l.msg.startsWith('recovered: requests are answered again after')).length;
        expect(started).toBeGreaterThanOrEqual(1);
        expect(started).toBeLessThan(refused.length);
        expect(ended).toBe(started);
      } finally {
        await server?.destroy();
        execFileSync('umount', ['-l', mountPoint]);
        fs.rmSync(mountPoint, { recursive: true, force: true });
      }
    },
  );
});

describe('SQLite locked by another process', () => {
  it('answers writes 503 while reads go on; one outage in the log, ended by the first write that commits', { timeout: 60_000 }, async () => {
    const { logger, lines } = collectedLogger();
    const server = await startTestServer('sqlite', { logLevel: 'warn' }, { logger });
    try {
      const key = (await server.createUser({ plan: 'paid' })).apiKey;
      const deployed = await client(server.url, key).post('/v1/sources', { component_code: ECHO });
      const endpoint: string = deployed.body.data.configured_props.http.endpoint_url;
      // Another process (a script, a second tool) takes SQLite's write lock and keeps it until it is killed.
      const holder = spawn(process.execPath, [
        '-e',
        `const D = require(${JSON.stringify(require.resolve('better-sqlite3'))}); const d = new D(${JSON.stringify(path.join(server.dataDir, 'tributary.db'))});` +
          ` d.exec('begin exclusive'); console.log('locked'); setInterval(() => {}, 1000);`,
      ]);
      try {
        await new Promise<void>((resolve, reject) => {
          holder.stdout.once('data', () => resolve());
          holder.once('exit', (code) => reject(new Error(`the lock holder exited with ${code}`)));
        });
        // A read between two refused writes is answered from the database (WAL), yet writes still wait on the lock.
        await expectNotReachedAnswersKeepOneOutage(endpoint, server.url, key, 503);
        expect((await client(server.url, key).get('/v1/users/me')).status).toBe(200);
        const refused = await request('POST', endpoint, { body: { n: 3 } });
        expect([refused.status, refused.headers.get('retry-after'), refused.body]).toEqual([503, '5', NOT_WRITTEN]);
      } finally {
        const exited = new Promise((resolve) => holder.once('exit', resolve));
        holder.kill('SIGKILL');
        await exited;
      }
      expect((await request('POST', endpoint, { body: { n: 4 } })).status).toBe(200);
      expect(lines.filter((l) => l.msg.endsWith('requests are answered 503 until it recovers'))).toHaveLength(1);
      expect(lines.filter((l) => l.msg === 'recovered: requests are answered again after 3 were refused')).toHaveLength(1);
    } finally {
      await server.destroy();
    }
  });
});
