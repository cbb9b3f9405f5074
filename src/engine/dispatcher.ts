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
import type { SourceService } from '../core/sources.js';
import { billingPeriod, dayPeriod } from '../core/periods.js';
import { commitEffects, type InvocationContext } from './effects.js';
import type { SourceLocks } from './source-locks.js';
import { TransactionGroup } from './group-commit.js';
import { SourceCache } from './source-cache.js';

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
  /** How long a claim is held without renewal before another node may take the work back. */
  leaseMs: number;
  /** Fallback poll, for work enqueued by other processes. */
  pollMs: number;
  /** Reclaim every lease at start (embedded mode: this process is the only one). */
  reclaimAtStart: boolean;
}

/** Receives a run's `respond()` as soon as it is called, or undefined and the outcome once the run ended without one. */
export type Responder = (response: HttpResponse | undefined, outcome?: InvocationOutcome) => void;


export class Dispatcher {
  private readonly owner = `node-${randomUUID()}`;
  private readonly running = new Set<string>();
  private readonly responders = new Map<string, Responder>();
  /** Sources known to have queued work, waiting for a free slot. */
  private readonly ready = new Set<string>();
  private readonly cache: SourceCache;
  /** Queue inserts have a group of their own: an acknowledgement should not wait for a batch's commit. */
  private readonly inserts: TransactionGroup;
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
    if (this.options.reclaimAtStart) await invocations.releaseAllLeases(this.store.db);
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
    try {
      await this.inserts.run((trx) => invocations.insertInvocations(trx, this.store.dialect, rows));
    } catch (error) {
      for (const row of rows) this.responders.delete(row.id);
      throw error;
    }
    this.markReady(rows.map((r) => r.source_id));
    return rows.map((r) => r.id);
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
    if (sourceIds) return this.markReady(sourceIds);
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
      this.markReady(await invocations.sourcesWithWork(this.store.db, Date.now(), 1000));
    } catch (error) {
      if (!this.stopped) this.logger.error({ err: error }, 'dispatcher could not read the queue');
    }
  }

  private notifyIdle(): void {
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  /** Runs batches of one source until its queue is empty. */
  private async drainSource(sourceId: string): Promise<void> {
    await this.locks.exclusive(sourceId, async () => {
      while (!this.stopped) {
        const batch = await invocations.claimBatch(
          this.store.db,
          this.store.dialect,
          sourceId,
          this.owner,
          Date.now(),
          this.options.leaseMs,
          this.options.batchSize,
        );
        if (!batch.length) return;
        await this.runBatch(sourceId, batch);
        // A short batch emptied the queue; work queued since then marks the source ready again.
        if (batch.length < this.options.batchSize) return;
      }
    });
  }

  private async runBatch(sourceId: string, batch: invocations.InvocationRow[]): Promise<void> {
    const ids = batch.map((b) => b.id);
    const runnable = await this.cache.get(sourceId);
    if (!runnable) {
      // The source was deleted after these were queued; there is nothing left to run them against.
      await invocations.completeInvocations(this.store.db, ids, this.owner);
      return;
    }
    const { source, component, info, account } = runnable;
    const events = batch.map((b) => JSON.parse(b.event) as unknown);
    let outcomes: InvocationOutcome[];
    let dbWrites: Record<string, unknown>;
    // A short lease, renewed while the batch runs, lets another node take the work back soon after this one dies.
    const renewal = setInterval(() => {
      invocations.renewLeases(this.store.db, ids, this.owner, Date.now() + this.options.leaseMs).catch((error: unknown) => {
        this.logger.warn({ err: error, sourceId }, 'could not renew invocation leases');
      });
    }, Math.max(100, Math.floor(this.options.leaseMs / 3)));
    try {
      const base = await this.sources.invocationBase(source, component, info);
      // Only a `$.service.db` prop gives code access to the db; without one, reading it is wasted work.
      const db = info.props.some((p) => p.type === '$.service.db') ? await readSourceDb(this.store.db, sourceId) : {};
      const result = await this.runtime.invoke(
        { ...base, method: 'run', events, db },
        { onRespond: (response: HttpResponse, index = 0) => this.respond(ids[index]!, response) },
      );
      outcomes = result.outcomes;
      dbWrites = result.dbWrites;
    } catch (error) {
      // Not the component's fault (the runtime itself failed): hand the work back for another attempt.
      this.logger.error({ err: error, sourceId }, 'runtime failed; invocations will be retried');
      await invocations.releaseInvocations(this.store.db, ids, this.owner);
      return;
    } finally {
      clearInterval(renewal);
    }
    const contexts: InvocationContext[] = batch.map((b, i) => ({ invocationId: b.id, trigger: b.trigger, event: events[i] }));
    const nowMs = Date.now();
    // Listener runs carry their hop count on; the batch's events count as deep as its deepest invocation.
    const depth = Math.max(...batch.map((b) => b.depth));
    const options = { ...this.sources.effectsOptions(), nowMs };
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
      await invocations.completeInvocations(trx, ids, this.owner);
      return stored;
    });
    ids.forEach((id, i) => this.respond(id, undefined, outcomes[i]));
    if (committed.events.length) options.router.afterCommit(committed);
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
