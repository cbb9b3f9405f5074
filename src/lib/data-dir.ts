// Makes the data directory, saying which setting names it when it cannot be made.
import fs from 'node:fs';
import path from 'node:path';

function notAFolder(dir: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`ENOTDIR: not a directory, ${dir}`), { code: 'ENOTDIR' });
}

/** The nearest of `dataDir` and its parents that exists, and the folders below it that do not, top first. */
function missingFolders(dataDir: string): { existing: string; missing: string[] } {
  const missing: string[] = [];
  let dir = path.resolve(dataDir);
  while (!fs.existsSync(dir)) {
    missing.unshift(dir);
    dir = path.dirname(dir);
  }
  return { existing: dir, missing };
}

/**
 * Why `dataDir` can never be the data directory, or undefined: it, or the nearest of its parents that exists, is not
 * a directory (a file). Said when the setting is read, as a mistyped argument, not when the database is first opened.
 */
export function notADirectory(dataDir: string): string | undefined {
  const { existing } = missingFolders(dataDir);
  if (fs.statSync(existing).isDirectory()) return undefined;
  const whole = path.resolve(dataDir);
  return existing === whole ? `${whole} is not a directory` : `${whole} cannot be made: ${existing} is not a directory`;
}

/**
 * Makes each missing folder down from the nearest existing one. Node's `mkdirSync(…, { recursive: true })` never
 * returns where mkdir answers ENOENT although the parent exists (under /proc, /sys): it makes the parent again, forever.
 */
function makeFolders(dataDir: string): void {
  const { existing, missing } = missingFolders(dataDir);
  if (!fs.statSync(existing).isDirectory()) throw notAFolder(existing);
  for (const folder of missing) {
    try {
      fs.mkdirSync(folder);
    } catch (error) {
      // Another process made it meanwhile: as good as made here, if it is a folder.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || !fs.statSync(folder).isDirectory()) throw error;
    }
  }
}

/**
 * Makes a file in `dir` and removes it: permission bits do not tell (root may write anywhere, but not in /proc or a
 * read-only mount), and SQLite's own words for it later are "unable to open database file".
 */
function checkWritable(dir: string): void {
  const probe = path.join(dir, `.tributary-write-check-${process.pid}`);
  fs.closeSync(fs.openSync(probe, 'wx'));
  fs.rmSync(probe);
}

function reason(error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException;
  return code ?? message;
}

/** Makes `dataDir` (and its parents) if missing; Node's own words ("ENOTDIR: not a directory, mkdir …") name neither the setting nor what to do. */
export function makeDataDir(dataDir: string): void {
  const instead = 'set --data-dir (TRIBUTARY_DATA_DIR) to a folder this user may write';
  try {
    makeFolders(dataDir);
  } catch (error) {
    throw new Error(`the data directory ${dataDir} cannot be made (${reason(error)}): ${instead}`);
  }
  try {
    checkWritable(dataDir);
  } catch (error) {
    throw new Error(`the data directory ${dataDir} cannot be written to (${reason(error)}): ${instead}`);
  }
}
