// Says which file another process's SQLite write lock is on and what to do: SQLite's own words, 'database is locked',
// name neither the file nor the holder, and the operator cannot tell it from a broken database.
import path from 'node:path';
import type { Config } from '../config.js';
import { codeOf, isSqliteBusy } from '../model/outages.js';
import { BUSY_WAIT_MS } from '../store/sqlite-busy.js';

/** A command gave up on SQLite's write lock, which another process held for longer than a write waits. */
export class DatabaseLockedError extends Error {
  override readonly name = 'DatabaseLockedError';

  constructor(
    readonly file: string,
    cause: unknown,
  ) {
    super(
      `the database ${file} is locked by another process (its write waited ${BUSY_WAIT_MS / 1000} s for it)\n` +
        'hint: another Tributary command on this data directory, or a sqlite3 shell left in a transaction, holds its write lock: ' +
        'end that process or its transaction (COMMIT or ROLLBACK), then try again',
      { cause },
    );
  }
}

/** True when SQLite's lock wait ran out somewhere in `error` or the errors it wraps (openStore's, for one). */
function isBusy(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 4) return false;
  if (isSqliteBusy(codeOf(error))) return true;
  return isBusy((error as { cause?: unknown }).cause, depth + 1);
}

/** Runs `work` on `config`'s database, turning a lock held by another process into a DatabaseLockedError. */
export async function sayingWhoseLock<T>(config: Pick<Config, 'dataDir' | 'databaseUrl'>, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (config.databaseUrl || !isBusy(error)) throw error;
    throw new DatabaseLockedError(path.resolve(config.dataDir, 'tributary.db'), error);
  }
}
