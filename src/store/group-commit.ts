// Group commit: database work submitted in the same turn of the event loop shares one transaction.
import type { Kysely, Transaction } from 'kysely';
import { CommitOutcomeUnknownError, outageOf } from '../model/outages.js';
import type { Store } from './database.js';
import type { Database } from './schema.js';

type Work<T> = (trx: Transaction<Database>) => Promise<T>;
/** Work that is one statement, atomic by itself: alone in its group, it runs without BEGIN and COMMIT. */
type StatementWork<T> = (db: Kysely<Database>) => Promise<T>;

interface Pending {
  work: StatementWork<unknown>;
  /** Its work is one statement (see runStatement). */
  oneStatement: boolean;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * Every `run()` joins the next group; a group commits once, and each caller's promise settles with its own
 * result after that commit. A commit costs more than most of the statements in it, so under load many runs,
 * queue inserts and claims share one. When a group fails, its items are retried one transaction each, so
 * that one bad item fails alone. Work must use only the transaction it is given (SQLite has one connection).
 */
export class TransactionGroup {
  private pending: Pending[] = [];
  private flushing = false;
  private scheduled = false;
  /** Flushes work submitted with runLazily when no other group has taken it in time. */
  private lazyTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Store,
    private readonly maxItems = 500,
  ) {}

  run<T>(work: Work<T>): Promise<T> {
    return this.join(work as StatementWork<T>, false);
  }

  /**
   * Like run, for work that is exactly one statement. A group of one such item sends just that statement: on
   * PostgreSQL one round trip instead of three (BEGIN and COMMIT are round trips too). A group of several still
   * shares one transaction.
   */
  runStatement<T>(work: StatementWork<T>): Promise<T> {
    return this.join(work, true);
  }

  private join<T>(work: StatementWork<T>, oneStatement: boolean): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ work, oneStatement, resolve: resolve as (value: unknown) => void, reject });
      this.schedule();
    });
  }

  /**
   * Like run, but the work waits up to `maxDelayMs` for a group that commits anyway. For work no caller waits on
   * (the record of a finished webhook attempt), so that under load it adds no commit of its own.
   */
  runLazily<T>(work: Work<T>, maxDelayMs: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ work: work as StatementWork<T>, oneStatement: false, resolve: resolve as (value: unknown) => void, reject });
      if (this.scheduled || this.flushing || this.lazyTimer) return;
      this.lazyTimer = setTimeout(() => {
        this.lazyTimer = undefined;
        this.schedule();
      }, maxDelayMs);
    });
  }

  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    // setImmediate lets everything submitted in this turn (requests parsed, runs finished) join the group.
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.flushing || !this.pending.length) return;
    this.flushing = true;
    const group = this.pending.splice(0, this.maxItems);
    if (!this.pending.length && this.lazyTimer) {
      clearTimeout(this.lazyTimer);
      this.lazyTimer = undefined;
    }
    try {
      const [first] = group;
      if (group.length === 1 && first?.oneStatement) await this.runAlone(first);
      else await this.commitTogether(group);
    } finally {
      this.flushing = false;
      if (this.pending.length) this.schedule();
    }
  }

  private async commitTogether(group: Pending[]): Promise<void> {
    let committing = false;
    try {
      const results = await this.store.db.transaction().execute(async (trx) => {
        const out: unknown[] = [];
        for (const item of group) out.push(await item.work(trx));
        committing = true;
        return out;
      });
      group.forEach((item, i) => item.resolve(results[i]));
    } catch (error) {
      // Every item's work succeeded and the COMMIT failed: on PostgreSQL a lost connection leaves its outcome unknown,
      // and doing the work again could do it twice. SQLite rolls a failed COMMIT back, so its items are retried.
      if (committing && this.store.dialect === 'postgres' && outageOf(error)?.kind === 'database_unreachable') {
        const unknown = new CommitOutcomeUnknownError(error);
        for (const item of group) item.reject(unknown);
        return;
      }
      // The database is down, frozen or full: one transaction per item would fail the same way, each after its own
      // wait (up to QUERY_TIMEOUT_MS on a frozen PostgreSQL), holding every commit of the node behind them.
      if (outageOf(error)) {
        for (const item of group) item.reject(error);
        return;
      }
      for (const item of group) {
        try {
          item.resolve(await this.store.db.transaction().execute((trx) => item.work(trx)));
        } catch (error) {
          item.reject(error);
        }
      }
    }
  }

  /** One statement on a connection of its own, committed by itself. */
  private async runAlone(item: Pending): Promise<void> {
    let sent = false;
    try {
      item.resolve(
        await this.store.db.connection().execute((connection) => {
          sent = true;
          return item.work(connection);
        }),
      );
    } catch (error) {
      // As with a COMMIT cut off: once sent, a statement whose connection failed on PostgreSQL may have committed.
      const unknown = sent && this.store.dialect === 'postgres' && outageOf(error)?.kind === 'database_unreachable';
      item.reject(unknown ? new CommitOutcomeUnknownError(error) : error);
    }
  }
}

/**
 * Rows added in the same turn of the event loop (concurrent requests) go to one statement of `group`, written by
 * `write`; each caller waits on that statement's result. Alone in its group it needs no transaction (runStatement).
 * More rows than `maxRows` begin a new statement.
 */
export class RowsPerStatement<R, T> {
  private pending: { rows: R[]; done: Promise<T> } | undefined;

  constructor(
    private readonly group: TransactionGroup,
    private readonly maxRows: number,
    private readonly write: (db: Kysely<Database>, rows: R[]) => Promise<T>,
  ) {}

  add(rows: R[]): Promise<T> {
    if (!this.pending || this.pending.rows.length + rows.length > this.maxRows) {
      const batch: R[] = [];
      const done = this.group.runStatement((db) => {
        // Closed once it starts; later rows go to the next statement.
        if (this.pending?.rows === batch) this.pending = undefined;
        return this.write(db, batch);
      });
      this.pending = { rows: batch, done };
      // A statement that never started (the database unreachable) must not keep later rows waiting on its failure.
      done.catch(() => {
        if (this.pending?.rows === batch) this.pending = undefined;
      });
    }
    this.pending.rows.push(...rows);
    return this.pending.done;
  }

  /** Rows added after this go to a later statement (so that none commits before rows written meanwhile elsewhere). */
  close(): void {
    this.pending = undefined;
  }
}
