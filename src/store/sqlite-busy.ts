// Waits for another process's SQLite write lock between turns of the event loop: better-sqlite3 is synchronous, so
// SQLite's own busy wait would stop the whole server (every request, stream and loop) for as long as it waits.
import { codeOf } from '../model/outages.js';

/** How long SQLite itself waits for the lock, in the calling thread: enough for another process's short write. */
export const SYNC_BUSY_TIMEOUT_MS = 20;

/** How long a statement waits for the lock in all (as SQLite's busy_timeout did): the CLI's writes take milliseconds. */
export const BUSY_WAIT_MS = 5000;

/** Longest pause between two attempts, so that a lock given up is taken soon after. */
const MAX_PAUSE_MS = 100;

/**
 * Runs `attempt` (one statement, which throws SQLITE_BUSY when SQLite's short wait ran out) again after a pause until
 * it gets the lock or BUSY_WAIT_MS have passed, then fails with SQLite's error (a 503). Retrying is what SQLite's busy
 * handler does too: a statement of a transaction that got SQLITE_BUSY left the transaction as it was, and one whose
 * snapshot another process's commit made stale fails with SQLITE_BUSY_SNAPSHOT, which is not retried. `aside` runs
 * each pause: the driver lets other statements use the connection meanwhile when no transaction is open. `onGiveUp`
 * hears of a wait that ran out: what makes /readyz say the node cannot write (write-health.ts).
 */
export async function waitingForLock<T>(
  attempt: () => T | Promise<T>,
  aside: (pause: () => Promise<void>) => Promise<void> = (pause) => pause(),
  onGiveUp?: () => void,
): Promise<T> {
  const deadline = Date.now() + BUSY_WAIT_MS;
  let pause = 5;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (codeOf(error) !== 'SQLITE_BUSY') throw error;
      if (Date.now() >= deadline) {
        onGiveUp?.();
        throw error;
      }
    }
    const ms = Math.min(pause, Math.max(1, deadline - Date.now()));
    await aside(() => new Promise((resolve) => setTimeout(resolve, ms)));
    pause = Math.min(pause * 2, MAX_PAUSE_MS);
  }
}
