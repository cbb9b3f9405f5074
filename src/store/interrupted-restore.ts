// What a restore leaves in a data directory while it works, and what a command that takes the data directory's lock does when a killed restore left it there.
import fs from 'node:fs';
import path from 'node:path';

/** The folder in the data directory where restore keeps its private copy of the backup while it checks and reads it. */
export const RESTORE_STAGING = 'tributary.restore-staging';

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
