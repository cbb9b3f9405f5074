// What a restore leaves in a data directory while it works, and what a command that takes the data directory's lock does when a killed restore left it there.
import fs from 'node:fs';
import path from 'node:path';
import { DataDirInUseError, lockDataDir } from './data-dir-lock.js';

/** The restored copy is written under this name beside `tributary.db`, and renamed over it once whole. */
export const RESTORING_SUFFIX = '.restoring';
/** Where restore keeps the database it replaces, with its log, when that log cannot be folded into it (a damaged database). */
export const BEFORE_RESTORE_SUFFIX = '.before-restore';
/** The folder in the data directory where restore keeps its private copy of the backup while it checks and reads it. */
export const RESTORE_STAGING = 'tributary.restore-staging';

/** A killed restore's copy lies in the data directory: what to do is the operator's choice. */
export class InterruptedRestoreError extends Error {
  override name = 'InterruptedRestoreError';
}

/**
 * Refuses to start on `<dataDir>/tributary.db` while a restore's copy lies beside it: that restore was killed before
 * it put its database in place (it removes the copy when it stops any other way), and the operator, who expects the
 * restored data, would be served the database as it was before (or, in an empty data directory, a new empty one,
 * with a new first account) without a word. Only while holding the data directory's lock: a restore at work holds it.
 */
export function refuseInterruptedRestore(dataDir: string): void {
  const database = path.join(dataDir, 'tributary.db');
  const partial = `${database}${RESTORING_SUFFIX}`;
  if (!fs.existsSync(partial)) return;
  const instead = fs.existsSync(database)
    ? `delete ${partial} to go on with tributary.db as it is (the restore had not replaced it)`
    : `delete ${partial} to start with a new, empty database`;
  // Kept when the old database's log could not be folded into it: then tributary.db may be without that log.
  const kept = fs.readdirSync(dataDir).filter((name) => name.startsWith(`tributary.db${BEFORE_RESTORE_SUFFIX}`) && !/-(wal|shm|journal)$/.test(name));
  const keptNote = kept.length > 0 ? `; the database as it was before a restore, with its log, is kept as ${kept.join(', ')}` : '';
  throw new InterruptedRestoreError(
    `a restore into ${dataDir} was interrupted before it put its database in place (it left ${path.basename(partial)}): run the same tributary restore again, or ${instead}${keptNote}`,
  );
}

/**
 * For the commands that use the database beside a running server and so take no lock of their own (users, migrate): a
 * restore's copy beside it means a restore at work (it holds the lock: what they wrote now would be replaced) or one
 * that was killed (refused as serve refuses it). Without a copy nothing is checked, and no lock is taken.
 */
export function refuseDuringRestore(dataDir: string): void {
  if (!fs.existsSync(path.join(dataDir, `tributary.db${RESTORING_SUFFIX}`))) return;
  let lock: ReturnType<typeof lockDataDir>;
  try {
    lock = lockDataDir(dataDir);
  } catch (error) {
    if (!(error instanceof DataDirInUseError)) throw error;
    throw new InterruptedRestoreError(`a restore is replacing the database in ${dataDir}: wait until it has finished, then run this command again`);
  }
  try {
    refuseInterruptedRestore(dataDir);
  } finally {
    lock.release();
  }
}

/**
 * Removes the staging folder of a restore that was killed (restore removes it whenever it stops any other way).
 * Only while holding the data directory's lock: a restore at work holds it too. True when there was one.
 */
export function removeRestoreStaging(dataDir: string): boolean {
  const staging = path.join(dataDir, RESTORE_STAGING);
  if (!fs.existsSync(staging)) return false;
  fs.rmSync(staging, { recursive: true, force: true });
  return true;
}
