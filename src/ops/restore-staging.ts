// Restore's private copy of a backup in the data directory: what it checks, and, for a backup that is one self-contained file, what it puts in place.
import fs from 'node:fs';
import path from 'node:path';
import type { BackupProgress } from './backup.js';
import { OpsError, OpsInterruptedError } from './ops-error.js';
import { PAGES_PER_STEP } from './partial-copy.js';

/** The logs SQLite keeps committed data in beside a database: a backup with one of these is not one file alone. */
const BACKUP_LOGS = ['-wal', '-journal'];

export interface StagedBackup {
  /** The copy, in the staging folder, that SQLite reads (and writes beside) in place of the backup. */
  readonly file: string;
  /**
   * True when the backup had no log beside it: the copy is, byte for byte, the database to put in place, and is
   * renamed into place rather than copied a second time. Else it is read whole with its log (SQLite's backup) into
   * the database put in place.
   */
  readonly selfContained: boolean;
}

export interface StageOptions {
  signal?: AbortSignal;
  onProgress?: (progress: BackupProgress) => void;
  stopped: () => OpsInterruptedError;
  /** The error for a disk without room for the copy, given how many copies of the backup this restore makes. */
  noRoom: (copies: 1 | 2) => Error;
}

/**
 * Copies the backup, and the write-ahead log or rollback journal beside it, into `staging`, a folder of the data
 * directory. SQLite writes beside a database it reads (a WAL file's shared-memory index, a hot journal's rollback):
 * from the copy, a backup in a read-only place (a hand copy of a WAL-mode database, a backup by an older version) can
 * be read whole. In the data directory, not the system's temporary folder, so that the copy is on the file system the
 * restore needs room on anyway (and can be renamed into place from), and a restore killed there leaves it where the
 * next restore (or serve) removes it. A backup alone is copied step by step, since it is the only copy: with
 * progress, and stopped between two steps by the signal.
 */
export async function stageCopy(from: string, staging: string, options: StageOptions): Promise<StagedBackup> {
  const file = path.join(staging, 'backup.db');
  const logs = BACKUP_LOGS.filter((suffix) => fs.existsSync(from + suffix));
  try {
    fs.mkdirSync(staging, { mode: 0o700 });
    if (logs.length === 0) {
      await copyInSteps(from, file, options);
      return { file, selfContained: true };
    }
    fs.copyFileSync(from, file);
    for (const suffix of logs) fs.copyFileSync(from + suffix, file + suffix);
    // A backup kept read-only (0400) is copied with its mode; SQLite must write to the copy.
    for (const name of fs.readdirSync(staging)) fs.chmodSync(path.join(staging, name), 0o600);
    return { file, selfContained: false };
  } catch (error) {
    // A full disk is the machine's state, not a mistake in --from (the caller removes the staging folder).
    if ((error as { code?: string }).code === 'ENOSPC') throw options.noRoom(logs.length === 0 ? 1 : 2);
    if (error instanceof OpsInterruptedError) throw error;
    throw new OpsError(`--from: could not copy ${from} into ${staging} to read it: ${(error as Error).message}`);
  }
}

/**
 * Copies `from` to `to` (created 0600: it holds hashed keys and sealed secrets), a step of PAGES_PER_STEP pages at a
 * time, reporting progress in pages as SQLite's backup does, and stopping between two steps once `signal` is aborted.
 */
async function copyInSteps(from: string, to: string, options: StageOptions): Promise<void> {
  const source = await fs.promises.open(from, 'r');
  try {
    const target = await fs.promises.open(to, 'wx', 0o600);
    try {
      const size = (await source.stat()).size;
      const pageSize = await pageSizeOf(source);
      const totalPages = Math.ceil(size / pageSize);
      const step = Buffer.alloc(PAGES_PER_STEP * pageSize);
      for (let offset = 0; offset < size; ) {
        if (options.signal?.aborted) throw options.stopped();
        options.onProgress?.({ totalPages, remainingPages: totalPages - Math.floor(offset / pageSize) });
        const { bytesRead } = await source.read(step, 0, step.length, offset);
        // The file shrank meanwhile: the copy is what was there, and the check that follows judges it.
        if (bytesRead === 0) break;
        // A write may take fewer bytes than given (a disk filling up): the rest is written again, which then fails.
        for (let written = 0; written < bytesRead; ) {
          written += (await target.write(step, written, bytesRead - written, offset + written)).bytesWritten;
        }
        offset += bytesRead;
      }
      options.onProgress?.({ totalPages, remainingPages: 0 });
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}

/** The page size an SQLite file's header gives (bytes 16 and 17; 1 stands for 65536), or 4096 where it gives none. */
async function pageSizeOf(file: fs.promises.FileHandle): Promise<number> {
  const header = Buffer.alloc(2);
  await file.read(header, 0, 2, 16);
  const value = header.readUInt16BE(0);
  if (value === 1) return 65_536;
  return value >= 512 && (value & (value - 1)) === 0 ? value : 4096;
}
