// Starts a real Tributary server for a test: a temp data directory with SQLite, or a fresh PostgreSQL database.
import fs from 'node:fs';
import { resolveConfig, type Config } from '../../src/config.js';
import { tempDir } from './temp-dirs.js';
import { createLogger, type RunningTributary, type StartOptions, startTributary } from '../../src/app.js';
import type { NewAccount } from '../../src/services/users.js';

import { createTestDatabase, TEST_DATABASE_URL } from './databases.js';

export type Dialect = 'sqlite' | 'postgres';

/** Every storage and API test runs on SQLite, and on PostgreSQL too when TRIBUTARY_TEST_DATABASE_URL is set. */
export const DIALECTS: Dialect[] = TEST_DATABASE_URL ? ['sqlite', 'postgres'] : ['sqlite'];

export { tempDir } from './temp-dirs.js';
export { createTestDatabase } from './databases.js';

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

/** A stop's window for idle keep-alive connections in tests (test/ops/graceful-stop.test.ts stops a real `serve`). */
const TEST_DRAIN_WINDOW_MS = 50;

/**
 * `clock`: where the server reads the time for leases, timers, quotas and retries (a ManualClock to move it by hand).
 * `logger`: where the server logs (a test that reads the log passes one of its own; else `createLogger(config)`).
 */
export async function startTestServer(
  dialect: Dialect,
  overrides: Partial<Config> = {},
  options: Pick<
    StartOptions,
    | 'clock'
    | 'logger'
    | 'endpointCacheTtlMs'
    | 'queryTimeoutMs'
    | 'listenCheckMs'
    | 'requestTimeoutMs'
    | 'maxQueuedListenerRuns'
    | 'maxStreamsPerAccount'
    | 'drainWindowMs'
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
  let running: RunningTributary;
  try {
    // Tests' clients keep connections alive: each stop or restart would wait out a production drain window.
    running = await startTributary(config, { drainWindowMs: TEST_DRAIN_WINDOW_MS, ...options, logger: options.logger ?? createLogger(config) });
  } catch (err) {
    await database?.drop();
    throw err;
  }
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
      // Tests' clients keep connections alive: each stop or restart would wait out a production drain window.
      running = await startTributary(config, { drainWindowMs: TEST_DRAIN_WINDOW_MS, ...options, logger: options.logger ?? createLogger(config) });
      stopped = false;
    },
    destroy: async () => {
      await stop();
      await database?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
