// Runs one batch of a source's invocations in a worker and returns how to commit its effects, usage and acknowledgement.
import type { Logger } from 'pino';
import { every, type Clock, type ClockTimer } from '../lib/clock.js';
import type { Store, DialectName } from '../store/database.js';
import type { TransactionGroup } from '../store/group-commit.js';
import * as invocations from '../store/invocations.js';
import { readSourceDb } from '../store/sources.js';
import type { ComponentRuntime } from '../runtime/index.js';
import { readDataStores } from '../store/data-stores.js';
import { dataStoreNames } from '../model/props.js';
import type { DataStoreChange, HttpResponse, InvocationOutcome } from '../runtime/types.js';
import { billUsage } from '../commit/usage.js';
import { commitEffects, type InvocationContext } from '../commit/effects.js';
import type { EventRouter } from '../commit/routing.js';
import type { InvocationBase, InvocationBases } from './invocation-base.js';
import type { QueuedInvocation } from './intake.js';
import type { Responders } from './responders.js';
import type { RunnableSource, SourceCache } from './source-cache.js';

/** A batch that ran: commit() stores what it did; `runAhead`: the next batch may run before this one commits. */
export interface RanBatch {
  commit(): Promise<void>;
  runAhead: boolean;
}

export interface BatchRunnerOptions {
  /** Renew leases while a batch runs (cluster); the sole consumer holds none. */
  soleConsumer: boolean;
  leaseMs: number;
  /** The lease owner of this process's claims. */
  owner: string;
  dialect: DialectName;
  retention: number;
  router: EventRouter;
  clock: Clock;
}

export class BatchRunner {
  /** Each cache entry's invocation base, made once: the entry is replaced when its source changes. */
  private readonly bases = new WeakMap<RunnableSource, InvocationBase>();

  constructor(
    private readonly store: Store,
    private readonly runtime: ComponentRuntime,
    private readonly cache: SourceCache,
    private readonly invocationBases: InvocationBases,
    private readonly transactions: TransactionGroup,
    private readonly responders: Responders,
    private readonly options: BatchRunnerOptions,
    private readonly logger: Logger,
  ) {}

  /** The lease owner rows are completed or released as; null when leases are not used. */
  private get leaseOwner(): string | null {
    return this.options.soleConsumer ? null : this.options.owner;
  }

  /**
   * Runs a batch in a worker; returns how to commit what it did, or undefined when the runtime failed and the
   * batch was handed back (`handBack` is called for the sole consumer, whose rows are not leased).
   */
  async run(sourceId: string, batch: QueuedInvocation[], handBack: () => void): Promise<RanBatch | undefined> {
    const ids = batch.map((b) => b.id);
    const runnable = await this.cache.get(sourceId);
    if (!runnable) {
      // The source was deleted after these were queued; there is nothing left to run them against.
      return { commit: () => invocations.completeInvocations(this.store.db, sourceId, ids, this.leaseOwner), runAhead: false };
    }
    const { source, info, account } = runnable;
    const eventsJson = batch.map((b) => b.eventJson);
    let outcomes: InvocationOutcome[];
    let dbWrites: Record<string, unknown>;
    let dataStoreWrites: DataStoreChange[] | undefined;
    let cpuMs: number;
    const renewal = this.renewLeasesWhileRunning(sourceId, ids);
    // Only a `$.service.db` prop gives code access to the db; without one, reading it is wasted work.
    const usesDb = info.props.some((p) => p.type === '$.service.db');
    try {
      const base = await this.baseOf(runnable);
      const db = usesDb ? await readSourceDb(this.store.db, sourceId) : {};
      // The account's data stores the source's data_store props name, as they are now.
      const storeNames = dataStoreNames(info.props, base.props);
      const dataStores = storeNames.length ? await readDataStores(this.store.db, source.user_id, storeNames, this.options.clock.now()) : undefined;
      const result = await this.runtime.invoke(
        { ...base, method: 'run', eventsJson, db, ...(dataStores && { dataStores }) },
        { onRespond: (response: HttpResponse, index = 0) => this.responders.respond(ids[index]!, response) },
      );
      outcomes = result.outcomes;
      dbWrites = result.dbWrites;
      dataStoreWrites = result.dataStoreWrites;
      cpuMs = result.cpuMs;
    } catch (error) {
      // Not the component's fault (the runtime itself failed): hand the work back for another attempt.
      this.logger.error({ err: error, sourceId }, 'runtime failed; invocations will be retried');
      // The next poll finds the rows again (from the database: they are no longer in memory).
      if (this.options.soleConsumer) handBack();
      else await invocations.releaseInvocations(this.store.db, sourceId, ids, this.options.owner);
      return undefined;
    } finally {
      renewal?.cancel();
    }
    const contexts: InvocationContext[] = batch.map((b) => ({ invocationId: b.id, trigger: b.trigger, eventJson: b.eventJson }));
    const nowMs = this.options.clock.now();
    // Listener runs carry their hop count on; the batch's events count as deep as its deepest invocation.
    const depth = Math.max(...batch.map((b) => b.depth));
    const { dialect, retention, router } = this.options;
    const options = { dialect, retention, router, nowMs };
    const commit = async () => {
      const committed = await this.transactions.run(async (trx) => {
        const stored = await commitEffects(
          trx,
          {
            sourceId,
            userId: source.user_id,
            depth,
            info,
            outcomes: outcomes.map((outcome, i) => ({ outcome, context: contexts[i]! })),
            dbWrites,
            dataStoreWrites,
          },
          options,
        );
        if (account) await billUsage(trx, account, batch.length, cpuMs, nowMs);
        await invocations.completeInvocations(trx, sourceId, ids, this.leaseOwner);
        return stored;
      });
      ids.forEach((id, i) => this.responders.respond(id, undefined, outcomes[i]));
      if (committed.events.length) router.afterCommit(committed);
    };
    // A batch that reads a db or data store must see what the previous one writes: it waits for that commit.
    const usesDataStore = info.props.some((p) => p.type === 'data_store');
    return { commit, runAhead: this.options.soleConsumer && !usesDb && !usesDataStore };
  }

  private async baseOf(runnable: RunnableSource): Promise<InvocationBase> {
    let base = this.bases.get(runnable);
    if (!base) {
      base = await this.invocationBases.of(runnable.source, runnable.component, runnable.info);
      this.bases.set(runnable, base);
    }
    return base;
  }

  /** A short lease, renewed while the batch runs, lets another node take the work back soon after this one dies. */
  private renewLeasesWhileRunning(sourceId: string, ids: string[]): ClockTimer | undefined {
    if (this.options.soleConsumer) return undefined;
    const { leaseMs, owner, clock } = this.options;
    return every(clock, Math.max(100, Math.floor(leaseMs / 3)), () => {
      invocations.renewLeases(this.store.db, sourceId, ids, owner, clock.now() + leaseMs).catch((error: unknown) => {
        this.logger.warn({ err: error, sourceId }, 'could not renew invocation leases');
      });
    });
  }
}
