// Puts a restored copy in place of a data directory's database so that a crash at any instant leaves a whole database on disk: the old one, with all its log held, or the new one.
import fs from 'node:fs';
import path from 'node:path';
import { BEFORE_RESTORE_SUFFIX } from '../store/interrupted-restore.js';
import { openSqliteFile } from '../store/sqlite-file.js';

/**
 * The points of the swap, in order: a crash at any of them leaves what the one before did, and no more. `staged` is
 * restore's, before the swap: the backup copied and checked in the staging folder, nothing beside the database yet.
 */
export type SwapStep = 'staged' | 'copied' | 'folded' | 'kept-aside' | 'logs-removed' | 'renamed';

/** The logs SQLite keeps committed data in beside a database: a WAL, or a rollback journal left hot by a crash. */
const LOG_SUFFIXES = ['-wal', '-journal'];

/**
 * Renames `partial` (whole, and flushed to disk here) over `target` in one step. SQLite would replay an old `-wal` (or
 * roll back with an old `-journal`) beside the name into the new file, page by page, so none may be left there; but
 * the old database's committed data may be in its `-wal` alone (a server that crashed). So first that log is folded
 * into the old file (checkpointed, then the database switched out of WAL mode, which removes `-wal` and `-shm`): a
 * crash meanwhile leaves what SQLite itself recovers from. Where it cannot be (a damaged old database), the old files
 * are first linked to `<target>.before-restore` names, and the log removed from beside `target` only then. Returns
 * that name when the old database was so kept.
 */
export function swapInRestoredCopy(partial: string, target: string, onStep: (step: SwapStep) => void = () => undefined): string | undefined {
  syncFile(partial);
  onStep('copied');
  foldLog(target);
  onStep('folded');
  const aside = LOG_SUFFIXES.some((suffix) => holdsData(target + suffix)) ? keepAside(target) : undefined;
  if (aside) onStep('kept-aside');
  for (const suffix of [...LOG_SUFFIXES, '-shm']) fs.rmSync(target + suffix, { force: true });
  onStep('logs-removed');
  fs.renameSync(partial, target);
  syncFolder(path.dirname(target));
  onStep('renamed');
  return aside;
}

/** Checkpoints the database's log into it, and leaves it out of WAL mode, its log gone; leaves it as it is on failure. */
function foldLog(target: string): void {
  if (!fs.existsSync(target)) return;
  let db: ReturnType<typeof openSqliteFile> | undefined;
  try {
    db = openSqliteFile(target, { fileMustExist: true, timeout: 5000 });
    // The first read recovers the log (or rolls a hot journal back); then every page it holds goes to the file.
    db.prepare('select count(*) from sqlite_master').get();
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.pragma('journal_mode = DELETE');
  } catch {
    // Damaged, or not a database: what its log holds is kept aside with it (keepAside), never replayed elsewhere.
  } finally {
    db?.close();
  }
}

function holdsData(file: string): boolean {
  return (fs.statSync(file, { throwIfNoEntry: false })?.size ?? 0) > 0;
}

/** Links the old database and its logs to the first free `<target>.before-restore` name; returns that name. */
function keepAside(target: string): string {
  let aside = target + BEFORE_RESTORE_SUFFIX;
  for (let n = 2; ['', ...LOG_SUFFIXES].some((suffix) => fs.existsSync(aside + suffix)); n++) aside = `${target}${BEFORE_RESTORE_SUFFIX}.${n}`;
  // The database before its log: the kept pair is whole from the moment the log is there beside it.
  for (const suffix of ['', ...LOG_SUFFIXES]) {
    if (!fs.existsSync(target + suffix)) continue;
    try {
      fs.linkSync(target + suffix, aside + suffix);
    } catch {
      // A file system without hard links: a copy, flushed, does as well (only slower).
      fs.copyFileSync(target + suffix, aside + suffix);
      syncFile(aside + suffix);
    }
  }
  syncFolder(path.dirname(target));
  return aside;
}

function syncFile(file: string): void {
  const fd = fs.openSync(file, 'r+');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Makes a rename or a link in `dir` last through a power cut; where a folder cannot be flushed so, it is left to the system. */
function syncFolder(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
  } catch {
    // Not every platform flushes a folder (Windows): the rename stands all the same.
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}
