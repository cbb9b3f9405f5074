// `tributary backup`: a consistent copy of the SQLite database taken while the server runs, with SQLite's online backup.
import fs from 'node:fs';
import path from 'node:path';
import { openSqliteFile } from '../store/sqlite-file.js';
import { OpsError, OpsInterruptedError } from './ops-error.js';
import { PAGES_PER_STEP, removePartialCopy, startPartialCopy } from './partial-copy.js';
import { damageOf } from './quick-check.js';

export interface BackupProgress {
  readonly totalPages: number;
  readonly remainingPages: number;
}

export interface BackupResult {
  readonly file: string;
  readonly bytes: number;
  readonly pages: number;
  /** How often a write by the running server made SQLite start the copy over. */
  readonly restarts: number;
}

/**
 * Copies `<dataDir>/tributary.db` to `out`. SQLite's backup starts over when another process (the server) writes
 * between two steps; after the first such restart the rest is copied in one step, under one read transaction,
 * which in WAL mode never blocks the server's writes. The copy is written beside `out` and renamed into place, so
 * `out` never holds half a backup.
 */
export async function backupDatabase(options: {
  dataDir: string;
  out: string;
  force: boolean;
  onProgress?: (progress: BackupProgress) => void;
  /** Aborted (the command's Ctrl-C or SIGTERM): the copy stops between two steps and its files are removed. */
  signal?: AbortSignal;
}): Promise<BackupResult> {
  const source = path.join(path.resolve(options.dataDir), 'tributary.db');
  // path.resolve('') is the current folder: `--out "$FILE"` with FILE unset would be refused as that folder.
  if (options.out.trim() === '') throw new OpsError('--out: expected the path of the file to write, got an empty value');
  const out = path.resolve(options.out);
  if (!fs.existsSync(source)) throw new OpsError(`no Tributary database at ${source}: check --data-dir`);
  refuseDataDirectoryFiles(source, out);
  if (fs.existsSync(out) && fs.statSync(out).isDirectory()) throw new OpsError(`--out ${out} is a folder: give the path of the file to write`);
  if (fs.existsSync(out) && !options.force) throw new OpsError(`${out} exists: choose another --out, or pass --force to replace it`);
  if (!fs.existsSync(path.dirname(out))) throw new OpsError(`the folder of --out does not exist: ${path.dirname(out)}`);
  const partial = `${out}.partial`;
  let db: ReturnType<typeof openSqliteFile>;
  try {
    db = openSqliteFile(source, { fileMustExist: true, timeout: 5000 });
  } catch (error) {
    throw unreadableSource(source, error) ?? error;
  }
  try {
    startPartialCopy(partial);
  } catch (error) {
    db.close();
    // Node's own 'EACCES: permission denied, open …/b.db.partial' names a file the user never gave.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EACCES' && code !== 'EPERM' && code !== 'EROFS') throw error;
    const why = code === 'EROFS' ? 'it is on a read-only file system' : 'permission denied';
    throw new OpsError(`this user cannot write in the folder of --out, ${path.dirname(out)} (${why}): choose a folder it may write in`);
  }
  let restarts = 0;
  let lastRemaining = Number.POSITIVE_INFINITY;
  let pages = 0;
  try {
    const copied = await db.backup(partial, {
      progress: ({ totalPages, remainingPages }) => {
        pages = totalPages;
        if (remainingPages > lastRemaining) restarts++;
        lastRemaining = remainingPages;
        if (options.signal?.aborted) throw new OpsInterruptedError(`the backup was interrupted: nothing was written to ${out}`);
        options.onProgress?.({ totalPages, remainingPages });
        return restarts > 0 ? Math.max(totalPages, 1) : PAGES_PER_STEP;
      },
    });
    // A database has at least one page: none means SQLite's first step gave up on a lock (better-sqlite3 then
    // reports the backup done), and the copy is an empty file that would pass every check.
    if (copied.totalPages === 0) throw lockedSource(source);
  } catch (error) {
    db.close();
    removePartialCopy(partial);
    throw unreadableSource(source, error) ?? error;
  }
  db.close();
  checkCopy(partial, source, out);
  fs.chmodSync(partial, 0o600);
  fs.renameSync(partial, out);
  options.onProgress?.({ totalPages: pages, remainingPages: 0 });
  return { file: out, bytes: fs.statSync(out).size, pages, restarts };
}

function lockedSource(source: string): Error {
  return new Error(
    `the database ${source} is locked by another process: the backup waited 5 s to read it, and nothing was written\n` +
      'hint: a process holds it exclusively (a sqlite3 shell with locking_mode=exclusive, or left in a transaction on a database not in WAL mode): end that process or its transaction, then try again',
  );
}

function canAccess(file: string, mode: number): boolean {
  try {
    fs.accessSync(file, mode);
    return true;
  } catch {
    return false;
  }
}

/**
 * Says why SQLite could not open or read the database for a user who may not (SQLite's own words are 'unable to open
 * database file' or 'attempt to write a readonly database', naming no file, and the second sounds like a broken
 * backup): the database itself is unreadable to them, or its -shm is. A database in WAL mode, as the server keeps it,
 * is read only through its shared-memory index `-shm`, which SQLite creates beside it when it is not there (the last
 * connection to close removes it): a user who may read the files but not write in the folder cannot read it then.
 */
function unreadableSource(source: string, error: unknown): OpsError | undefined {
  if (!/^SQLITE_(READONLY|CANTOPEN)/.test(String((error as { code?: unknown }).code))) return undefined;
  const dir = path.dirname(source);
  const shm = `${source}-shm`;
  const asServer = 'run backup as the user the server runs as';
  if (!canAccess(source, fs.constants.R_OK)) return new OpsError(`this user cannot read the database ${source} (permission denied): ${asServer}`);
  if (fs.existsSync(shm) && !canAccess(shm, fs.constants.R_OK)) {
    return new OpsError(
      `this user cannot read the database ${source}: SQLite reads a database in WAL mode through ${path.basename(shm)} beside it, which this user may not read: ${asServer}`,
    );
  }
  if (canAccess(dir, fs.constants.W_OK)) return undefined;
  return new OpsError(
    `this user cannot read the database ${source}: SQLite must create ${path.basename(shm)} beside a database in WAL mode to read it, and this user may not write in ${dir}: ${asServer}, or give this user write permission on ${dir}`,
  );
}

/** The files SQLite keeps a database in: the file, its write-ahead log and shared memory, its rollback journal. */
const DATABASE_FILE_SUFFIXES = ['', '-wal', '-shm', '-journal'];

/** Where a path really leads, symlinks followed; for a file not there yet, its folder's real path and its name. */
function realPath(file: string): string {
  try {
    return fs.realpathSync(file);
  } catch {
    try {
      return path.join(fs.realpathSync(path.dirname(file)), path.basename(file));
    } catch {
      return file;
    }
  }
}

/**
 * Refuses an `out` in the data directory, even with --force. Over the database or one of its companion files (by any
 * path: a symlink, a hard link) the server would go on writing to a deleted file and lose everything from then on;
 * over `secret.key` every sealed secret is lost at the next start; over the lock a second server gets in; and a
 * backup kept beside the data is lost with it.
 */
function refuseDataDirectoryFiles(source: string, out: string): void {
  const outReal = realPath(out);
  const outStat = fs.statSync(out, { throwIfNoEntry: false });
  for (const base of new Set([source, realPath(source)])) {
    for (const suffix of DATABASE_FILE_SUFFIXES) {
      const file = base + suffix;
      const fileStat = fs.statSync(file, { throwIfNoEntry: false });
      const sameFile = outStat !== undefined && fileStat !== undefined && outStat.dev === fileStat.dev && outStat.ino === fileStat.ino;
      if (outReal === realPath(file) || sameFile) {
        throw new OpsError(`--out ${out} is the database's own file ${file}: write the backup elsewhere (--force does not allow this)`);
      }
    }
  }
  const dataDir = realPath(path.dirname(source));
  if (outReal.startsWith(dataDir + path.sep)) {
    throw new OpsError(
      `--out ${out} is inside the data directory ${dataDir}, among the files a server uses: write the backup elsewhere (--force does not allow this)`,
    );
  }
}

/**
 * The copy opens and passes SQLite's quick check before it takes the name of a backup. It is made one self-contained
 * file (a rollback journal, not the server's write-ahead log): SQLite opens a WAL-mode file only where it may write
 * its -shm beside it, so a backup kept read-only could not be read, and each read would leave files next to it.
 */
function checkCopy(file: string, source: string, out: string): void {
  const copy = openSqliteFile(file, { fileMustExist: true });
  try {
    // The copy is the database page for page: damage found in it is the database's.
    const damage = damageOf(copy);
    if (damage) {
      throw new Error(
        `the database ${source} is damaged (${damage.replace("SQLite's quick check", "SQLite's quick check of its copy")}): nothing was written to ${out}; restore it from an earlier backup`,
      );
    }
    copy.pragma('journal_mode = DELETE');
  } catch (error) {
    copy.close();
    removePartialCopy(file);
    throw error;
  }
  copy.close();
}
