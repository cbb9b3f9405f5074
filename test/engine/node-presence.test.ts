// Nodes of a cluster keep a row each in the nodes table: an api node's /readyz says whether a node that runs work is
// alive, and its log says when none has been for 15 s, when one is back, and when nodes keep different retentions.
import pg from 'pg';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { request } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'presence-test-secret';
const NO_WORKER = 'no worker node (--role worker or all) has been alive for 15 s';

/** A logger at info whose lines land in `lines`. */
function recordingLogger(lines: Array<{ level: number; msg: string }>) {
  return pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
}

async function scrape(server: TestServer): Promise<string> {
  return (await fetch(server.running.metricsUrl!)).text();
}

async function nodeRows(url: string): Promise<Array<{ role: string; event_retention: number }>> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    return (await db.query('select role, event_retention::int as event_retention from nodes order by started_ms, id')).rows;
  } finally {
    await db.end();
  }
}

describe.skipIf(!DIALECTS.includes('postgres'))('node presence (PostgreSQL)', () => {
  it('an api node alone stays ready but says so; a worker starting, a different retention and the worker stopping are seen', async () => {
    // Both nodes read this clock: their rows' times and beats move only when the test moves it.
    const clock = new ManualClock();
    const apiLines: Array<{ level: number; msg: string }> = [];
    const api = await startTestServer('postgres', { role: 'api', secretKey: SECRET, metricsPort: 0 }, { clock, logger: recordingLogger(apiLines) });
    let worker: TestServer | undefined;
    try {
      const checks = { database: 'ok', migrations: 'ok', worker: 'ok', disk: 'unchecked', stopping: false };
      const alone = await request('GET', `${api.url}/readyz`);
      expect([alone.status, alone.body]).toEqual([200, { status: 'ready', checks: { ...checks, worker_nodes: 'none' } }]);
      expect(await nodeRows(api.databaseUrl!)).toEqual([{ role: 'api', event_retention: 100 }]);
      // Not at once: workers started beside it get 15 s to write their rows.
      expect(apiLines.filter((line) => line.msg.startsWith(NO_WORKER))).toEqual([]);

      const said = (text: string) => apiLines.filter((line) => line.msg.startsWith(text));
      await waitFor(
        async () => {
          clock.advance(5000);
          return said(NO_WORKER);
        },
        (lines) => lines.length === 1,
        { what: 'the api node to say that no worker node is alive' },
      );
      expect(said(NO_WORKER)[0]!.level).toBe(40);
      expect(await scrape(api)).toContain('tributary_worker_nodes 0');

      worker = await startTestServer('postgres', { role: 'worker', secretKey: SECRET, databaseUrl: api.databaseUrl, eventRetention: 50 }, { clock });
      await waitFor(
        () => {
          clock.advance(5000);
          return request('GET', `${api.url}/readyz`);
        },
        (res) => res.body.checks.worker_nodes === 'ok',
        { what: "the api node to see the worker's row" },
      );
      expect(said('a worker node is alive again').length).toBe(1);
      expect(await scrape(api)).toContain('tributary_worker_nodes 1');
      expect(said('another node (worker on ').map((line) => line.msg.replace(/ on .*, pid \d+\)/, ' on …)'))).toEqual([
        'another node (worker on …) keeps --event-retention 50, this one 100: give every node the same, else a live stream can miss events after a lost connection',
      ]);

      // A node that stops deletes its row: the api node sees it gone at its next look, not 15 s later.
      await worker.stop();
      const stoppedAt = clock.now();
      expect(await nodeRows(api.databaseUrl!)).toEqual([{ role: 'api', event_retention: 100 }]);
      // The gauge is set by the look that judges the rows, in the same turn as that look's log line.
      await waitFor(
        () => {
          clock.advance(5000);
          return scrape(api);
        },
        (text) => text.includes('tributary_worker_nodes 0'),
        { what: 'the api node to see the worker gone' },
      );
      expect((await request('GET', `${api.url}/readyz`)).body.checks.worker_nodes).toBe('none');
      // But its log says none is alive only once none has been for 15 s (a worker restarted meanwhile is no news).
      expect(said(NO_WORKER).length).toBe(1);
      await waitFor(
        async () => {
          clock.advance(5000);
          return said(NO_WORKER);
        },
        (lines) => lines.length === 2,
        { what: 'the api node to say it again' },
      );
      expect(clock.now() - stoppedAt).toBeGreaterThanOrEqual(15000);
    } finally {
      await worker?.stop();
      await api.destroy();
    }
  });

  it('a worker or all node runs work itself: worker_nodes is ok from its start', async () => {
    const server = await startTestServer('postgres', { secretKey: SECRET });
    try {
      const ready = await request('GET', `${server.url}/readyz`);
      expect([ready.status, ready.body.checks.worker_nodes]).toEqual([200, 'ok']);
      expect(await nodeRows(server.databaseUrl!)).toEqual([{ role: 'all', event_retention: 100 }]);
    } finally {
      await server.destroy();
    }
  });
});
