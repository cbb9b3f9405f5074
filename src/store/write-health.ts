// Whether this node can write to SQLite: reads still work while another process holds the write lock or the file
// system refuses writes (a read-only remount, a file size limit), so only the writes that failed say it, and
// /readyz must not call the node ready while every write fails.
import type SQLite from 'better-sqlite3';
import { codeOf, isSqliteBusy, isSqliteWriteFailure } from '../model/outages.js';

/** `locked`: another process holds the write lock; `write_error`: the file system refused a write or its sync. */
export type WriteTrouble = 'locked' | 'write_error';

export class WriteHealthWatch {
  private trouble: WriteTrouble | undefined;

  constructor(private readonly connection: SQLite.Database) {}

  /** A write waited its whole time for the lock and failed (sqlite-busy.ts). */
  readonly gaveUp = (): void => {
    this.trouble = 'locked';
  };

  /** A write statement failed: the file system's refusals count, the request's own mistakes do not. */
  failed(error: unknown): void {
    if (isSqliteWriteFailure(codeOf(error))) this.trouble = 'write_error';
  }

  /** A write committed: the lock was ours and the file system took it. */
  wrote(): void {
    this.trouble = undefined;
  }

  /**
   * The trouble the last write met, while none has committed since. An idle node would keep it (a load balancer
   * sends nothing to a node that is not ready, so no write would come to clear it): while flagged, each call tries
   * again itself, without waiting for the lock. Synchronous, so no statement of ours runs in between; inside one of
   * our transactions the lock is ours already and its commit will say how it went.
   */
  current(): WriteTrouble | undefined {
    if (!this.trouble || !this.connection.open || this.connection.inTransaction) return this.trouble;
    const timeout = this.connection.pragma('busy_timeout', { simple: true }) as number;
    this.connection.pragma('busy_timeout = 0');
    try {
      this.connection.exec('begin immediate');
      // The lock alone says nothing of the file system: a page really written (a row set to itself) does.
      if (this.trouble === 'write_error') this.connection.exec('update kysely_migration set name = name where name = (select min(name) from kysely_migration)');
      this.connection.exec('commit');
      this.trouble = undefined;
    } catch (error) {
      if (this.connection.inTransaction) this.connection.exec('rollback');
      const code = codeOf(error);
      if (isSqliteBusy(code)) this.trouble = 'locked';
      else if (isSqliteWriteFailure(code)) this.trouble = 'write_error';
      else throw error;
    } finally {
      this.connection.pragma(`busy_timeout = ${timeout}`);
    }
    return this.trouble;
  }
}
