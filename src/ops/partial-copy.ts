// The file a backup or a restore writes before its copy is whole: its owner's alone from the first page, removed whole when the copy stops.
import fs from 'node:fs';

/** Pages a backup or restore copies per step: small enough for progress and for Ctrl-C to be heard soon, large enough to be quick. */
export const PAGES_PER_STEP = 2048;

/**
 * Starts `partial` afresh, empty and 0600, before SQLite writes to it: the copy holds hashed keys and sealed secrets,
 * SQLite would create it with the umask's mode, and its journal takes the mode of the file.
 */
export function startPartialCopy(partial: string): void {
  removePartialCopy(partial);
  fs.writeFileSync(partial, '', { mode: 0o600 });
}

/** Removes the copy being written and the rollback journal SQLite keeps beside it while it writes. */
export function removePartialCopy(partial: string): void {
  for (const suffix of ['', '-journal']) fs.rmSync(partial + suffix, { force: true });
}
