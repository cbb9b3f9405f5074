// Queues invocations durably and hands each source its next batch: from memory when this process is the queue's only consumer, else from the database.
import type { Clock } from '../lib/clock.js';
import type { Store } from '../store/database.js';
import { ROWS_PER_STATEMENT } from '../store/bulk-insert.js';
import { RowsPerStatement, TransactionGroup } from '../store/group-commit.js';
import * as invocations from '../store/invocations.js';
import type { TriggerKind } from '../model/events.js';
import { invocationRows, type NewInvocation } from '../commit/invocations.js';
import type { Responder, Responders } from './responders.js';

/** An invocation taken for a batch; its event stays the JSON text of its row, which is what the worker takes. */
export interface QueuedInvocation {
  id: string;
  trigger: TriggerKind;
  depth: number;
  eventJson: string;
}

/** A queued invocation handed over in memory; taken only once its row is committed. */
interface HandedOff extends QueuedInvocation {
  committed: boolean;
}

export interface IntakeOptions {
  /**
   * Sole consumer: how long a loaded source's next batch may wait to fill (see waitForFullerBatch); 0 never waits.
   * Each batch costs the server a worker round trip and a commit whatever its size, so under load fewer, larger
   * batches leave it more time for requests, for at most this much more latency.
   */
  batchWindowMs: number;
  /** How long a claim is held without renewal before another node may take the work back. */
  leaseMs: number;
  /**
   * This process is the queue's only consumer (embedded mode, one process on one SQLite file): batches need no
   * leases, and what this process queues is handed to its batch from memory instead of being read back.
   */
  soleConsumer: boolean;
  /** Queue and lease times are read from it (tests move it by hand). */
  clock: Clock;
}

/**
 * A source is under load when its last batch held at least this many invocations and they arrived at least this
 * fast per batch window: then its next batch may wait to fill. A backlog left by a pause alone does not count.
 */
const LOADED_BATCH = 10;

/** Invocations of one source kept in memory at most; past it the source's queue is read from the database. */
const MAX_HANDOFF_PER_SOURCE = 10_000;

export class InvocationIntake {
  /**
   * Sole consumer only: per source, the invocations `enqueue` is queuing, in order, not yet taken. They are rows
   * too; memory only saves reading them back. An entry is added before its row is written, so that any row a
   * database read can see is already in memory and is dropped from it there. `fromDatabase` marks sources that
   * may have rows memory lacks (queued in another transaction, left by an earlier process, or handed back): they
   * are read from the database until a short read shows none is left.
   */
  private readonly handoff = new Map<string, HandedOff[]>();
  private readonly fromDatabase = new Set<string>();
  /** Sources whose next batch is waiting to fill: how many queued invocations end the wait early. */
  private readonly filling = new Map<string, { target: number; done(): void }>();
  /**
   * The group queue inserts commit in, apart from batch commits: an acknowledgement then waits for no batch's
   * effects (on SQLite they would share the one connection's transaction; on PostgreSQL they run on another
   * connection). Under a closed-loop load the earlier answers keep the server fed: 5% more requests per second
   * than one shared group, in eight alternating pairs (BENCHMARKS.md, session 7).
   */
  private readonly inserts: TransactionGroup;
  /** Queue rows of this turn, inserted together (see insertRows). */
  private readonly turnInserts: RowsPerStatement<invocations.InvocationRow, void>;
  /** The same for rows queued only if their source is active (see enqueue's `onlyIfActive`): the ids inserted. */
  private readonly checkedInserts: RowsPerStatement<invocations.InvocationRow, Set<string>>;

  constructor(
    private readonly store: Store,
    private readonly responders: Responders,
    private readonly options: IntakeOptions,
    /** The lease owner of this process's claims. */
    private readonly owner: string,
  ) {
    this.inserts = new TransactionGroup(store);
    this.turnInserts = new RowsPerStatement(this.inserts, ROWS_PER_STATEMENT, (db, rows) => invocations.insertInvocations(db, store.dialect, rows));
    this.checkedInserts = new RowsPerStatement(this.inserts, ROWS_PER_STATEMENT, invocations.insertInvocationsOfActiveSources);
  }

  /**
   * Queues invocations durably (they are rows when this resolves). `onResponse` receives the run's `respond()`
   * for HTTP sources with customResponse (undefined: none came). `onlyIfActive` (an endpoint's request): on
   * PostgreSQL, rows whose source is switched off as they are written are not queued and not returned, so that a
   * node whose cache missed another node's switch-off refuses the request instead of queueing it behind that node's
   * answer. One process on SQLite makes every switch-off itself: its cache never lags.
   */
  async enqueue(items: NewInvocation[], onResponse?: Array<Responder | undefined>, onlyIfActive = false): Promise<invocations.InvocationRow[]> {
    const rows = invocationRows(items, this.options.clock.now());
    rows.forEach((row, i) => {
      const responder = onResponse?.[i];
      if (responder) this.responders.add(row.id, responder);
    });
    if (onlyIfActive && this.store.dialect === 'postgres' && !this.options.soleConsumer) return this.insertIfActive(rows);
    const handed = this.options.soleConsumer ? rows.map((row) => this.handOff(row)) : [];
    try {
      await this.insertRows(rows);
    } catch (error) {
      for (const row of rows) this.responders.forget(row.id);
      this.dropHandOff(handed);
      throw error;
    }
    for (const entry of handed) if (entry) entry.committed = true;
    for (const row of rows) {
      const waiting = this.filling.get(row.source_id);
      if (waiting && (this.handoff.get(row.source_id)?.length ?? 0) >= waiting.target) waiting.done();
    }
    return rows;
  }

  /**
   * Rows queued in the same turn of the event loop (concurrent requests) share one multi-row insert (turnInserts). More
   * rows than one statement takes, queued at once, are inserted in a transaction of their own.
   */
  private insertRows(rows: invocations.InvocationRow[]): Promise<void> {
    if (rows.length > ROWS_PER_STATEMENT) {
      // Rows queued after these go to a later insert, so that none commits before these older ones.
      this.turnInserts.close();
      return this.inserts.run((trx) => invocations.insertInvocations(trx, this.store.dialect, rows));
    }
    return this.turnInserts.add(rows);
  }

  /** enqueue's `onlyIfActive` on PostgreSQL: the rows whose source is active are queued and returned, the others forgotten. */
  private async insertIfActive(rows: invocations.InvocationRow[]): Promise<invocations.InvocationRow[]> {
    let inserted: Set<string>;
    try {
      inserted = await this.checkedInserts.add(rows);
    } catch (error) {
      for (const row of rows) this.responders.forget(row.id);
      throw error;
    }
    for (const row of rows) if (!inserted.has(row.id)) this.responders.forget(row.id);
    return rows.filter((row) => inserted.has(row.id));
  }

  private handOff(row: invocations.InvocationRow): HandedOff | undefined {
    const sourceId = row.source_id;
    let queue = this.handoff.get(sourceId);
    if (!queue) this.handoff.set(sourceId, (queue = []));
    if (queue.length >= MAX_HANDOFF_PER_SOURCE) {
      // A backlog this deep is read from the database instead of held in memory.
      this.fromDatabase.add(sourceId);
      return undefined;
    }
    const entry: HandedOff = { id: row.id, trigger: row.trigger, depth: row.depth, eventJson: row.event, committed: false };
    queue.push(entry);
    return entry;
  }

  /** Forgets entries whose rows were never written. */
  private dropHandOff(entries: Array<HandedOff | undefined>): void {
    const dropped = new Set(entries);
    for (const [sourceId, queue] of this.handoff) {
      const kept = queue.filter((entry) => !dropped.has(entry));
      if (kept.length) this.handoff.set(sourceId, kept);
      else this.handoff.delete(sourceId);
    }
  }

  /** The source may have rows memory lacks (queued elsewhere, or handed back): read it from the database. */
  readFromDatabase(sourceId: string): void {
    this.fromDatabase.add(sourceId);
  }

  /** Whether the source's next batch is taken from memory rather than read from the database. */
  takesFromMemory(sourceId: string): boolean {
    return this.options.soleConsumer && !this.fromDatabase.has(sourceId);
  }

  /**
   * Under load (see LOADED_BATCH), waits until twice as many invocations as the last batch took are queued in
   * memory (at most a full batch), or batchWindowMs have passed. Only in memory: a batch read from the database is
   * as large as the backlog anyway. `perMs`: how fast the last batch's invocations arrived.
   */
  async waitForFullerBatch(sourceId: string, previous: number, perMs: number, limit: number): Promise<void> {
    const windowMs = this.options.batchWindowMs;
    if (windowMs <= 0 || previous < LOADED_BATCH || perMs * windowMs < LOADED_BATCH || !this.takesFromMemory(sourceId)) return;
    const target = Math.min(previous * 2, limit);
    if ((this.handoff.get(sourceId)?.length ?? 0) >= target) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.filling.delete(sourceId);
        resolve();
      };
      const timer = setTimeout(done, windowMs);
      this.filling.set(sourceId, { target, done });
    });
  }

  /**
   * The source's next invocations in queue order: from memory, else from the database (leased, unless the sole
   * consumer). `heldElsewhereUntilMs`: none were taken because another node runs the source, until then at least.
   */
  async takeBatch(sourceId: string, limit: number): Promise<{ batch: QueuedInvocation[]; fromMemory: boolean; heldElsewhereUntilMs?: number }> {
    if (this.takesFromMemory(sourceId)) {
      const queue = this.handoff.get(sourceId);
      if (!queue) return { batch: [], fromMemory: true };
      // Entries are in queue order, and rows commit in that order: stop at the first one still being written.
      let count = 0;
      while (count < queue.length && count < limit && queue[count]!.committed) count++;
      const batch = queue.splice(0, count);
      if (!queue.length) this.handoff.delete(sourceId);
      return { batch, fromMemory: true };
    }
    if (!this.options.soleConsumer) {
      const { store, options } = this;
      const claim = await invocations.claimBatch(store.db, store.dialect, sourceId, this.owner, options.clock.now(), options.leaseMs, limit);
      return { batch: claim.rows.map(queuedInvocation), fromMemory: false, heldElsewhereUntilMs: claim.heldElsewhereUntilMs };
    }
    const rows = await invocations.oldestInvocations(this.store.db, sourceId, limit);
    const read = new Set(rows.map((row) => row.id));
    const rest = this.handoff.get(sourceId)?.filter((entry) => !read.has(entry.id)) ?? [];
    if (rest.length) this.handoff.set(sourceId, rest);
    else this.handoff.delete(sourceId);
    // A short read took every row there was; the rest of memory is rows written since, in order.
    if (rows.length < limit) this.fromDatabase.delete(sourceId);
    return { batch: rows.map(queuedInvocation), fromMemory: false };
  }
}

function queuedInvocation(row: invocations.InvocationRow): QueuedInvocation {
  return { id: row.id, trigger: row.trigger, depth: row.depth, eventJson: row.event };
}
