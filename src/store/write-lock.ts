// Whether another process keeps this node from writing to SQLite: reads still work then, so only the writes that gave
// up on the lock say it, and /readyz must not call the node ready while every write waits 5 s and fails.
import type SQLite from 'better-sqlite3';
import { codeOf, isSqliteBusy } from '../model/outages.js';

export class WriteLockWatch {
  private lost = false;

  constructor(private readonly connection: SQLite.Database) {}

  /** A write waited its whole time for the lock and failed (sqlite-busy.ts). */
  readonly gaveUp = (): void => {
    this.lost = true;
  };

  /** A write committed: the lock was ours. */
  wrote(): void {
    this.lost = false;
  }

  /**
   * True while the last write gave up on the lock and none has committed since. An idle node would stay so (a load
   * balancer sends nothing to a node that is not ready, so no write would come to clear it): while flagged, each
   * call tries to take the lock itself, without waiting, and gives it back at once. Synchronous, so no statement of
   * ours runs in between; inside one of our transactions the lock is ours already and its commit will say so.
   */
  locked(): boolean {
    if (!this.lost || !this.connection.open || this.connection.inTransaction) return this.lost;
    const timeout = this.connection.pragma('busy_timeout', { simple: true }) as number;
    this.connection.pragma('busy_timeout = 0');
    try {
      this.connection.exec('begin immediate');
      this.connection.exec('rollback');
      this.lost = false;
    } catch (error) {
      if (!isSqliteBusy(codeOf(error))) throw error;
    } finally {
      this.connection.pragma(`busy_timeout = ${timeout}`);
    }
    return this.lost;
  }
}
