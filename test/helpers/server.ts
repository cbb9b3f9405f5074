// Starts a real Tributary server for a test: a temp data directory with SQLite, or a fresh PostgreSQL database.
import fs from 'node:fs';
import pg from 'pg';
import { resolveConfig, type Config } from '../../src/config.js';
import { tempDir } from './temp-dirs.js';
import { createLogger, type RunningTributary, type StartOptions, startTributary } from '../../src/app.js';
import type { NewAccount } from '../../src/services/users.js';

export type Dialect = 'sqlite' | 'postgres';

const TEST_DATABASE_URL = process.env.TRIBUTARY_TEST_DATABASE_URL;

/** Every storage and API test runs on SQLite, and on PostgreSQL too when TRIBUTARY_TEST_DATABASE_URL is set. */
export const DIALECTS: Dialect[] = TEST_DATABASE_URL ? ['sqlite', 'postgres'] : ['sqlite'];

export { tempDir } from './temp-dirs.js';

/** Creates an empty PostgreSQL database on the test server and returns its URL and a function that drops it. */
export async function createTestDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  if (!TEST_DATABASE_URL) throw new Error('TRIBUTARY_TEST_DATABASE_URL is not set');
  const name = `trb_test_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}

export interface TestServer {
  readonly url: string;
  readonly dataDir: string;
  readonly databaseUrl: string | undefined;
  readonly running: RunningTributary;
  /** Creates an account directly through the service and returns it with its key. */
  createUser(input?: { username?: string; plan?: 'free' | 'paid' }): Promise<NewAccount>;
  /** Stops the server (idempotent); the data stays, for restarts. */
  stop(): Promise<void>;
  /** Stops the server and starts it again on the same data (a new port); `url` and `running` follow. */
  restart(): Promise<void>;
  /** Stops the server and removes its data directory and database. */
  destroy(): Promise<void>;
}

let userCounter = 0;

/**
 * `clock`: where the server reads the time for leases, timers, quotas and retries (a ManualClock to move it by hand).
 * `logger`: where the server logs (a test that reads the log passes one of its own; else `createLogger(config)`).
 */
export async function startTestServer(
  dialect: Dialect,
  overrides: Partial<Config> = {},
  options: Pick<
    StartOptions,
    'clock' | 'logger' | 'endpointCacheTtlMs' | 'queryTimeoutMs' | 'requestTimeoutMs' | 'maxQueuedListenerRuns' | 'maxStreamsPerAccount'
  > = {},
): Promise<TestServer> {
  const dataDir = overrides.dataDir ?? tempDir();
  const database = dialect === 'postgres' && !overrides.databaseUrl ? await createTestDatabase() : undefined;
  const config = resolveConfig({
    host: '127.0.0.1',
    port: 0,
    logLevel: (process.env.TRIBUTARY_TEST_LOG_LEVEL as Config['logLevel']) ?? 'silent',
    workerPoolSize: 2,
    ...overrides,
    dataDir,
    databaseUrl: overrides.databaseUrl ?? database?.url,
  });
  let running = await startTributary(config, { ...options, logger: options.logger ?? createLogger(config) });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await running.close();
  };
  return {
    get url() {
      return running.url;
    },
    get running() {
      return running;
    },
    dataDir,
    databaseUrl: config.databaseUrl,
    createUser: (input = {}) =>
      running.services.users.create({
        username: input.username ?? `user${process.pid}x${++userCounter}`,
        email: `user${userCounter}@example.test`,
        plan: input.plan ?? 'free',
      }),
    stop,
    restart: async () => {
      await stop();
      running = await startTributary(config, { ...options, logger: options.logger ?? createLogger(config) });
      stopped = false;
    },
    destroy: async () => {
      await stop();
      await database?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
