// Makes the data directory, saying which setting names it when it cannot be made.
import fs from 'node:fs';

/** Makes `dataDir` (and its parents) if missing; Node's own words ("ENOTDIR: not a directory, mkdir …") name neither the setting nor what to do. */
export function makeDataDir(dataDir: string): void {
  try {
    fs.mkdirSync(dataDir, { recursive: true });
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    throw new Error(`the data directory ${dataDir} cannot be made (${code ?? message}): set --data-dir (TRIBUTARY_DATA_DIR) to a folder this user may write`);
  }
}
