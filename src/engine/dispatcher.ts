// Takes queued invocations, runs them in batches per source in arrival order, and commits each batch's effects.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Store } from '../store/database.js';
import { newId } from '../store/ids.js';
import type { Transaction } from 'kysely';
import type { Database, TriggerKind } from '../store/schema.js';
import * as invocations from '../store/invocations.js';
import { readSourceDb } from '../store/sources.js';
import { addUsage } from '../store/usage.js';
import type { ComponentRuntime } from '../runtime/index.js';
import type { HttpResponse, InvocationOutcome } from '../runtime/types.js';
import type { InvocationBase, SourceService } from '../core/sources.js';
import { billingPeriod, dayPeriod } from '../core/periods.js';
import { commitEffects, type InvocationContext } from './effects.js';
import type { SourceLocks } from './source-locks.js';
import { TransactionGroup } from './group-commit.js';
import { SourceCache, type RunnableSource } from './source-cache.js';

export interface NewInvocation {
  sourceId: string;
  userId: string;
  trigger: TriggerKind;
  event: unknown;
  depth?: number;
}

export interface DispatcherOptions {
  /** Sources run in parallel, at most (one batch per source at a time). */
  concurrency: number;
  /** Invocations of one source carried by one worker message. */
  batchSize: number;
  /**
   * Sole consumer: how long a loaded source's next batch may wait to fill (see waitForFullerBatch); 0 never waits.
   * Each batch costs the server a worker round trip and a commit whatever its size, so under load fewer, larger
   * batches leave it more time for requests, for at most this much more latency.
   */
  batchWindowMs: number;
  /** How long a claim is held without renewal before another node may take the work back. */
  leaseMs: number;
  /** Fallback poll, for work enqueued by other processes or left behind. */
  pollMs: number;
  /**
   * This process is the queue's only consumer (embedded mode, one process on one SQLite file): batches need no
   * leases, and what this process queues is handed to its batch from memory instead of being read back.
   */
  soleConsumer: boolean;
}

/** An invocation taken for a batch; its event stays the JSON text of its row, which is what the worker takes. */
interface QueuedInvocation {
  id: string;
  trigger: TriggerKind;
  depth: number;
  eventJson: string;
}

/** A queued invocation handed to the dispatcher in memory; taken only once its row is committed. */
interface HandedOff extends QueuedInvocation {
  committed: boolean;
}

/**
 * A source is under load when its last batch held at least this many invocations and they arrived at least this
 * fast per batch window: then its next batch may wait to fill. A backlog left by a pause alone does not count.
 */
const LOADED_BATCH = 10;

/** Invocations of one source kept in memory at most; past it the source's queue is read from the database. */
const MAX_HANDOFF_PER_SOURCE = 10_000;

/** Receives a run's `respond()` as soon as it is called, or undefined and the outcome once the run ended without one. */
export type Responder = (response: HttpResponse | undefined, outcome?: InvocationOutcome) => void;


export class Dispatcher {
  private readonly owner = `node-${randomUUID()}`;
  private readonly running = new Set<string>();
  private readonly responders = new Map<string, Responder>();
  /** Sources known to have queued work, waiting for a free slot. */
  private readonly ready = new Set<string>();
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
  private readonly cache: SourceCache;
  /** Each cache entry's invocation base, made once: the entry is replaced when its source changes. */
  private readonly bases = new WeakMap<RunnableSource, InvocationBase>();
  /**
   * The group queue inserts commit in, apart from batch commits: an acknowledgement then waits for no batch's
   * effects (on SQLite they would share the one connection's transaction; on PostgreSQL they run on another
   * connection). Under a closed-loop load the earlier answers keep the server fed: 5% more requests per second
   * than one shared group, in eight alternating pairs (BENCHMARKS.md, session 7).
   */
  private readonly inserts: TransactionGroup;
  /** Queue rows of this turn, inserted together (see insertRows). */
  private pendingInsert: { rows: invocations.InvocationRow[]; done: Promise<void> } | undefined;
  private scanning = false;
  private scanAgain = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly idleWaiters: Array<() => void> = [];

  constructor(
    private readonly store: Store,
    private readonly runtime: ComponentRuntime,
    private readonly sources: SourceService,
    private readonly locks: SourceLocks,
    private readonly options: DispatcherOptions,
    private readonly transactions: TransactionGroup,
    private readonly logger: Logger,
  ) {
    // Embedded, this process makes every change and evicts on it; in a cluster, other nodes' changes age out.
    this.cache = new SourceCache(store, store.dialect === 'sqlite' ? Infinity : 2000);
    this.inserts = new TransactionGroup(store);
    sources.onChange((change) => this.cache.evict(change.sourceId));
  }

  async start(): Promise<void> {
    this.timer = setInterval(() => this.wake(), this.options.pollMs);
    this.timer.unref();
    this.wake();
  }

  /**
   * Queues invocations durably (they are rows when this resolves) and wakes the dispatcher.
   * `onResponse` receives the run's `respond()` for HTTP sources with customResponse (undefined: none came).
   */
  async enqueue(items: NewInvocation[], onResponse?: Array<Responder | undefined>): Promise<string[]> {
    const rows = this.invocationRows(items);
    rows.forEach((row, i) => {
      const responder = onResponse?.[i];
      if (responder) this.responders.set(row.id, responder);
    });
    const handed = this.options.soleConsumer ? rows.map((row) => this.handOff(row)) : [];
    try {
      await this.insertRows(rows);
    } catch (error) {
      for (const row of rows) this.responders.delete(row.id);
      this.dropHandOff(handed);
      throw error;
    }
    for (const entry of handed) if (entry) entry.committed = true;
    for (const row of rows) {
      const waiting = this.filling.get(row.source_id);
      if (waiting && (this.handoff.get(row.source_id)?.length ?? 0) >= waiting.target) waiting.done();
    }
    this.markReady(rows.map((r) => r.source_id));
    return rows.map((r) => r.id);
  }

  /** Rows queued in the same turn of the event loop (concurrent requests) share one multi-row insert. */
  private insertRows(rows: invocations.InvocationRow[]): Promise<void> {
    if (!this.pendingInsert) {
      const pending: invocations.InvocationRow[] = [];
      const done = this.inserts.run((trx) => {
        // Closed once its transaction starts; later rows go to the next insert.
        if (this.pendingInsert?.rows === pending) this.pendingInsert = undefined;
        return invocations.insertInvocations(trx, this.store.dialect, pending);
      });
      this.pendingInsert = { rows: pending, done };
    }
    this.pendingInsert.rows.push(...rows);
    return this.pendingInsert.done;
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

  /** Queues invocations inside the caller's transaction; call `wake(sourceIds)` once it commits. */
  async enqueueIn(trx: Transaction<Database>, items: NewInvocation[]): Promise<string[]> {
    if (!items.length) return [];
    const rows = this.invocationRows(items);
    await invocations.insertInvocations(trx, this.store.dialect, rows);
    return rows.map((r) => r.id);
  }

  private invocationRows(items: NewInvocation[]): invocations.InvocationRow[] {
    const nowMs = Date.now();
    return items.map((item) => ({
      id: newId('inv'),
      source_id: item.sourceId,
      user_id: item.userId,
      trigger: item.trigger,
      event: JSON.stringify(item.event ?? null),
      created_ms: nowMs,
      depth: item.depth ?? 0,
      attempts: 0,
      lease_owner: null,
      lease_until_ms: null,
    }));
  }

  /**
   * Makes the dispatcher look for work: for the given sources at once, or (without ids) by scanning the
   * queue for work written by other processes or left by a previous run.
   */
  wake(sourceIds?: string[]): void {
    if (sourceIds) {
      // Queued by someone else's transaction: the rows are not in memory.
      for (const id of sourceIds) this.fromDatabase.add(id);
      return this.markReady(sourceIds);
    }
    if (this.stopped) return;
    if (this.scanning) {
      this.scanAgain = true;
      return;
    }
    this.scanning = true;
    void this.scan().finally(() => {
      this.scanning = false;
      if (this.scanAgain) {
        this.scanAgain = false;
        this.wake();
      }
    });
  }

  private markReady(sourceIds: string[]): void {
    for (const id of sourceIds) this.ready.add(id);
    this.startReady();
  }

  /** Starts draining ready sources while there are free slots; a source never drains twice at once. */
  private startReady(): void {
    if (this.stopped) return;
    for (const sourceId of this.ready) {
      if (this.running.size >= this.options.concurrency) return;
      if (this.running.has(sourceId)) continue;
      this.ready.delete(sourceId);
      this.running.add(sourceId);
      void this.drainSource(sourceId).finally(() => {
        this.running.delete(sourceId);
        this.notifyIdle();
        this.startReady();
      });
    }
  }

  /** Stops claiming new work and waits for running batches to commit. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    while (this.running.size > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private async scan(): Promise<void> {
    try {
      let found = await invocations.sourcesWithWork(this.store.db, Date.now(), 1000);
      if (this.options.soleConsumer) {
        // Sources running or waiting for a slot will drain their queue anyway; the others have rows memory lacks.
        found = found.filter((id) => !this.running.has(id) && !this.ready.has(id));
        for (const id of found) this.fromDatabase.add(id);
      }
      this.markReady(found);
    } catch (error) {
      if (!this.stopped) this.logger.error({ err: error }, 'dispatcher could not read the queue');
    }
  }

  private notifyIdle(): void {
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  /**
   * Runs batches of one source until its queue is empty. Batches run in order, and so do their commits; where
   * it is safe, the next batch runs in the worker while the previous one commits.
   */
  private async drainSource(sourceId: string): Promise<void> {
    await this.locks.exclusive(sourceId, async () => {
      // The previous batch's commit: true once committed, false if it failed (the drain then stops).
      let committing: Promise<boolean> | undefined;
      const settle = async (): Promise<boolean> => {
        const committed = committing ? await committing : true;
        committing = undefined;
        return committed;
      };
      let runAhead = false;
      // The last batch: how many it took, and how many arrived per millisecond while the batch before it ran (the
      // first batch of a drain took what had waited for it, which tells nothing of the rate).
      let previous = 0;
      let perMs = 0;
      let takenAt: number | undefined;
      try {
        while (!this.stopped) {
          // Reading the queue or the source's db before the previous commit would see that batch's rows and state.
          if ((!runAhead || !this.takesFromMemory(sourceId)) && !(await settle())) return;
          await this.waitForFullerBatch(sourceId, previous, perMs);
          let { batch, fromMemory } = await this.takeBatch(sourceId);
          const now = performance.now();
          previous = batch.length;
          perMs = takenAt === undefined ? 0 : batch.length / Math.max(now - takenAt, 0.001);
          takenAt = now;
          if (!batch.length && committing) {
            // Nothing more yet: let the previous batch commit, then look once more.
            if (!(await settle())) return;
            ({ batch, fromMemory } = await this.takeBatch(sourceId));
          }
          if (!batch.length) return;
          const ran = await this.runBatch(sourceId, batch);
          if (!(await settle()) || !ran) return;
          committing = ran.commit().then(
            () => true,
            (error: unknown) => {
              // Its rows are still queued and run again; a batch run after it is not committed either.
              if (this.options.soleConsumer) this.fromDatabase.add(sourceId);
              this.logger.error({ err: error, sourceId }, 'could not commit a batch; its invocations will be retried');
              return false;
            },
          );
          runAhead = ran.runAhead;
          // A short read of the database emptied the queue; work queued since then marks the source ready again.
          if (!fromMemory && batch.length < this.options.batchSize) return;
        }
      } finally {
        await settle();
      }
    });
  }

  /**
   * Under load (see LOADED_BATCH), waits until twice as many invocations as the last batch took are queued in
   * memory (at most a full batch), or batchWindowMs have passed. Only in memory: a batch read from the database is
   * as large as the backlog anyway. `perMs`: how fast the last batch's invocations arrived.
   */
  private async waitForFullerBatch(sourceId: string, previous: number, perMs: number): Promise<void> {
    const windowMs = this.options.batchWindowMs;
    if (windowMs <= 0 || previous < LOADED_BATCH || perMs * windowMs < LOADED_BATCH || !this.takesFromMemory(sourceId)) return;
    const target = Math.min(previous * 2, this.options.batchSize);
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

  /** Whether the source's next batch is taken from memory rather than read from the database. */
  private takesFromMemory(sourceId: string): boolean {
    return this.options.soleConsumer && !this.fromDatabase.has(sourceId);
  }

  /** The source's next invocations in queue order: from memory, else from the database (leased, unless the sole consumer). */
  private async takeBatch(sourceId: string): Promise<{ batch: QueuedInvocation[]; fromMemory: boolean }> {
    const limit = this.options.batchSize;
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
    const rows = this.options.soleConsumer
      ? await invocations.oldestInvocations(this.store.db, sourceId, limit)
      : await invocations.claimBatch(this.store.db, this.store.dialect, sourceId, this.owner, Date.now(), this.options.leaseMs, limit);
    if (this.options.soleConsumer) {
      const read = new Set(rows.map((row) => row.id));
      const queue = this.handoff.get(sourceId);
      const rest = queue?.filter((entry) => !read.has(entry.id)) ?? [];
      if (rest.length) this.handoff.set(sourceId, rest);
      else this.handoff.delete(sourceId);
      // A short read took every row there was; the rest of memory is rows written since, in order.
      if (rows.length < limit) this.fromDatabase.delete(sourceId);
    }
    const batch = rows.map((row) => ({ id: row.id, trigger: row.trigger, depth: row.depth, eventJson: row.event }));
    return { batch, fromMemory: false };
  }

  /** The lease owner rows are completed or released as; null when leases are not used. */
  private get leaseOwner(): string | null {
    return this.options.soleConsumer ? null : this.owner;
  }

  /**
   * Runs a batch in a worker; returns how to commit what it did, or undefined when there is nothing to commit.
   * `runAhead`: the next batch may run before this one commits (it does not read state this one writes).
   */
  private async runBatch(sourceId: string, batch: QueuedInvocation[]): Promise<{ commit(): Promise<void>; runAhead: boolean } | undefined> {
    const ids = batch.map((b) => b.id);
    const runnable = await this.cache.get(sourceId);
    if (!runnable) {
      // The source was deleted after these were queued; there is nothing left to run them against.
      return { commit: () => invocations.completeInvocations(this.store.db, sourceId, ids, this.leaseOwner), runAhead: false };
    }
    const { source, component, info, account } = runnable;
    const eventsJson = batch.map((b) => b.eventJson);
    let outcomes: InvocationOutcome[];
    let dbWrites: Record<string, unknown>;
    // A short lease, renewed while the batch runs, lets another node take the work back soon after this one dies.
    const renewal = this.options.soleConsumer
      ? undefined
      : setInterval(() => {
          invocations.renewLeases(this.store.db, sourceId, ids, this.owner, Date.now() + this.options.leaseMs).catch((error: unknown) => {
            this.logger.warn({ err: error, sourceId }, 'could not renew invocation leases');
          });
        }, Math.max(100, Math.floor(this.options.leaseMs / 3)));
    // Only a `$.service.db` prop gives code access to the db; without one, reading it is wasted work.
    const usesDb = info.props.some((p) => p.type === '$.service.db');
    try {
      let base = this.bases.get(runnable);
      if (!base) {
        base = await this.sources.invocationBase(source, component, info);
        this.bases.set(runnable, base);
      }
      const db = usesDb ? await readSourceDb(this.store.db, sourceId) : {};
      const result = await this.runtime.invoke(
        { ...base, method: 'run', eventsJson, db },
        { onRespond: (response: HttpResponse, index = 0) => this.respond(ids[index]!, response) },
      );
      outcomes = result.outcomes;
      dbWrites = result.dbWrites;
    } catch (error) {
      // Not the component's fault (the runtime itself failed): hand the work back for another attempt.
      this.logger.error({ err: error, sourceId }, 'runtime failed; invocations will be retried');
      // The next poll finds the rows again (from the database: they are no longer in memory).
      if (this.options.soleConsumer) this.fromDatabase.add(sourceId);
      else await invocations.releaseInvocations(this.store.db, sourceId, ids, this.owner);
      return undefined;
    } finally {
      clearInterval(renewal);
    }
    const contexts: InvocationContext[] = batch.map((b) => ({ invocationId: b.id, trigger: b.trigger, eventJson: b.eventJson }));
    const nowMs = Date.now();
    // Listener runs carry their hop count on; the batch's events count as deep as its deepest invocation.
    const depth = Math.max(...batch.map((b) => b.depth));
    const options = { ...this.sources.effectsOptions(), nowMs };
    const commit = async () => {
      const committed = await this.transactions.run(async (trx) => {
        const stored = await commitEffects(
          trx,
          { sourceId, userId: source.user_id, depth, info, outcomes: outcomes.map((outcome, i) => ({ outcome, context: contexts[i]! })), dbWrites },
          options,
        );
        if (account) {
          const computeMs = Math.round(outcomes.reduce((sum, o) => sum + o.durationMs, 0));
          const period = account.plan === 'paid' ? billingPeriod(account.created_at, nowMs).key : dayPeriod(nowMs);
          await addUsage(trx, account.id, period, batch.length, computeMs);
        }
        await invocations.completeInvocations(trx, sourceId, ids, this.leaseOwner);
        return stored;
      });
      ids.forEach((id, i) => this.respond(id, undefined, outcomes[i]));
      if (committed.events.length) options.router.afterCommit(committed);
    };
    return { commit, runAhead: this.options.soleConsumer && !usesDb };
  }

  /** Hands a run's response to the waiting HTTP request once; later calls for the same invocation are ignored. */
  private respond(invocationId: string, response: HttpResponse | undefined, outcome?: InvocationOutcome): void {
    const responder = this.responders.get(invocationId);
    if (!responder) return;
    this.responders.delete(invocationId);
    responder(response, outcome);
  }

  /** Drops a waiting responder (the HTTP client went away or waited too long). */
  forgetResponder(invocationId: string): void {
    this.responders.delete(invocationId);
  }
}
