// The PostgreSQL database itself gone for a while (renamed, or dropped and being restored), with the server up: an
// outage like any other, answered 503 with Retry-After and never 500, and over by itself once the database is back.
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

/** Renames a database the server keeps reconnecting to: its sessions are ended until the rename finds none. */
async function rename(from: string, to: string): Promise<void> {
  await waitFor(
    () =>
      admin(`select pg_terminate_backend(pid) from pg_stat_activity where datname = '${from}'`)
        .then(() => admin(`alter database ${from} rename to ${to}`))
        .then(
          () => true,
          () => false,
        ),
    (done) => done,
    { what: `the rename of ${from}` },
  );
}

describe.skipIf(!DIALECTS.includes('postgres'))('the PostgreSQL database gone', () => {
  const cleanup = cleanupsAfterAll();

  it('answers 503 unavailable with Retry-After while the database does not exist, then 200 once it is back', async () => {
    const database = await createTestDatabase();
    const name = new URL(database.url).pathname.slice(1);
    cleanup(() => admin(`drop database if exists ${name}_gone with (force)`));
    cleanup(database.drop);
    const server = await startTestServer('postgres', { databaseUrl: database.url, logLevel: 'silent' });
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

    await rename(`${name}_gone`, name);
    await waitFor(
      async () => (await api.get('/v1/users/me')).status,
      (status) => status === 200,
      { what: 'requests answered again' },
    );
  });
});
