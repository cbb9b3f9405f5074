// Runs one batch of a source's invocations in a worker and returns how to commit its effects, usage and acknowledgement.
import type { InvocationOutcomeLabel, Metrics } from '../metrics/metrics.js';
import type { Logger } from 'pino';
import { every, type Clock, type ClockTimer } from '../lib/clock.js';
import type { Store, DialectName } from '../store/database.js';
import type { TransactionGroup } from '../store/group-commit.js';
import * as invocations from '../store/invocations.js';
import { readSourceDb } from '../store/sources.js';
import { applyDataStoreChanges, type ComponentRuntime, mergeDataStoreChanges } from '../runtime/index.js';
import { RuntimeClosedError } from '../runtime/errors.js';
import { readDataStores } from '../store/data-stores.js';
import type { DatabaseOutageLog } from '../store/outage-log.js';
import { dataStoreNames } from '../model/props.js';
import type { DataStoreChange, DataStoreContents, HttpResponse, InvocationOutcome, InvocationResult } from '../runtime/types.js';
import { billUsage, ComputeCarry } from '../commit/usage.js';
import { commitEffects, type InvocationContext, sameDepthRuns } from '../commit/effects.js';
import type { CommittedEvents, EventRouter } from '../commit/routing.js';
import { type AuthorisedBase, CredentialError, credentialFailure, type InvocationBases, isUnauthorized } from './invocation-base.js';
import type { QueuedInvocation } from './intake.js';
import type { Responders } from './responders.js';
import type { RunnableSource, SourceCache } from './source-cache.js';
import { failedForGoodLog, writeOrFailRefused } from './refused-results.js';
import { CommitAttempts } from './commit-attempts.js';

/** A batch that ran: commit() stores what it did; `runAhead`: the next batch may run before this one commits. */
export interface RanBatch {
  commit(): Promise<void>;
  runAhead: boolean;
  /** The runs' own time in the worker, together, in milliseconds (0 when nothing ran). */
  runMs: number;
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
  /** Where failures that are a database outage are said, once for the whole outage. */
  outages: DatabaseOutageLog;
  metrics?: Metrics | undefined;
}

export class BatchRunner {
  /**
   * Each cache entry's invocation base, made once: the entry is replaced when its source or a connected account it
   * names changes; its `$auth` is resolved again when an OAuth token it holds expires.
   */
  private readonly bases = new WeakMap<RunnableSource, AuthorisedBase>();
  private readonly commitAttempts = new CommitAttempts();
  private readonly compute = new ComputeCarry();

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
      const commit = async () => {
        await invocations.completeInvocations(this.store.db, sourceId, ids, this.leaseOwner);
        ids.forEach(() => this.options.metrics?.invocationRan('skipped', undefined));
      };
      return { commit, runAhead: false, runMs: 0 };
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
      const result = await this.execute(
        runnable,
        ids,
        eventsJson,
        batch.map((b) => b.depth),
        usesDb,
      );
      outcomes = result.outcomes;
      dbWrites = result.dbWrites;
      dataStoreWrites = result.dataStoreWrites;
      cpuMs = result.cpuMs;
    } catch (error) {
      // Not the component's fault (the runtime itself failed): hand the work back for another attempt. A runtime
      // closed under the batch is a stop past --shutdown-timeout, which hands running work back by design.
      if (error instanceof RuntimeClosedError)
        this.logger.info({ sourceId, invocationIds: ids }, 'the server is stopping: invocations handed back to the queue');
      else this.logger.error({ err: error, sourceId, invocationIds: ids }, 'runtime failed; invocations will be retried');
      // The next poll finds the rows again (from the database: they are no longer in memory).
      if (this.options.soleConsumer) handBack();
      else await invocations.releaseInvocations(this.store.db, sourceId, ids, this.options.owner);
      return undefined;
    } finally {
      renewal?.cancel();
    }
    // Taken once, outside the transaction: a commit tried again must not carry the same time twice.
    const computeMs = account ? this.compute.take(account.id, cpuMs) : 0;
    const contexts: InvocationContext[] = batch.map((b) => ({ invocationId: b.id, trigger: b.trigger, eventJson: b.eventJson }));
    const nowMs = this.options.clock.now();
    // Listener runs carry their hop count on, each its own: a batch's runs at one depth commit as one emitter's events.
    const segments = sameDepthRuns(batch.map((b) => b.depth));
    const { dialect, retention, router } = this.options;
    const options = { dialect, retention, router, nowMs };
    const write = (committing: InvocationOutcome[], keepChanges: boolean) =>
      this.transactions.run(async (trx) => {
        // Leased runs: the source may have been switched off or updated on another node; then nothing of theirs commits.
        if (this.leaseOwner !== null) await invocations.holdSourceAsRun(trx, dialect, source);
        // First, so that the rows stay locked to this commit, and a lost lease rolls back before anything is written.
        await invocations.completeInvocations(trx, sourceId, ids, this.leaseOwner);
        const stored: CommittedEvents[] = [];
        for (const [n, { depth, from, to }] of segments.entries()) {
          // The batch's db and data store writes are one whole: the first segment carries them.
          const writes = keepChanges && n === 0;
          const effects = {
            sourceId,
            userId: source.user_id,
            depth,
            info,
            outcomes: committing.slice(from, to).map((outcome, i) => ({ outcome, context: contexts[from + i]! })),
            dbWrites: writes ? dbWrites : {},
            dataStoreWrites: writes ? dataStoreWrites : undefined,
          };
          stored.push(await commitEffects(trx, effects, options));
        }
        if (account) await billUsage(trx, account, batch.length, computeMs, nowMs);
        return stored;
      });
    const commit = async () => {
      const written = await writeOrFailRefused(
        outcomes,
        write,
        (error, why) => this.logger.error({ err: error, sourceId, invocationIds: ids }, failedForGoodLog("the batch's results", why)),
        (error) => this.commitAttempts.failedForGood(ids, error),
      );
      this.commitAttempts.settled(ids);
      const committed = written.result;
      outcomes = written.outcomes;
      ids.forEach((id, i) => this.responders.respond(id, undefined, outcomes[i]?.error, answersHttp(runnable)));
      for (const outcome of outcomes) this.options.metrics?.invocationRan(outcomeLabel(outcome), outcome.durationMs);
      for (const events of committed) if (events.events.length) router.afterCommit(events);
    };
    // A batch that reads a db or data store must see what the previous one writes: it waits for that commit.
    const usesDataStore = info.props.some((p) => p.type === 'data_store');
    const runMs = outcomes.reduce((sum, outcome) => sum + outcome.durationMs, 0);
    return { commit, runAhead: this.options.soleConsumer && !usesDb && !usesDataStore, runMs };
  }

  /**
   * The worker call of a batch. Runs that cannot get their credentials fail without a call; runs of an OAuth
   * source that failed on HTTP 401 run once more, alone, after a refresh (see retryUnauthorized).
   */
  private async execute(runnable: RunnableSource, ids: string[], eventsJson: string[], depths: number[], usesDb: boolean): Promise<InvocationResult> {
    let authorised: AuthorisedBase;
    try {
      authorised = await this.baseOf(runnable);
    } catch (error) {
      if (error instanceof CredentialError) return { outcomes: eventsJson.map(() => credentialFailure(error)), dbWrites: {}, cpuMs: 0 };
      throw error;
    }
    const db = usesDb ? await readSourceDb(this.store.db, runnable.source.id) : {};
    const dataStores = await this.dataStoresOf(runnable, authorised);
    const result = await this.runtime.invoke(
      // depths: an error a run's leftover timer throws later is routed at the run's hop count (engine/stray-errors.ts).
      { ...authorised.base, method: 'run', eventsJson, db, ...(dataStores && { dataStores }), logContext: { invocationIds: ids, depths } },
      { onRespond: (response: HttpResponse, index = 0) => this.responders.respond(ids[index]!, response, undefined, answersHttp(runnable)) },
    );
    if (!authorised.refreshable) return result;
    const unauthorized = result.outcomes.flatMap((outcome, i) => (isUnauthorized(outcome) ? [i] : []));
    if (!unauthorized.length) return result;
    const storesLeft = applyDataStoreChanges(dataStores, result.dataStoreWrites);
    return this.retryUnauthorized(runnable, authorised, ids, eventsJson, depths, { ...db, ...result.dbWrites }, result, unauthorized, storesLeft);
  }

  /** The account's data stores the source's data_store props name, as they are now; undefined when it has none. */
  private async dataStoresOf(runnable: RunnableSource, authorised: AuthorisedBase): Promise<DataStoreContents[] | undefined> {
    const names = dataStoreNames(runnable.info.props, authorised.base.props);
    return names.length ? readDataStores(this.store.db, runnable.source.user_id, names, this.options.clock.now()) : undefined;
  }

  /**
   * Refreshes the OAuth tokens and runs the runs that got a 401 once more, with the db as the batch left it (a failed
   * run wrote nothing). Their outcomes replace the failed ones in place, so the batch commits in queue order.
   */
  private async retryUnauthorized(
    runnable: RunnableSource,
    authorised: AuthorisedBase,
    ids: string[],
    eventsJson: string[],
    depths: number[],
    db: Record<string, unknown>,
    first: InvocationResult,
    unauthorized: number[],
    dataStores: DataStoreContents[] | undefined,
  ): Promise<InvocationResult> {
    const outcomes = [...first.outcomes];
    let refreshed: AuthorisedBase;
    try {
      refreshed = await this.invocationBases.reauthorised(authorised, runnable.source, runnable.info, true);
    } catch (error) {
      if (!(error instanceof CredentialError)) throw error;
      for (const i of unauthorized) outcomes[i] = { ...credentialFailure(error), logs: outcomes[i]!.logs };
      return { ...first, outcomes };
    }
    this.bases.set(runnable, refreshed);
    const again = await this.runtime.invoke(
      {
        ...refreshed.base,
        method: 'run',
        eventsJson: unauthorized.map((i) => eventsJson[i]!),
        db,
        ...(dataStores && { dataStores }),
        logContext: { invocationIds: unauthorized.map((i) => ids[i]!), depths: unauthorized.map((i) => depths[i]!) },
      },
      { onRespond: (response: HttpResponse, index = 0) => this.responders.respond(ids[unauthorized[index]!]!, response, undefined, answersHttp(runnable)) },
    );
    unauthorized.forEach((i, k) => {
      const retried = again.outcomes[k]!;
      const note = { k: 'warn' as const, ts: this.options.clock.now(), msg: 'the run got HTTP 401: the OAuth token was refreshed and the run retried once' };
      outcomes[i] = { ...retried, logs: [...outcomes[i]!.logs, note, ...retried.logs] };
    });
    const dataStoreWrites = mergeDataStoreChanges(first.dataStoreWrites, again.dataStoreWrites);
    return { outcomes, dbWrites: { ...first.dbWrites, ...again.dbWrites }, dataStoreWrites, cpuMs: first.cpuMs + again.cpuMs };
  }

  private async baseOf(runnable: RunnableSource): Promise<AuthorisedBase> {
    let authorised = this.bases.get(runnable);
    if (!authorised) authorised = await this.invocationBases.authorised(runnable.source, runnable.component, runnable.info);
    else if (this.options.clock.now() >= authorised.validUntilMs)
      authorised = await this.invocationBases.reauthorised(authorised, runnable.source, runnable.info);
    else return authorised;
    this.bases.set(runnable, authorised);
    return authorised;
  }

  /**
   * Readies this node to run the source: its bundle prepared, a worker of its account started with the bundle loaded.
   * Credentials are left to the run (a refresh here could race the node running the source). Returns false when it
   * could not now (the worker pool was busy, or anything failed): the source's first run here then does it.
   */
  async warm(sourceId: string): Promise<boolean> {
    try {
      const runnable = await this.cache.get(sourceId);
      if (!runnable) return false;
      const prepared = await this.runtime.prepare(runnable.component.code);
      return await this.runtime.warm(runnable.source.user_id, prepared);
    } catch {
      return false;
    }
  }

  /** A short lease, renewed while the batch runs, lets another node take the work back soon after this one dies. */
  private renewLeasesWhileRunning(sourceId: string, ids: string[]): ClockTimer | undefined {
    if (this.options.soleConsumer) return undefined;
    const { leaseMs, owner, clock } = this.options;
    return every(clock, Math.max(100, Math.floor(leaseMs / 3)), () => {
      invocations.renewLeases(this.store.db, sourceId, ids, owner, clock.now() + leaseMs).catch((error: unknown) => {
        if (!this.options.outages.absorb(error)) this.logger.warn({ err: error, sourceId, invocationIds: ids }, 'could not renew invocation leases');
      });
    });
  }
}

/** Whether the source answers its HTTP requests itself (`customResponse`): a client somewhere waits for its runs. */
function answersHttp(runnable: RunnableSource): boolean {
  return runnable.info.props.some((p) => p.type === '$.interface.http' && p.customResponse === true);
}

/** The metrics label of a run's outcome: a run stopped at its time limit fails with a TimeoutError. */
function outcomeLabel(outcome: InvocationOutcome): InvocationOutcomeLabel {
  if (!outcome.error) return 'ok';
  return outcome.error.name === 'TimeoutError' ? 'timeout' : 'error';
}
