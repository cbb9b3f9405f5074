// Keeps a second server off a data directory whose SQLite database a running server uses: each assumes it is the queue's only consumer.
import fs from 'node:fs';
import path from 'node:path';

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

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Creates `<dataDir>/tributary.pid` exclusively. A file left by a process that has ended (a crash) is taken
 * over; one whose process runs is a DataDirInUseError that says what to do.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  fs.mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'tributary.pid');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      fs.writeFileSync(file, `${process.pid}\n`, { flag: 'wx' });
      return {
        release: () => {
          if (readPid(file) === process.pid) fs.rmSync(file, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = readPid(file);
    // This process may hold it too: a server started again in the same process (tests restart servers in place).
    if (holder !== undefined && holder !== process.pid && isAlive(holder)) {
      throw new DataDirInUseError(
        `another tributary serve (pid ${holder}) is using the data directory ${dataDir}; stop it, or start this one with ` +
          `another --data-dir (if no such process runs, delete ${file})`,
      );
    }
    fs.rmSync(file, { force: true });
  }
  throw new DataDirInUseError(`could not lock the data directory ${dataDir}: ${file} keeps being created by another process`);
}
