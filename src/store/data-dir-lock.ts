// Keeps a second server off a data directory whose SQLite database a running server uses: each assumes it is the queue's only consumer.
import fs from 'node:fs';
import path from 'node:path';
import { makeDataDir } from '../lib/data-dir.js';
import { openSqliteFile } from './sqlite-file.js';

export class DataDirInUseError extends Error {
  override name = 'DataDirInUseError';
}

export interface DataDirLock {
  release(): void;
}

function readPid(file: string): number | undefined {
  try {
    const pid = Number(fs.readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Holds an exclusive lock on `<dataDir>/tributary.lock` (a small SQLite file) for as long as the server runs. The
 * operating system drops it when the process ends, however it ends, so a crashed server leaves nothing to clean
 * up. `tributary.pid` beside it only names the holder in the error a second server gets. `insteadDo` ends that
 * error with what the one refused should do: a second server can use another data directory, restore cannot.
 */
export function lockDataDir(dataDir: string, insteadDo = 'stop it, or start this one with another --data-dir'): DataDirLock {
  makeDataDir(dataDir);
  const pidFile = path.join(dataDir, 'tributary.pid');
  // No busy timeout: a held lock is an answer now, not something to wait for.
  const lock = openSqliteFile(path.join(dataDir, 'tributary.lock'), { timeout: 0 });
  try {
    lock.pragma('locking_mode = EXCLUSIVE');
    // Never committed: the open transaction holds the lock until the connection closes.
    lock.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    lock.close();
    if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
    const holder = readPid(pidFile);
    throw new DataDirInUseError(`another tributary serve${holder ? ` (pid ${holder})` : ''} is using the data directory ${dataDir}; ${insteadDo}`);
  }
  fs.writeFileSync(pidFile, `${process.pid}\n`);
  return {
    release: () => {
      if (readPid(pidFile) === process.pid) fs.rmSync(pidFile, { force: true });
      lock.close();
    },
  };
}
