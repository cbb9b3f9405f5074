// The errors an operations command (backup, restore, migrate, migrate-store) ends with for a reason it can name.

/** Bad input or an unsafe state: refused before anything changed. */
export class OpsError extends Error {
  override name = 'OpsError';
}

/** Stopped by Ctrl-C or SIGTERM, once what it had written so far was removed. */
export class OpsInterruptedError extends Error {
  override name = 'OpsInterruptedError';
}
