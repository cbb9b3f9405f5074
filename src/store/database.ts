// Opens the database (SQLite file by default, PostgreSQL for a postgres:// URL) and runs the migrations.
import type { DialectName } from './migrations/migration.js';
import fs from 'node:fs';
import path from 'node:path';
import type SQLite from 'better-sqlite3';
import type { PoolClient, PoolConfig } from 'pg';
import { LRUCache } from 'lru-cache';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  Kysely,
  PostgresDialect,
  sql,
  SqliteAdapter,
  type SqliteDatabase,
  SqliteDriver,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';
import type { Database } from './schema.js';
import { migrateToLatest } from './migrate.js';
import { NewerDatabaseError } from './newer-database-error.js';
import { BackgroundCheckpointer } from './checkpointer.js';
import { runTransactionsDirectly, type SqliteStatements } from './compiled.js';
import { openSqliteFile } from './sqlite-file.js';
import { makeDataDir } from '../lib/data-dir.js';
import { outageOf, PG_READ_TIMEOUT_MESSAGE } from '../model/outages.js';
import { SYNC_BUSY_TIMEOUT_MS, waitingForLock } from './sqlite-busy.js';
import { type WriteTrouble, WriteHealthWatch } from './write-health.js';

export type { DialectName };

export interface Store {
  readonly db: Kysely<Database>;
  readonly dialect: DialectName;
  /** Where the data lives, for messages: the SQLite path or the PostgreSQL URL without its password. */
  readonly location: string;
  /**
   * How many times the database took a write (SQLite: committed; reads go on through its locks and a full disk) or,
   * on PostgreSQL, answered any statement: what says an outage that requests met has ended.
   */
  reached(): number;
  /**
   * SQLite: why writes are failing, if they are (WriteHealthWatch): the write lock another process holds, or the file
   * system refusing them. Never on PostgreSQL, where a failing write is an unreachable database.
   */
  writeTrouble(): WriteTrouble | undefined;
  close(): Promise<void>;
}

export interface OpenStoreOptions {
  dataDir: string;
  databaseUrl?: string | undefined;
  /** Run pending migrations (true for the server and the CLI). */
  migrate?: boolean;
  /**
   * SQLite: copy the write-ahead log into the database file from a thread of its own (the server), instead of
   * in whichever commit crosses the log's size limit, which then stalls for milliseconds.
   */
  backgroundCheckpoints?: { onFailure(error: Error): void };
  /** PostgreSQL: how long a statement may go unanswered (QUERY_TIMEOUT_MS by default; tests shorten it). */
  queryTimeoutMs?: number;
}

export async function openStore(options: OpenStoreOptions): Promise<Store> {
  const url = options.databaseUrl;
  const store = url ? await openPostgres(url, options.queryTimeoutMs ?? QUERY_TIMEOUT_MS) : openSqlite(options.dataDir, options.backgroundCheckpoints);
  try {
    await sql`select 1`.execute(store.db);
    if (options.migrate !== false) {
      if (url) {
        // A migration may rewrite a large table: it runs without the time limit of everyday statements.
        const migrator = await openPostgres(url, undefined);
        try {
          await migrateToLatest(migrator.db, 'postgres');
        } finally {
          await migrator.close();
        }
      } else await migrateToLatest(store.db, store.dialect);
    }
  } catch (error) {
    await store.close().catch(() => undefined);
    const message = `cannot open the database at ${store.location}: ${(error as Error).message}`;
    throw error instanceof NewerDatabaseError ? new NewerDatabaseError(message) : new Error(message, { cause: error });
  }
  return store;
}

/** SQLite's own default: a commit that finds the log past this many pages copies it into the database file. */
const AUTO_CHECKPOINT_PAGES = 1000;
/**
 * With background checkpoints, the commit's own checkpoint stays as a ceiling (16 MB of log). Under sustained
 * writes a checkpoint on another connection never catches up with the last commit, and only a writer that
 * finds the log fully copied starts it over; this commit then copies just what the thread has not.
 */
const CEILING_CHECKPOINT_PAGES = 4000;
/** The log file is cut back to this size when it starts over, instead of keeping its largest size on disk. */
const LOG_SIZE_LIMIT_BYTES = 16 * 1024 * 1024;
/** How often the background thread checkpoints. */
const CHECKPOINT_EVERY_MS = 250;
/** How often the background thread flushes the log to disk (see CheckpointerOptions.syncLogEveryMs). */
const SYNC_LOG_EVERY_MS = 50;

function openSqlite(dataDir: string, background: OpenStoreOptions['backgroundCheckpoints']): Store {
  makeDataDir(dataDir);
  const file = path.join(dataDir, 'tributary.db');
  const connection = openSqliteFile(file);
  // Private to the server's user: workers may run as another user that can traverse the data folder.
  fs.chmodSync(file, 0o600);
  connection.pragma('journal_mode = WAL');
  connection.pragma('synchronous = NORMAL');
  connection.pragma('foreign_keys = ON');
  // The CLI and the server may write the same file; wait for the other's lock instead of failing: briefly here, in
  // the calling thread, then between turns of the event loop (sqlite-busy.ts, the driver below and runCompiled).
  connection.pragma(`busy_timeout = ${SYNC_BUSY_TIMEOUT_MS}`);
  let checkpointer: BackgroundCheckpointer | undefined;
  if (background) {
    connection.pragma(`wal_autocheckpoint = ${CEILING_CHECKPOINT_PAGES}`);
    connection.pragma(`journal_size_limit = ${LOG_SIZE_LIMIT_BYTES}`);
    checkpointer = new BackgroundCheckpointer(file, {
      everyMs: CHECKPOINT_EVERY_MS,
      syncLogEveryMs: SYNC_LOG_EVERY_MS,
      onFailure: (error) => {
        // Commits take the copying back, every 1,000 pages as SQLite does by default, stalls and all; not for a full
        // disk, which the thread rides out (and where commits could not checkpoint either).
        if (connection.open && !outageOf(error)) connection.pragma(`wal_autocheckpoint = ${AUTO_CHECKPOINT_PAGES}`);
        background.onFailure(error);
      },
    });
  }
  const writeHealth = new WriteHealthWatch(connection);
  const { statements, reached } = withStatementCache(connection, writeHealth);
  const db = new Kysely<Database>({ dialect: sqliteDialectKeepingCauses(statements, connection, writeHealth.gaveUp) });
  runTransactionsDirectly(db, statements);
  const close = async () => {
    await checkpointer?.close();
    await db.destroy();
  };
  return { db, dialect: 'sqlite', location: file, reached, writeTrouble: () => writeHealth.current(), close };
}

/** Most distinct statements kept prepared; batch inserts of different sizes each have their own SQL. */
const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely's SQLite dialect, except that a ROLLBACK is skipped when SQLite already rolled the transaction back by
 * itself (it does on a full disk or an I/O error): Kysely's ROLLBACK would then fail, and its "no transaction is
 * active" would hide the error that says what happened.
 */
function sqliteDialectKeepingCauses(database: SqliteDatabase, connection: SQLite.Database, gaveUpOnLock: () => void): Dialect {
  const waiting = new WeakMap<DatabaseConnection, DatabaseConnection>();
  class Driver extends SqliteDriver {
    override async rollbackTransaction(open: DatabaseConnection): Promise<void> {
      if (connection.inTransaction) await super.rollbackTransaction(open);
    }

    /**
     * A transaction takes the write lock as it begins (IMMEDIATE), so that while another process holds it the wait
     * happens before the transaction, the connection given up meanwhile; none waits for it halfway, holding the
     * connection and every read behind it, and none finds its snapshot made stale by the other's commit.
     */
    override async beginTransaction(open: DatabaseConnection): Promise<void> {
      await open.executeQuery(CompiledQuery.raw('begin immediate'));
    }

    /**
     * The one connection, whose statements wait for another process's write lock between turns of the event loop.
     * A statement outside a transaction gives the connection up while it waits, so that reads (which WAL lets
     * through the lock) go on meanwhile: /healthz, the API's GETs, live streams.
     */
    override async acquireConnection(): Promise<DatabaseConnection> {
      const own = await super.acquireConnection();
      let wrapped = waiting.get(own);
      if (!wrapped) {
        const aside = async (pause: () => Promise<void>) => {
          if (connection.inTransaction) return pause();
          await this.releaseConnection();
          try {
            await pause();
          } finally {
            await super.acquireConnection();
          }
        };
        wrapped = {
          executeQuery: (query) => waitingForLock(() => own.executeQuery(query), aside, gaveUpOnLock),
          streamQuery: (query, size) => own.streamQuery(query, size),
        };
        waiting.set(own, wrapped);
      }
      return wrapped;
    }
  }
  return {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => new Driver({ database }),
    createIntrospector: (db) => new SqliteIntrospector(db),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  };
}

/**
 * Kysely prepares every query anew; preparing costs more than running most of ours, so statements are reused.
 * Safe because better-sqlite3 runs each statement to completion synchronously before the next is used. Counts the
 * writes that committed (a write outside a transaction, or a COMMIT): reads succeed while another process holds
 * the lock or the disk is full, so only a commit says that writes go through again.
 */
function withStatementCache(
  connection: SQLite.Database,
  writeHealth: WriteHealthWatch,
): { statements: SqliteDatabase & SqliteStatements; reached: () => number } {
  const statements = new LRUCache<string, SQLite.Statement>({ max: STATEMENT_CACHE_SIZE });
  let committed = 0;
  const counted = (statement: SQLite.Statement): SQLite.Statement => {
    if (statement.reader) return statement;
    const run = statement.run.bind(statement);
    statement.run = ((...parameters: unknown[]) => {
      let result: SQLite.RunResult;
      try {
        result = run(...parameters);
      } catch (error) {
        writeHealth.failed(error);
        throw error;
      }
      if (!connection.inTransaction) {
        committed++;
        writeHealth.wrote();
      }
      return result;
    }) as SQLite.Statement['run'];
    return statement;
  };
  return {
    statements: {
      close: () => connection.close(),
      gaveUpOnLock: writeHealth.gaveUp,
      prepare: (query: string) => {
        let statement = statements.get(query);
        if (!statement) {
          statement = counted(connection.prepare(query));
          statements.set(query, statement);
        }
        return statement;
      },
    },
    reached: () => committed,
  };
}

/** How long PostgreSQL lets a session of this server sit idle inside a transaction before it ends it. */
export const IDLE_IN_TRANSACTION_MS = 5000;

/**
 * How long a statement may go unanswered on PostgreSQL. Tributary's statements take milliseconds; one that gets no
 * answer for this long means a database or a link that froze without closing the connection, which is an outage
 * (503 to its request) rather than a request left hanging. The connection is then dropped, not reused. A database
 * that answers but is slow (waiting on locks) cancels the statement itself a quarter earlier (statement_timeout),
 * so that it does not go on holding its locks after its client gave up.
 */
export const QUERY_TIMEOUT_MS = 20_000;

async function openPostgres(url: string, queryTimeoutMs: number | undefined): Promise<Store> {
  // Loaded here, not at startup: a server on SQLite never needs the driver.
  const { default: pg } = await import('pg');
  // int8 (bigint) columns hold epoch times and counters that fit a JS number; count(*) comes back as int8 too.
  const types = {
    getTypeParser: (oid: number, format?: string) => (oid === 20 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format as 'text')),
  };
  // A connection that cannot be made in 5 s fails the query (503 to its request) instead of leaving it waiting.
  // A node paused inside a transaction (SIGSTOP, a VM frozen) would hold its row and advisory locks, and every other
  // node waiting on them, for as long as the pause: PostgreSQL ends such a session instead. Tributary's transactions
  // never wait on anything but their own statements, so a few idle seconds mean a stalled client.
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    types,
    connectionTimeoutMillis: 5000,
    keepAlive: true,
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
    ...(queryTimeoutMs !== undefined && { query_timeout: queryTimeoutMs, statement_timeout: Math.ceil((queryTimeoutMs * 3) / 4) }),
  } as PoolConfig);
  // An idle client whose connection the server ends (a restart, or the database dropped) is discarded by the
  // pool and replaced on the next query; without a listener pg-pool's 'error' event would crash the process.
  pool.on('error', () => undefined);
  // A client in use (inside a transaction, between its queries) that loses its connection emits 'error' too; its
  // next query fails with it (a 503 to its request). Without a listener the error would end the process.
  let answered = 0;
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
    dropConnectionOnReadTimeout(client, () => answered++);
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const location = url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
  return { db, dialect: 'postgres', location, reached: () => answered, writeTrouble: () => undefined, close: () => db.destroy() };
}

/**
 * pg answers a statement past `query_timeout` with an error but keeps the connection, whose late answer would then
 * hold every later statement of the client: the client is ended instead. Ending marks it at once, so the pool
 * discards it when Kysely releases it (this handler runs first: it was attached before Kysely awaits the answer).
 * Every answer is counted (`onAnswer`): the store's `reached()`.
 */
function dropConnectionOnReadTimeout(client: PoolClient, onAnswer: () => void): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = (...args: unknown[]) => {
    const answer = query(...args);
    if (answer instanceof Promise) {
      answer.then(onAnswer, (error: unknown) => {
        if ((error as Error | undefined)?.message === PG_READ_TIMEOUT_MESSAGE) client.end().catch(() => undefined);
      });
    }
    return answer;
  };
}

/** True when the database answers a trivial query; used by /healthz. */
export async function isReachable(store: Store): Promise<boolean> {
  try {
    await sql`select 1`.execute(store.db);
    return true;
  } catch {
    return false;
  }
}
