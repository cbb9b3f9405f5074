// Takes queued invocations, runs them in batches per source in arrival order, and commits each batch's effects.
import type { Metrics } from '../metrics/metrics.js';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { LRUCache } from 'lru-cache';
import { EarliestWake } from '../lib/clock.js';
import type { PollCadence } from '../lib/poll-cadence.js';
import { CoalescingTask } from '../lib/coalescing-task.js';
import type { Store } from '../store/database.js';
import type { TransactionGroup } from '../store/group-commit.js';
import * as invocations from '../store/invocations.js';
import { nextLeaseEndMs } from '../store/lease-ends.js';
import type { DatabaseOutageLog } from '../store/outage-log.js';
import type { ComponentRuntime } from '../runtime/index.js';
import type { NewInvocation } from '../commit/invocations.js';
import type { EventRouter } from '../commit/routing.js';
import { BatchPacing } from './batch-pacing.js';
import { BatchRunner } from './batch-runner.js';
import { recordStrayErrors } from './stray-errors.js';
import type { InvocationBases } from './invocation-base.js';
import { InvocationIntake, type IntakeOptions } from './intake.js';
import { type AnswerFailure, type AnswerRelay, Responders, type Responder } from './responders.js';
import type { HttpResponse } from '../runtime/types.js';
import { SourceCache } from './source-cache.js';
import type { SourceLocks } from './source-locks.js';

export type { Responder };

export interface DispatcherOptions extends IntakeOptions {
  /** Invocations of one source carried by one worker message, at most (fewer when its runs are slow: BatchPacing). */
  batchSize: number;
  /** Sources run in parallel, at most (one batch per source at a time). */
  concurrency: number;
  /** How long to wait before looking at the queue unasked: for work other nodes left behind or queued unannounced. */
  cadence: PollCadence;
  /** Where failures that are a database outage are said, once for the whole outage. */
  outages: DatabaseOutageLog;
  /** Where a batch's events are stored and routed. */
  retention: number;
  router: EventRouter;
  /**
   * Told of work queued here that this dispatcher leaves to other nodes: it does not run work (an `api` node, or
   * before start), or another node runs the source now. Without it, the work waits for this dispatcher's start.
   */
  queuedForOthers?: (sourceIds: string[]) => void;
  /** In a cluster: sends the answer of a custom-response run to the node whose request waits for it. */
  relayAnswer?: AnswerRelay;
  metrics?: Metrics;
}

/**
 * How long a node leaves a source alone after finding that another node runs it (at most until that node's lease
 * ends). Without it, each signal of new work had every idle node try the source, in a transaction, and give up.
 */
const HELD_ELSEWHERE_RECHECK_MS = 1000;

export class Dispatcher {
  /** This node's name on the invocation leases it holds. */
  readonly owner = `node-${randomUUID()}`;
  private readonly running = new Set<string>();
  /** Sources known to have queued work, waiting for a free slot. */
  private readonly ready = new Set<string>();
  /** Cluster: sources another node was found running, and until when this node leaves them to it. */
  private readonly heldElsewhere = new Map<string, number>();
  /** Sources held elsewhere that this node has readied to run, so that taking one over does not wait for a worker. */
  private readonly readied = new LRUCache<string, true>({ max: 10_000 });
  private readonly pacing: BatchPacing;
  /** The HTTP requests waiting here on a custom-response run (read by the cluster link after a lost connection). */
  readonly responders: Responders;
  private readonly intake: InvocationIntake;
  private readonly runner: BatchRunner;
  private readonly cache: SourceCache;
  private readonly scanning = new CoalescingTask(() => this.scan());
  private stopped = false;
  /** Set by start(): until then (and on an `api` node, always) queued work is left to other nodes. */
  private claiming = false;
  /** The next look at the queue unasked. */
  private readonly look: EarliestWake;
  private readonly idleWaiters: Array<() => void> = [];

  constructor(
    private readonly store: Store,
    runtime: ComponentRuntime,
    bases: InvocationBases,
    private readonly locks: SourceLocks,
    private readonly options: DispatcherOptions,
    transactions: TransactionGroup,
    private readonly logger: Logger,
  ) {
    this.responders = new Responders(options.relayAnswer);
    this.look = new EarliestWake(options.clock, () => {
      options.cadence.lookingUnasked('invocations');
      this.wake();
    });
    // Embedded, this process makes every change and evicts on it; in a cluster, other nodes' changes age out.
    this.cache = new SourceCache(store, store.dialect === 'sqlite' ? Infinity : 2000);
    this.intake = new InvocationIntake(store, this.responders, options, this.owner);
    this.pacing = new BatchPacing(options.batchSize);
    const { soleConsumer, leaseMs, retention, router, clock, outages, metrics } = options;
    const runnerOptions = { soleConsumer, leaseMs, owner: this.owner, dialect: store.dialect, retention, router, clock, outages, metrics };
    this.runner = new BatchRunner(store, runtime, this.cache, bases, transactions, this.responders, runnerOptions, logger);
    // Here, built on every role, not in start(): an `api` node runs no batches but runs hooks, whose leftover timers throw there too.
    recordStrayErrors(runtime, store, transactions, locks, runnerOptions, logger);
  }

  async start(): Promise<void> {
    this.claiming = true;
    // Signals lost or back: look at once (for what was missed), then at the new cadence.
    this.options.cadence.onChange(() => this.wake());
    this.wake();
    this.startReady();
  }

  /**
   * Queues invocations durably (they are rows when this resolves) and wakes the dispatcher.
   * `onResponse` receives the run's `respond()` for HTTP sources with customResponse (undefined: none came).
   * `onlyIfActive`: see InvocationIntake.enqueue; the ids are of the rows queued.
   */
  async enqueue(items: NewInvocation[], onResponse?: Array<Responder | undefined>, onlyIfActive = false): Promise<string[]> {
    const rows = await this.intake.enqueue(items, onResponse, onlyIfActive);
    const sourceIds = rows.map((r) => r.source_id);
    this.markReady(sourceIds, true);
    return rows.map((r) => r.id);
  }

  /** An answer relayed from the node that ran the invocation: the request waiting here (if any) gets it. */
  answerRelayed(invocationId: string, response: HttpResponse | undefined, failure: AnswerFailure | undefined): void {
    this.responders.respond(invocationId, response, failure);
  }

  /** Whether the database is unreachable (or its disk full) as the work loops last found it. */
  get databaseDown(): boolean {
    return this.options.outages.ongoing;
  }

  /** Drops a waiting responder (the HTTP client went away or waited too long). */
  forgetResponder(invocationId: string): void {
    this.responders.forget(invocationId);
  }

  /**
   * The source changed: its next batch runs with what is stored now. It may have been switched on again with runs
   * that waited while it was off, which no scan would find before it: look at its queue.
   */
  evict(sourceId: string): void {
    this.cache.evict(sourceId);
    this.wake([sourceId]);
  }

  /** Anything may have changed (a cluster signal was missed): every source is read again. */
  evictAll(): void {
    this.cache.clear();
  }

  /**
   * Makes the dispatcher look for work: for the given sources at once, or (without ids) by scanning the
   * queue for work written by other processes or left by a previous run.
   */
  wake(sourceIds?: string[]): void {
    if (sourceIds) {
      // Signalled work goes only to nodes that claim: the others got the same signal, and passing it on would echo
      // it between two api nodes for ever.
      if (this.stopped || !this.claiming) return;
      // Queued by someone else's transaction: the rows are not in memory.
      for (const id of sourceIds) this.intake.readFromDatabase(id);
      this.markReady(sourceIds, false);
      return;
    }
    if (!this.stopped && this.claiming) this.scanning.request();
  }

  /** `queuedHere`: this node queued the work, so no other node has heard of it yet. */
  private markReady(sourceIds: string[], queuedHere: boolean): void {
    if (!this.claiming && this.options.queuedForOthers) {
      if (queuedHere) this.options.queuedForOthers(sourceIds);
      return;
    }
    for (const id of sourceIds) this.ready.add(id);
    if (queuedHere && this.heldElsewhere.size) {
      const leftToHolder = sourceIds.filter((id) => this.isHeldElsewhere(id));
      if (leftToHolder.length) this.options.queuedForOthers?.(leftToHolder);
    }
    this.startReady();
  }

  /** Whether this node leaves the source to another node that runs it (see leaveToHolder). */
  private isHeldElsewhere(sourceId: string): boolean {
    const untilMs = this.heldElsewhere.get(sourceId);
    if (untilMs === undefined) return false;
    if (untilMs > this.options.clock.now()) return true;
    this.heldElsewhere.delete(sourceId);
    return false;
  }

  /**
   * Another node runs the source (it holds a live lease on some of its invocations until `heldUntilMs`): leave the
   * source to it for a while, tell it of work this node may have queued, and look again once the while is over. The
   * first time, also ready the source here, so that taking it over later (that node's end, or a move) is warm.
   */
  private leaveToHolder(sourceId: string, heldUntilMs: number): void {
    const nowMs = this.options.clock.now();
    const untilMs = Math.min(heldUntilMs, nowMs + HELD_ELSEWHERE_RECHECK_MS);
    this.heldElsewhere.set(sourceId, untilMs);
    this.options.queuedForOthers?.([sourceId]);
    this.lookAfter(untilMs - nowMs + 1);
    if (!this.readied.has(sourceId)) {
      this.readied.set(sourceId, true);
      // A busy pool is left alone: the next time the source is found held elsewhere tries again.
      void this.runner.warm(sourceId).then((warm) => warm || this.readied.delete(sourceId));
    }
  }

  /** Starts draining ready sources while there are free slots; a source never drains twice at once. */
  private startReady(): void {
    if (this.stopped || !this.claiming) return;
    for (const sourceId of this.ready) {
      if (this.running.size >= this.options.concurrency) return;
      if (this.running.has(sourceId)) continue;
      this.ready.delete(sourceId);
      // Also what was marked ready before this node found the source running elsewhere: that node hears of the work.
      if (this.isHeldElsewhere(sourceId)) continue;
      this.running.add(sourceId);
      void this.drainSource(sourceId)
        .catch((error: unknown) => {
          // The database went away mid-drain: the work stays queued, and a look soon (or a wake) drains it again.
          if (!this.stopped && !this.options.outages.absorb(error)) {
            this.logger.warn({ err: error, sourceId }, 'could not drain a source; its work stays queued and is retried');
          }
          this.lookAfter(this.options.cadence.fallbackMs);
        })
        .finally(() => {
          this.running.delete(sourceId);
          this.notifyIdle();
          this.startReady();
        });
    }
  }

  /** Stops claiming new work and waits for running batches to commit. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.look.cancel();
    while (this.running.size > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private async scan(): Promise<void> {
    const { clock, cadence, soleConsumer, leaseMs } = this.options;
    // Leases other nodes hold end unannounced when those nodes die: look again once they have ended.
    let nextLookMs = cadence.waitMs(leaseMs / 3);
    try {
      const nowMs = clock.now();
      let found = await invocations.sourcesWithWork(this.store.db, nowMs, 1000);
      if (soleConsumer) {
        // Sources running or waiting for a slot will drain their queue anyway; the others have rows memory lacks.
        found = found.filter((id) => !this.running.has(id) && !this.ready.has(id));
        for (const id of found) this.intake.readFromDatabase(id);
      } else {
        for (const id of this.heldElsewhere.keys()) this.isHeldElsewhere(id);
        const leaseEnd = await nextLeaseEndMs(this.store.db, 'invocations', nowMs);
        if (leaseEnd !== undefined) nextLookMs = Math.min(nextLookMs, leaseEnd - nowMs + 1);
      }
      this.options.outages.reached('read');
      this.markReady(found, false);
    } catch (error) {
      if (!this.stopped && !this.options.outages.absorb(error)) this.logger.error({ err: error }, 'dispatcher could not read the queue');
      nextLookMs = cadence.fallbackMs;
    }
    this.look.cancel();
    this.lookAfter(nextLookMs);
  }

  /** Looks at the queue unasked after `delayMs`, unless a look is due sooner. */
  private lookAfter(delayMs: number): void {
    if (!this.stopped && this.claiming) this.look.at(this.options.clock.now() + delayMs);
  }

  /** Lets go of this node's leases on `ids` after a failed commit; if that fails too, the leases run out instead. */
  private releaseQuietly(sourceId: string, ids: string[]): void {
    invocations.releaseInvocations(this.store.db, sourceId, ids, this.owner).catch((error: unknown) => {
      if (!this.options.outages.absorb(error)) this.logger.warn({ err: error, sourceId, invocationIds: ids }, 'could not release invocation leases');
    });
  }

  private notifyIdle(): void {
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  /** Whether the source exists and is switched off (a deleted source's runs are cleared by the batch runner). */
  private async isInactive(sourceId: string): Promise<boolean> {
    const runnable = await this.cache.get(sourceId);
    return runnable !== undefined && runnable.source.active !== 1;
  }

  /**
   * Runs batches of one source until its queue is empty. Batches run in order, and so do their commits; where
   * it is safe, the next batch runs in the worker while the previous one commits.
   */
  private async drainSource(sourceId: string): Promise<void> {
    const intake = this.intake;
    await this.locks.exclusive(sourceId, async () => {
      // The previous batch's commit: true once committed, false if it failed (the drain then stops).
      let committing: Promise<boolean> | undefined;
      const settle = async (): Promise<boolean> => {
        const committed = committing ? await committing : true;
        committing = undefined;
        return committed;
      };
      const handBack = () => intake.readFromDatabase(sourceId);
      let runAhead = false;
      // The last batch: how many it took, and how many arrived per millisecond while the batch before it ran (the
      // first batch of a drain took what had waited for it, which tells nothing of the rate).
      let previous = 0;
      let perMs = 0;
      let takenAt: number | undefined;
      try {
        while (!this.stopped) {
          // Reading the queue or the source's db before the previous commit would see that batch's rows and state.
          if ((!runAhead || !intake.takesFromMemory(sourceId)) && !(await settle())) return;
          // Switched off (its deactivate() has run): what it has queued waits until it is switched on again.
          if (await this.isInactive(sourceId)) return;
          // An update, switch-off or delete waits for the source: it goes first, and the drain resumes after it.
          if (this.locks.hasWaiting(sourceId)) {
            if (await settle()) this.ready.add(sourceId);
            return;
          }
          const limit = this.pacing.limit(sourceId);
          await intake.waitForFullerBatch(sourceId, previous, perMs, limit);
          let { batch, fromMemory, heldElsewhereUntilMs } = await intake.takeBatch(sourceId, limit);
          const now = performance.now();
          previous = batch.length;
          perMs = takenAt === undefined ? 0 : batch.length / Math.max(now - takenAt, 0.001);
          takenAt = now;
          if (!batch.length && committing) {
            // Nothing more yet: let the previous batch commit, then look once more.
            if (!(await settle())) return;
            ({ batch, fromMemory, heldElsewhereUntilMs } = await intake.takeBatch(sourceId, limit));
          }
          if (heldElsewhereUntilMs !== undefined) this.leaveToHolder(sourceId, heldElsewhereUntilMs);
          // This node runs the source now, so it must not leave the source's next work to anyone: the others may
          // have found it running here and be leaving that work to this node.
          else if (batch.length) this.heldElsewhere.delete(sourceId);
          if (!batch.length) return;
          const ran = await this.runner.run(sourceId, batch, handBack);
          if (ran) this.pacing.ran(sourceId, batch.length, ran.runMs);
          const invocationIds = batch.map((b) => b.id);
          // The runtime failed and the batch was handed back: try again after the fallback wait, not the lease watch.
          if (!ran) this.lookAfter(this.options.cadence.fallbackMs);
          if (!(await settle()) || !ran) return;
          committing = ran.commit().then(
            () => {
              this.options.outages.reached('written');
              return true;
            },
            (error: unknown) => {
              if (error instanceof invocations.LeaseLostError) {
                // Another node runs them now; nothing of this run was committed.
                this.logger.warn(
                  { sourceId, invocationIds, lost: error.lost },
                  'lease lost before the commit; the batch is dropped here and runs on the node that took it over',
                );
                return false;
              }
              if (error instanceof invocations.SourceDeletedError) {
                // Deleted through another node while this one ran it: its invocations went with it, no lease was lost.
                this.logger.info({ sourceId, invocationIds }, 'source deleted before the commit; nothing of the batch is committed');
                this.evict(sourceId);
                return false;
              }
              if (error instanceof invocations.SourceChangedError) {
                // Switched off or updated through another node: the runs wait while it is off, or run again as it is now.
                this.logger.info(
                  { sourceId, invocationIds, switchedOff: error.switchedOff },
                  'source changed before the commit; its runs go back to the queue',
                );
                this.releaseQuietly(sourceId, invocationIds);
                this.evict(sourceId);
                return false;
              }
              // Its rows are still queued and run again; a batch run after it is not committed either. Leased rows are
              // let go, so that the retry comes after the fallback wait, not after the lease.
              if (this.options.soleConsumer) handBack();
              else this.releaseQuietly(sourceId, invocationIds);
              if (!this.options.outages.absorb(error)) {
                this.logger.error({ err: error, sourceId, invocationIds }, 'could not commit a batch; its invocations will be retried');
              }
              this.lookAfter(this.options.cadence.fallbackMs);
              return false;
            },
          );
          runAhead = ran.runAhead;
          // A short read of the database emptied the queue; work queued since then marks the source ready again.
          if (!fromMemory && batch.length < limit) return;
        }
      } finally {
        await settle();
      }
    });
  }
}
