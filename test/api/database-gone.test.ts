// The PostgreSQL database itself gone for a while (renamed, or dropped and being restored), with the server up: an
// outage like any other, answered 503 with Retry-After and never 500 (and still scraped for metrics), and over by
// itself once the database is back.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { client } from '../helpers/client.js';
import { cleanupsAfterAll } from '../helpers/cleanups.js';
import { createTestDatabase, DIALECTS, startTestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/** Runs `sql` on the server's maintenance database (not the one under test). */
async function admin(sql: string): Promise<void> {
  const connection = new pg.Client({ connectionString: process.env.TRIBUTARY_TEST_DATABASE_URL });
  await connection.connect();
  try {
    await connection.query(sql);
  } finally {
    await connection.end();
  }
}

/**
 * Renames a database the server keeps reconnecting to: connections are refused first, so that once its sessions are
 * ended none comes back before the rename.
 */
async function rename(from: string, to: string): Promise<void> {
  await admin(`alter database ${from} with allow_connections false`);
  await admin(`select pg_terminate_backend(pid) from pg_stat_activity where datname = '${from}'`);
  // The ended backends may take a moment to go.
  await waitFor(
    () =>
      admin(`alter database ${from} rename to ${to}`).then(
        () => true,
        () => false,
      ),
    (done) => done,
    { what: `the rename of ${from}` },
  );
  await admin(`alter database ${to} with allow_connections true`);
}

describe.skipIf(!DIALECTS.includes('postgres'))('the PostgreSQL database gone', () => {
  const cleanup = cleanupsAfterAll();

  it('answers 503 unavailable with Retry-After while the database does not exist, then 200 once it is back', async () => {
    const database = await createTestDatabase();
    const name = new URL(database.url).pathname.slice(1);
    cleanup(() => admin(`drop database if exists ${name}_gone with (force)`));
    cleanup(database.drop);
    const server = await startTestServer('postgres', { databaseUrl: database.url, logLevel: 'silent', metricsPort: 0 });
    cleanup(server.stop);
    const api = client(server.url, (await server.createUser()).apiKey);
    expect((await api.get('/v1/users/me')).status).toBe(200);

    await rename(name, `${name}_gone`);
    const refused = await api.get('/v1/users/me');
    expect({ status: refused.status, body: refused.body, retryAfter: refused.headers.get('retry-after') }).toEqual({
      status: 503,
      body: { error: 'the database is unreachable: nothing was written; try again shortly', code: 'unavailable' },
      retryAfter: '5',
    });
    // The scrape still answers, with the refusals counted and the queue depth unknown, rather than failing whole.
    const scrape = await fetch(server.running.metricsUrl!);
    const text = await scrape.text();
    expect([scrape.status, Number(/^tributary_queue_depth (\S+)$/m.exec(text)?.[1])]).toEqual([200, Number.NaN]);
    expect(text).toMatch(/^tributary_http_requests_total\{route="\/v1\/users\/me",status="503"\} 1$/m);

    await rename(`${name}_gone`, name);
    await waitFor(
      async () => (await api.get('/v1/users/me')).status,
      (status) => status === 200,
      { what: 'requests answered again' },
    );
  });
});
