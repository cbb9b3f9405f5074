// Polling is only a fallback: a cluster node whose signals arrive looks at its queues unasked only as a lease watch
// (every third of a lease), polls every second while its LISTEN connection is down, and goes back once it returns.
// Time is a ManualClock moved in steps; the metrics count each look.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/** The dispatcher's lease is 15 s; the watch looks every third of it. */
const WATCH_MS = 5000;
const STEP_MS = 250;

describe.skipIf(!DIALECTS.includes('postgres'))('the fallback poll (PostgreSQL)', () => {
  const clock = new ManualClock();
  let server: TestServer;
  let admin: pg.Client;
  let database: string;

  beforeAll(async () => {
    server = await startTestServer('postgres', { metricsPort: 0 }, { clock });
    database = new URL(server.databaseUrl!).pathname.slice(1);
    admin = new pg.Client({ connectionString: process.env.TRIBUTARY_TEST_DATABASE_URL });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.query(`alter database ${database} with allow_connections true`).catch(() => undefined);
    await admin?.end();
    await server?.destroy();
  });

  const sample = async (name: string): Promise<number | undefined> => {
    const text = await (await fetch(server.running.metricsUrl!)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return line === undefined ? undefined : Number(line.split(' ')[1]);
  };
  const looks = async () => (await sample('tributary_queue_looks_total{queue="invocations"}')) ?? 0;
  const signalled = () => sample('tributary_signals_connected');

  /** Moves the clock in steps until the dispatcher looks at its queue unasked; returns how far it moved. */
  const clockMsToNextLook = async (): Promise<number> => {
    const before = await looks();
    let moved = 0;
    await waitFor(
      async () => {
        clock.advance(STEP_MS);
        moved += STEP_MS;
        return looks();
      },
      (now) => now > before,
      // The clock runs five times as fast as real time: the poll's timer is armed only once the previous look's
      // queries return, and a busy machine may take most of a second of real time for them.
      { what: 'the next look at the queue', intervalMs: 50 },
    );
    return moved;
  };

  it('looks every third of a lease while signals arrive, every second while they do not, and again less once they are back', async () => {
    await waitFor(signalled, (value) => value === 1, { what: 'the signal connection' });
    await clockMsToNextLook(); // in step with the watch from here
    expect(await clockMsToNextLook()).toBeGreaterThanOrEqual(WATCH_MS);

    // The LISTEN connection is lost and cannot come back while the database refuses new connections.
    await admin.query(`alter database ${database} with allow_connections false`);
    await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and query = 'LISTEN tributary_signals'`, [database]);
    await waitFor(signalled, (value) => value === 0, { what: 'the node to notice its signals are gone' });
    await clockMsToNextLook();
    const polls = [await clockMsToNextLook(), await clockMsToNextLook()];
    for (const moved of polls) expect(moved).toBeLessThan(WATCH_MS);

    await admin.query(`alter database ${database} with allow_connections true`);
    await waitFor(signalled, (value) => value === 1, { what: 'the signal connection to come back', timeoutMs: 30_000 });
    await clockMsToNextLook();
    expect(await clockMsToNextLook()).toBeGreaterThanOrEqual(WATCH_MS);
  });
});
