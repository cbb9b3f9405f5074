// Fresh PostgreSQL databases for tests, on the server TRIBUTARY_TEST_DATABASE_URL names; each one a test file
// creates and does not drop is dropped after the file, and fails it (remove-temp-dirs.ts).
import pg from 'pg';

export const TEST_DATABASE_URL = process.env.TRIBUTARY_TEST_DATABASE_URL;

/** The databases createTestDatabase made in this process that were not dropped yet. */
const undropped = new Set<string>();

async function dropDatabase(name: string): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  await client.query(`drop database if exists ${name} with (force)`);
  await client.end();
  undropped.delete(name);
}

/**
 * Drops the databases this test file created and left behind, and returns their names (see remove-temp-dirs.ts, which
 * fails the file for them: a database a test does not drop outlives every run).
 */
export async function dropLeftoverDatabases(): Promise<string[]> {
  const left = [...undropped];
  for (const name of left) await dropDatabase(name);
  return left;
}

/** Creates an empty PostgreSQL database on the test server and returns its URL and a function that drops it. */
/** `icuLocale`: the database sorts text by that ICU locale ('en') rather than the server's default collation. */
export async function createTestDatabase(options: { icuLocale?: string } = {}): Promise<{ url: string; drop: () => Promise<void> }> {
  if (!TEST_DATABASE_URL) throw new Error('TRIBUTARY_TEST_DATABASE_URL is not set');
  const name = `trb_test_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  const locale = options.icuLocale ? ` template template0 locale_provider icu icu_locale '${options.icuLocale}'` : '';
  await admin.query(`create database ${name}${locale}`);
  await admin.end();
  undropped.add(name);
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => dropDatabase(name),
  };
}
