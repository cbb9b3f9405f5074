// Which errors mean that a dependency failed rather than the request: the database unreachable, or its disk full.
// Read from the drivers' error codes (pg, better-sqlite3 and Node's sockets); nothing here touches a driver.

/**
 * `readsGoOn`: SQLite refuses writes but still reads (another process's write lock, a write or sync the file system
 * refused), so a read that succeeds says nothing about whether the outage is over. `writeRefused`: the file system's.
 */
export type Outage = { kind: 'database_unreachable' | 'disk_full'; cause: string; readsGoOn?: true; writeRefused?: true };

/** SQLite's I/O errors met only by writing: reads of the same file go on while these fail. */
const SQLITE_WRITE_IOERRS = new Set(['SQLITE_IOERR_WRITE', 'SQLITE_IOERR_FSYNC', 'SQLITE_IOERR_DIR_FSYNC', 'SQLITE_IOERR_TRUNCATE', 'SQLITE_IOERR_DELETE']);

/**
 * The connection to PostgreSQL failed after COMMIT, or a statement that commits by itself, was sent: the server may
 * have committed or not, and nothing here can tell which. Callers must not say "nothing was written". `cause` is the
 * driver's error.
 */
export class CommitOutcomeUnknownError extends Error {
  override readonly name = 'CommitOutcomeUnknownError';

  constructor(cause: unknown) {
    super(`the database connection failed before the outcome of a commit was known: ${(cause as Error | undefined)?.message ?? String(cause)}`, { cause });
  }
}

/** Node socket errors and PostgreSQL SQLSTATEs of a server that is down, restarting, or not reachable. */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '08000', // connection_exception
  '08001',
  '08003',
  '08004',
  '08006',
  '53300', // too_many_connections
  '3D000', // invalid_catalog_name: the database is gone (renamed, or dropped while a dump is restored)
  '57014', // query_canceled: by statement_timeout (QUERY_TIMEOUT_MS), a database too slow to answer
  'SQLITE_BUSY',
  'SQLITE_IOERR',
]);

/**
 * better-sqlite3 reports SQLite's extended codes: an I/O error of any kind, and a lock of any kind, among them
 * SQLITE_BUSY_SNAPSHOT (another process, the CLI say, committed between a transaction's read and its first write:
 * the transaction cannot go on, and the same request sent again succeeds).
 */
const SQLITE_UNREACHABLE_FAMILIES = ['SQLITE_IOERR', 'SQLITE_BUSY'];

/** A write or sync the file system refused (SQLite's I/O errors met only by writing). */
export function isSqliteWriteFailure(code: string | undefined): boolean {
  return code !== undefined && SQLITE_WRITE_IOERRS.has(code);
}

/** SQLite's lock refused, in any of its extended codes (SQLITE_BUSY_SNAPSHOT, SQLITE_BUSY_RECOVERY, …). */
export function isSqliteBusy(code: string | undefined): boolean {
  return code?.startsWith('SQLITE_BUSY') ?? false;
}

const UNREACHABLE_MESSAGES = [
  /Connection terminated/i,
  /connection timeout/i,
  /Client has encountered a connection error/i,
  /timeout exceeded when trying to connect/i,
];

/** pg's error for a statement past its `query_timeout` (QUERY_TIMEOUT_MS): a database or link that froze. */
export const PG_READ_TIMEOUT_MESSAGE = 'Query read timeout';

/** A driver's error code (pg's SQLSTATE, better-sqlite3's SQLITE_*, Node's E*), when the error has one. */
export function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The outage an error means, looking through `cause` and AggregateError's errors; undefined for any other error. */
export function outageOf(error: unknown, depth = 0): Outage | undefined {
  if (!error || typeof error !== 'object' || depth > 4) return undefined;
  const code = codeOf(error);
  const message = (error as { message?: unknown }).message;
  const text = typeof message === 'string' ? message : '';
  if (code === 'SQLITE_FULL' || code === 'ENOSPC') return { kind: 'disk_full', cause: text || code };
  if (code !== undefined && (UNREACHABLE_CODES.has(code) || SQLITE_UNREACHABLE_FAMILIES.some((family) => code.startsWith(family)))) {
    const writeRefused = isSqliteWriteFailure(code);
    const readsGoOn = isSqliteBusy(code) || writeRefused;
    return {
      kind: 'database_unreachable',
      cause: text || code,
      ...(readsGoOn ? { readsGoOn: true as const } : {}),
      ...(writeRefused ? { writeRefused: true as const } : {}),
    };
  }
  if (text === PG_READ_TIMEOUT_MESSAGE || UNREACHABLE_MESSAGES.some((pattern) => pattern.test(text))) return { kind: 'database_unreachable', cause: text };
  const nested = [(error as { cause?: unknown }).cause, ...((error as { errors?: unknown[] }).errors ?? [])];
  for (const inner of nested) {
    const found = outageOf(inner, depth + 1);
    if (found) return found;
  }
  return undefined;
}
