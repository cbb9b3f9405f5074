// Opens the server's store: locks the data directory on SQLite, and waits for a PostgreSQL that does not answer yet.
import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { outageOf } from '../model/outages.js';
import { type DataDirLock, lockDataDir } from '../store/data-dir-lock.js';
import { openStore, type OpenStoreOptions, type Store } from '../store/database.js';
import { RESTORE_STAGING, refuseInterruptedRestore, removeRestoreStaging } from '../store/interrupted-restore.js';
import type { DatabaseOutageLog } from '../store/outage-log.js';

const CHECKPOINTS_STOPPED = 'background checkpoints stopped; commits checkpoint the log again';
/** The first retry comes soon (a restarting database is back within a second or two); later ones no more often than the longest. */
const FIRST_RETRY_MS = 250;
const LONGEST_RETRY_MS = 2000;
/** While waiting, one warning this often says that the server still waits, and why. */
const REPORT_EVERY_MS = 10_000;

export interface ServerStore {
  store: Store;
  /** SQLite only: this process is the queue's only consumer, and a second server on the same file would run work twice. */
  lock: DataDirLock | undefined;
}

export async function openServerStore(
  config: Pick<Config, 'dataDir' | 'databaseUrl' | 'databaseWait'>,
  parts: { logger: Logger; outages: DatabaseOutageLog; queryTimeoutMs: number | undefined },
): Promise<ServerStore> {
  const { logger, outages } = parts;
  const lock = config.databaseUrl ? undefined : lockDataDir(config.dataDir);
  try {
    // Under the lock no restore is at work: a staging folder is a killed one's full-size copy of its backup.
    if (lock && removeRestoreStaging(config.dataDir)) {
      logger.warn(`removed ${path.join(config.dataDir, RESTORE_STAGING)}, the copy of a backup that a killed tributary restore had left`);
    }
    if (lock) refuseInterruptedRestore(config.dataDir);
    const store = await openStoreWaiting(
      {
        dataDir: config.dataDir,
        databaseUrl: config.databaseUrl,
        backgroundCheckpoints: { onFailure: (error) => outages.absorb(error) || logger.error({ err: error }, CHECKPOINTS_STOPPED) },
        queryTimeoutMs: parts.queryTimeoutMs,
      },
      config.databaseWait,
      logger,
    );
    return { store, lock };
  } catch (error) {
    lock?.release();
    throw error;
  }
}

/**
 * openStore, tried again while PostgreSQL cannot be reached (a node started before its database, or during a
 * restart), for `waitSeconds`, the last try at its end. Other errors (a wrong password, a database newer than this
 * build) and SQLite's fail at once, as does that last try.
 */
async function openStoreWaiting(options: OpenStoreOptions, waitSeconds: number, logger: Logger): Promise<Store> {
  const startedAt = Date.now();
  const giveUpAt = startedAt + waitSeconds * 1000;
  let retryMs = FIRST_RETRY_MS;
  let reportedAt: number | undefined;
  let tries = 0;
  const failedTries = () => `${tries} failed ${tries === 1 ? 'try' : 'tries'}`;
  for (;;) {
    try {
      const store = await openStore(options);
      if (reportedAt !== undefined) logger.info(`the database answered after ${failedTries()}; starting`);
      return store;
    } catch (error) {
      tries++;
      const outage = options.databaseUrl ? outageOf(error) : undefined;
      const now = Date.now();
      if (outage && now >= giveUpAt && waitSeconds > 0) {
        logger.warn(`gave up waiting for the database after ${((now - startedAt) / 1000).toFixed(1)} s and ${failedTries()}`);
      }
      if (!outage || now >= giveUpAt) throw error;
      if (reportedAt === undefined || now - reportedAt >= REPORT_EVERY_MS) {
        reportedAt = now;
        const left = Math.ceil((giveUpAt - now) / 1000);
        logger.warn(`${(error as Error).message}; waiting for it (${failedTries()}, giving up in ${left} s; --database-wait sets how long)`);
      }
      // The last try is made at the deadline, not before it: --database-wait 3 waits 3 s.
      await new Promise((resolve) => setTimeout(resolve, Math.min(retryMs, giveUpAt - now)));
      retryMs = Math.min(retryMs * 2, LONGEST_RETRY_MS);
    }
  }
}
