// `tributary restore`: puts a backup in place as a data directory's database, after checking it is one this build can run.
import fs from 'node:fs';
import path from 'node:path';
import { openSqliteFile } from '../store/sqlite-file.js';
import { Kysely, SqliteDialect } from 'kysely';
import { lockDataDir } from '../store/data-dir-lock.js';
import { RESTORE_STAGING, RESTORING_SUFFIX, removeRestoreStaging } from '../store/interrupted-restore.js';
import { appliedMigrations, refuseNewer } from '../store/migrate.js';
import type { BackupProgress } from './backup.js';
import { OpsError, OpsInterruptedError } from './ops-error.js';
import { PAGES_PER_STEP, removePartialCopy, startPartialCopy } from './partial-copy.js';
import { damageOf } from './quick-check.js';
import { type SwapStep, swapInRestoredCopy } from './restore-swap.js';
import { stageCopy } from './restore-staging.js';

export interface RestoreResult {
  readonly file: string;
  readonly migrations: number;
  /** False when the data directory has no secret.key: sealed secrets need the key kept beside the backup. */
  readonly keyFilePresent: boolean;
  /** What a killed restore had left in the data directory (its staging folder, its partial copy), removed first. */
  readonly removedLeftovers: readonly string[];
  /** Where the database it replaced was kept, with its log, when that log could not be folded into it. */
  readonly keptAside: string | undefined;
}

export interface RestoreOptions {
  from: string;
  dataDir: string;
  force: boolean;
  /** Aborted (the command's Ctrl-C or SIGTERM): the copy stops between two steps and its files are removed. */
  signal?: AbortSignal;
  /** After each step of the copy into the data directory. */
  onProgress?: (progress: BackupProgress) => void;
  /** Tests: as the swap reaches each of its points, for a crash (SIGKILL) there to leave what it would. */
  onSwapStep?: (step: SwapStep) => void;
}

const SQLITE_HEADER = 'SQLite format 3\u0000';

/**
 * Refuses a file that is not a Tributary SQLite database (or one written by a newer Tributary), a data directory
 * that already has a database unless `force`, and a data directory a server is using. Holds the directory's lock
 * from the first file it writes there to the last, so no server starts on half a database, and no other restore
 * shares its staging folder.
 */
export async function restoreDatabase(options: RestoreOptions): Promise<RestoreResult> {
  // path.resolve('') is the current folder: `--from "$BACKUP"` with BACKUP unset would be refused as that folder.
  if (options.from.trim() === '') throw new OpsError('--from: expected the path of a backup file, got an empty value');
  const from = path.resolve(options.from);
  const dataDir = path.resolve(options.dataDir);
  const { force, signal } = options;
  checkIsSqlite(from);
  // A database replaced under a running server would be lost to it: the server must stop first.
  const lock = lockDataDir(dataDir, 'stop it first (SIGTERM, and wait until it has exited), then run restore again', 'restore');
  try {
    const target = path.join(dataDir, 'tributary.db');
    if (fs.existsSync(target) && !force) {
      throw new OpsError(`${dataDir} already holds a Tributary database (tributary.db): pass --force to replace it, or choose an empty --data-dir`);
    }
    // Only a killed restore leaves these (under this lock, none is at work): full-size copies nobody would remove.
    const removedLeftovers = removeRestoreStaging(dataDir) ? [path.join(dataDir, RESTORE_STAGING)] : [];
    const staging = path.join(dataDir, RESTORE_STAGING);
    const stopped = () => new OpsInterruptedError(`the restore was interrupted: ${dataDir} is as it was`);
    try {
      const staged = await stageCopy(from, staging, { signal, onProgress: options.onProgress, stopped, noRoom: (copies) => noRoom(dataDir, from, copies) });
      const migrations = await checkBackup(staged.file, from);
      if (signal?.aborted) throw stopped();
      // Removed only now: while it lies there, serve refuses to start on the database this restore did not replace.
      const partial = target + RESTORING_SUFFIX;
      if (fs.existsSync(partial)) {
        removePartialCopy(partial);
        removedLeftovers.push(partial);
      }
      options.onSwapStep?.('staged');
      // A backup alone is, byte for byte, the database to put in place: its checked copy is renamed there, not copied again.
      const keptAside = staged.selfContained
        ? placeStaged(staged.file, target, options.onSwapStep)
        : await copyIntoPlace(staged.file, from, target, { ...options, stopped });
      return { file: target, migrations, keyFilePresent: fs.existsSync(path.join(dataDir, 'secret.key')), removedLeftovers, keptAside };
    } finally {
      fs.rmSync(staging, { recursive: true, force: true });
    }
  } finally {
    lock.release();
  }
}

/**
 * A restore that ran out of room in the data directory: exit 1, with the room it takes (`copies` of the backup: one
 * for a backup alone, renamed into place; two for one with a log beside it, read from its copy into another).
 */
function noRoom(dataDir: string, from: string, copies: 1 | 2): Error {
  const megabytes = Math.ceil(fs.statSync(from).size / 1_048_576);
  const needs =
    copies === 1 ? `${megabytes} MB (the database it puts in place)` : `${megabytes} MB twice (the copy it reads and the database it puts in place)`;
  return new Error(`no room left in ${dataDir} for the restore's copy of ${from}: it needs about ${needs}; nothing was restored`);
}

/**
 * Copies the private copy `staged` into `<target>.restoring`, step by step, and puts it in place of `target` (see
 * swapInRestoredCopy); returns where the old database was kept aside, if it was.
 */
async function copyIntoPlace(
  staged: string,
  from: string,
  target: string,
  options: Pick<RestoreOptions, 'signal' | 'onProgress' | 'onSwapStep'> & { stopped: () => Error },
): Promise<string | undefined> {
  const { signal, stopped } = options;
  const partial = target + RESTORING_SUFFIX;
  startPartialCopy(partial);
  const source = openSqliteFile(staged, { fileMustExist: true });
  try {
    // Between two steps a Ctrl-C (SIGTERM) stops the copy, which is removed: the data directory stays as it was.
    const copied = await source.backup(partial, {
      progress: ({ totalPages, remainingPages }) => {
        if (signal?.aborted) throw stopped();
        options.onProgress?.({ totalPages, remainingPages });
        return PAGES_PER_STEP;
      },
    });
    // Steps call back before they copy: the last word is the whole copy's.
    options.onProgress?.(copied);
  } catch (error) {
    removePartialCopy(partial);
    if ((error as { code?: string }).code === 'SQLITE_FULL') throw noRoom(path.dirname(target), from, 2);
    throw error;
  } finally {
    source.close();
  }
  fs.chmodSync(partial, 0o600);
  return swapInRestoredCopy(partial, target, options.onSwapStep);
}

/**
 * Renames the checked copy of a backup alone to `<target>.restoring` (one file system: the staging folder is in the
 * data directory) and puts it in place of `target` (see swapInRestoredCopy). SQLite, which read it, left no log beside
 * it that holds data (it wrote nothing), and none goes with it.
 */
function placeStaged(staged: string, target: string, onSwapStep: RestoreOptions['onSwapStep']): string | undefined {
  const partial = target + RESTORING_SUFFIX;
  fs.renameSync(staged, partial);
  return swapInRestoredCopy(partial, target, onSwapStep);
}

/** Refuses a missing file, a folder, and a file that is not an SQLite database, before anything is copied. */
function checkIsSqlite(file: string): void {
  const fd = openBackup(file);
  if (fs.fstatSync(fd).isDirectory()) {
    fs.closeSync(fd);
    throw new OpsError(`--from: ${file} is a folder; give the backup file`);
  }
  const header = Buffer.alloc(16);
  try {
    fs.readSync(fd, header, 0, 16, 0);
  } finally {
    fs.closeSync(fd);
  }
  if (header.toString('latin1') !== SQLITE_HEADER) throw new OpsError(`--from: ${file} is not an SQLite database`);
}

/** Opens `file` for reading, or refuses it as --from: missing, or not readable by this user. */
function openBackup(file: string): number {
  try {
    return fs.openSync(file, 'r');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new OpsError(`--from: no such file: ${file}`);
    // Node's own words ('EACCES: permission denied, open …') say neither which flag it is about nor what to do.
    if (code !== 'EACCES' && code !== 'EPERM') throw error;
    throw new OpsError(
      `--from: ${file} cannot be read by this user (permission denied, on the file or a folder above it): nothing was restored; run restore as a user who may read it`,
    );
  }
}

/**
 * Refuses a backup SQLite cannot read whole (truncated, or damaged on its way): copied page by page, it would replace
 * a good database with one that fails at its first read of a damaged page, or serves wrong answers until then.
 */
function checkWhole(staged: string, file: string): void {
  const db = openSqliteFile(staged, { fileMustExist: true });
  let damage: string | undefined;
  try {
    damage = damageOf(db);
  } finally {
    db.close();
  }
  if (damage) {
    throw new OpsError(`--from: ${file} is damaged (${damage}): nothing was restored; restore another backup, or make a new one with tributary backup`);
  }
}

/** Returns how many migrations the backup (read from its private copy `staged`) has applied. */
async function checkBackup(staged: string, file: string): Promise<number> {
  checkWhole(staged, file);
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: openSqliteFile(staged, { fileMustExist: true }) }) });
  try {
    const applied = await appliedMigrations(db, 'sqlite');
    if (applied.length === 0) throw new OpsError(`--from: ${file} is an SQLite database but not a Tributary one (it has no kysely_migration table)`);
    try {
      refuseNewer(applied);
    } catch (error) {
      throw new OpsError(`--from: ${(error as Error).message}`);
    }
    return applied.length;
  } finally {
    await db.destroy();
  }
}
