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

/** The holder `tributary.pid` names: its pid, and the command it runs (`serve`, `restore`, …; older files have none). */
function readHolder(file: string): { pid: number; command: string } | undefined {
  try {
    const [first, command = 'serve'] = fs.readFileSync(file, 'utf8').trim().split(/\s+/);
    const pid = Number(first);
    return Number.isInteger(pid) && pid > 0 ? { pid, command } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Holds an exclusive lock on `<dataDir>/tributary.lock` (a small SQLite file) for as long as the server runs. The
 * operating system drops it when the process ends, however it ends, so a crashed server leaves nothing to clean
 * up. `tributary.pid` beside it only names the holder (its pid and `command`) in the error a second one gets. `insteadDo` ends that
 * error with what the one refused should do: a second server can use another data directory, restore cannot.
 */
export function lockDataDir(dataDir: string, insteadDo = 'stop it, or start this one with another --data-dir', command = 'serve'): DataDirLock {
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
    const holder = readHolder(pidFile);
    const who = holder ? `another tributary ${holder.command} (pid ${holder.pid})` : 'another tributary command';
    throw new DataDirInUseError(`${who} is using the data directory ${dataDir}; ${insteadDo}`);
  }
  fs.writeFileSync(pidFile, `${process.pid} ${command}\n`);
  return {
    release: () => {
      if (readHolder(pidFile)?.pid === process.pid) fs.rmSync(pidFile, { force: true });
      lock.close();
    },
  };
}
