// Schedules workflow runs: takes them up, queues each at its next step, and drains every (workflow, step) queue in
// batches, each step of a batch committed before its runs move on to the next step.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { EarliestWake, every, type Clock, type ClockTimer } from '../lib/clock.js';
import { CoalescingTask } from '../lib/coalescing-task.js';
import type { PollCadence } from '../lib/poll-cadence.js';
import type { SecretBox } from '../lib/secrets.js';
import type { DialectName, Store } from '../store/database.js';
import type { TransactionGroup } from '../store/group-commit.js';
import * as workflows from '../store/workflows.js';
import { nextLeaseEndMs } from '../store/lease-ends.js';
import { WorkflowCache } from './workflow-cache.js';
import { RunInserts } from './run-inserts.js';
import type { DatabaseOutageLog } from '../store/outage-log.js';
import type { ComponentRuntime } from '../runtime/index.js';
import type { HttpResponse, InvocationError } from '../runtime/types.js';
import { stepData } from '../model/workflows.js';
import { runRow, type NewRun } from '../commit/workflow-runs.js';
import { answersHttp, keepOneStep, triggerData } from './workflow-run-data.js';
import type { EventRouter } from '../commit/routing.js';
import { HAND_BACK_DELAY_MS, StepBatchRunner, type HeldRun, type StepOutbox } from './workflow-batch.js';
import type { CredentialSource } from './invocation-base.js';
import { holdStepData, StepBatches } from './step-batches.js';
import type { AnswerFailure, AnswerRelay } from './responders.js';
import { flowExited, RunAnswers, type RunResponder } from './run-answers.js';

export type { RunResponder, StepOutbox };

export interface WorkflowRunnerOptions {
  /** (workflow, step) queues drained at once, at most: each drain has one worker call or commit in flight. */
  concurrency: number;
  /** Runs of one step carried by one worker call, at most. */
  batchSize: number;
  /** How long a taken run is held without renewal before another runner may take it over. */
  leaseMs: number;
  /** How long to wait before scanning unasked: for runs other nodes left behind or queued unannounced. */
  cadence: PollCadence;
  /** Where failures that are a database outage are said, once for the whole outage. */
  outages: DatabaseOutageLog;
  /**
   * This process is the only runner (SQLite): it holds no leases (runs it holds are known in memory), and leases
   * left by an earlier process are released at start.
   */
  soleConsumer: boolean;
  dialect: DialectName;
  retention: number;
  router: EventRouter;
  clock: Clock;
  /** Carries out the `$.send.http`, `email` and `s3` of committed steps. */
  outbox: StepOutbox;
  /** The connected accounts' credentials, for the steps' app props. */
  credentials: CredentialSource;
  /** Told of runs queued here while this runner does not take them (an `api` node): other nodes do. */
  queuedForOthers?: (runIds: string[]) => void;
  /** In a cluster: sends the answer of a custom-response run to the node whose request waits for it. */
  relayAnswer?: AnswerRelay;
}

export class WorkflowRunner {
  private readonly owner: string | null;
  /** Runs this runner holds, by id: queued at a step or in a batch. A scan never takes them twice. */
  private readonly held = new Map<string, HeldRun>();
  /** Runs waiting for a step, per `workflowId#stepIndex`, in arrival order. */
  private readonly queues = new Map<string, HeldRun[]>();
  private readonly draining = new Set<string>();
  private readonly cutting = new StepBatches();
  private readonly answers: RunAnswers;
  private readonly workflowCache: WorkflowCache;
  private readonly batches: StepBatchRunner;
  private readonly scanning = new CoalescingTask(() => this.scan());
  private readonly inserts: RunInserts;
  private renewTimer: ClockTimer | undefined;
  /** The next scan unasked (a delayed run falls due, a lease ends, the cadence's wait). */
  private readonly nextScan: EarliestWake;
  private stopped = false;
  /** Set by start(): until then (and on an `api` node, always) queued runs are left to other nodes. */
  private taking = false;
  private readonly idleWaiters: Array<() => void> = [];

  constructor(
    private readonly store: Store,
    runtime: ComponentRuntime,
    secrets: SecretBox,
    transactions: TransactionGroup,
    private readonly options: WorkflowRunnerOptions,
    private readonly logger: Logger,
  ) {
    this.owner = options.soleConsumer ? null : `node-${randomUUID()}`;
    this.workflowCache = new WorkflowCache(store, options.soleConsumer);
    this.nextScan = new EarliestWake(options.clock, () => {
      options.cadence.lookingUnasked('workflow_runs');
      this.wake();
    });
    const { dialect, retention, router, clock, outbox, credentials } = options;
    const batchOptions = { dialect, retention, router, clock, outbox, credentials, owner: this.owner };
    this.batches = new StepBatchRunner(store, runtime, secrets, transactions, batchOptions, logger);
    this.inserts = new RunInserts(transactions, dialect);
    this.answers = new RunAnswers(options.relayAnswer);
  }

  async start(): Promise<void> {
    this.taking = true;
    const { clock, leaseMs, cadence } = this.options;
    // A run the previous process held when it stopped is taken up again now, not once its lease runs out.
    if (this.options.soleConsumer) await workflows.releaseAllLeases(this.store.db, clock.now());
    else {
      this.renewTimer = every(clock, Math.max(100, Math.floor(leaseMs / 3)), () => {
        if (this.held.size === 0) return;
        workflows.renewRunLeases(this.store.db, this.owner!, clock.now() + leaseMs).catch((error: unknown) => {
          if (!this.options.outages.absorb(error)) this.logger.warn({ err: error }, 'could not renew workflow run leases');
        });
      });
    }
    // Signals lost or back: scan at once (for what was missed), then at the new cadence.
    cadence.onChange(() => this.wake());
    this.wake();
  }

  /** Stops taking runs and waits for batches in flight to commit; unfinished runs continue after the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.nextScan.cancel();
    while (this.draining.size > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    this.renewTimer?.cancel();
  }

  /**
   * Queues new runs durably (they are rows when this resolves) and takes them up. Runs queued in the same turn of
   * the event loop share one insert. `beforeInsert` sees the rows first (a responder must exist before a run can answer).
   * Returns the rows queued: a run of a workflow deleted meanwhile is not.
   */
  async queue(runs: NewRun[], beforeInsert?: (rows: workflows.WorkflowRunRow[]) => void): Promise<workflows.WorkflowRunRow[]> {
    const rows = runs.map((run) => runRow(run, this.options.clock.now()));
    beforeInsert?.(rows);
    const queued = await this.inserts.insert(rows);
    const runIds = queued.map((r) => r.id);
    if (!runIds.length) return queued;
    if (!this.taking) this.options.queuedForOthers?.(runIds);
    else if (this.options.soleConsumer) this.adoptRows(queued, () => Promise.resolve([]));
    else this.wake(runIds);
    return queued;
  }

  /**
   * Runs were queued elsewhere (their rows committed): take them up now, or (without ids) scan for due runs. A node
   * that does not take runs ignores it: the nodes that do got the same signal.
   */
  wake(runIds?: string[]): void {
    if (this.stopped || !this.taking) return;
    if (!runIds) {
      this.scanning.request();
      return;
    }
    void this.adopt(runIds.filter((id) => !this.held.has(id)));
  }

  /** Receives the run's `$.respond()` (or its end without one); set before the run's row commits. */
  onResponse(runId: string, responder: RunResponder): void {
    this.answers.wait(runId, responder);
  }

  /** Whether the database is unreachable (or its disk full) as the run loop last found it. */
  get databaseDown(): boolean {
    return this.options.outages.ongoing;
  }

  forgetResponder(runId: string): void {
    this.answers.forget(runId);
  }

  /** The workflow changed or was deleted: its next batch reads it again, and a scan takes up runs switching it on freed. */
  evictWorkflow(workflowId: string): void {
    this.workflowCache.evict(workflowId);
    this.wake();
  }

  /** Anything may have changed (a cluster signal was missed): every workflow is read again. */
  evictAllWorkflows(): void {
    this.workflowCache.clear();
  }

  private async scan(): Promise<void> {
    const { clock, cadence, leaseMs } = this.options;
    const nowMs = clock.now();
    // Leases other nodes hold end unannounced when those nodes die: scan again once they have ended.
    let nextScanAt = nowMs + cadence.waitMs(leaseMs / 3);
    try {
      const due = await workflows.dueRuns(this.store.db, nowMs, 1000);
      this.options.outages.reached('read');
      await this.adopt(due.filter((id) => !this.held.has(id)));
      const next = await workflows.nextDueMs(this.store.db, nowMs);
      if (next !== undefined && next > nowMs) nextScanAt = Math.min(nextScanAt, next);
      const leaseEnd = this.owner ? await nextLeaseEndMs(this.store.db, 'workflow_runs', nowMs) : undefined;
      if (leaseEnd !== undefined) nextScanAt = Math.min(nextScanAt, leaseEnd + 1);
    } catch (error) {
      if (!this.stopped && !this.options.outages.absorb(error)) this.logger.error({ err: error }, 'workflow runner could not read the run queue');
      nextScanAt = nowMs + cadence.fallbackMs;
    }
    this.nextScan.cancel();
    this.wakeAt(nextScanAt);
  }

  /** Scans at `atMs`, unless a scan is due sooner (a delayed run falls due before the next look: on time). */
  private wakeAt(atMs: number): void {
    if (!this.stopped) this.nextScan.at(atMs);
  }

  /** Takes runs up by id: the only runner reads them; in a cluster they are claimed (another node may hold them). */
  private async adopt(ids: string[]): Promise<void> {
    if (!ids.length || this.stopped) return;
    const { clock, leaseMs } = this.options;
    try {
      const rows = this.owner
        ? await workflows.claimRuns(this.store.db, ids, this.owner, clock.now(), clock.now() + leaseMs)
        : (await workflows.loadUnfinishedRuns(this.store.db, ids)).filter((row) => Number(row.due_ms) <= clock.now());
      this.adoptRows(rows, (resumed) => workflows.runSteps(this.store.db, resumed));
    } catch (error) {
      if (!this.stopped && !this.options.outages.absorb(error))
        this.logger.error({ err: error }, 'workflow runner could not take up runs; the next scan retries');
      this.wakeAt(clock.now() + this.options.cadence.fallbackMs);
    }
  }

  /** Holds the rows and queues each at its next step; runs past their first step get their finished steps' data. */
  private adoptRows(rows: workflows.WorkflowRunRow[], finishedSteps: (runIds: string[]) => Promise<workflows.WorkflowRunStepRow[]>): void {
    const fresh = rows.filter((row) => !this.held.has(row.id));
    for (const run of fresh) this.held.set(run.id, { run, data: triggerData(run), dataChars: run.event.length });
    const resumed = fresh.filter((row) => row.next_step > 0).map((row) => row.id);
    const queueAll = () => {
      for (const run of fresh) this.enqueue(this.held.get(run.id)!);
    };
    if (!resumed.length) {
      queueAll();
      return;
    }
    finishedSteps(resumed).then(
      (stepRows) => {
        for (const row of stepRows) {
          const held = this.held.get(row.run_id);
          if (!held) continue;
          const data = stepData(row.return_value === null ? undefined : JSON.parse(row.return_value), JSON.parse(row.exports));
          holdStepData(held, row.name, data, (row.return_value?.length ?? 0) + row.exports.length);
        }
        queueAll();
      },
      (error: unknown) => {
        for (const run of fresh) this.held.delete(run.id);
        if (!this.options.outages.absorb(error)) this.logger.error({ err: error }, 'could not read the finished steps of resumed runs; the next scan retries');
        this.wakeAt(this.options.clock.now() + this.options.cadence.fallbackMs);
      },
    );
  }

  private enqueue(held: HeldRun): void {
    const key = `${held.run.workflow_id}#${held.run.next_step}`;
    let queue = this.queues.get(key);
    if (!queue) this.queues.set(key, (queue = []));
    queue.push(held);
    this.startDrains();
  }

  /** Starts draining waiting queues while there are free slots; a queue never drains twice at once. */
  private startDrains(): void {
    for (const key of this.queues.keys()) {
      if (this.stopped || this.draining.size >= this.options.concurrency) return;
      if (this.draining.has(key)) continue;
      this.draining.add(key);
      void this.drain(key)
        .catch((error: unknown) => {
          if (!this.options.outages.absorb(error))
            this.logger.error({ err: error, key }, 'a workflow step batch failed in the runner; its runs are taken up again later');
        })
        .finally(() => {
          this.draining.delete(key);
          for (const resolve of this.idleWaiters.splice(0)) resolve();
          this.startDrains();
        });
    }
  }

  private async drain(key: string): Promise<void> {
    const [workflowId, index] = key.split('#') as [string, string];
    const stepIndex = Number(index);
    for (;;) {
      const queue = this.queues.get(key);
      if (!queue?.length || this.stopped) {
        if (queue && !queue.length) this.queues.delete(key);
        return;
      }
      const batch = this.cutting.take(key, queue, this.options.batchSize);
      try {
        await this.runBatch(workflowId, stepIndex, batch);
      } catch (error) {
        // Not committed: the runs stay queued in the database and a scan takes them up again once their leases are let
        // go here (or, in an outage, run out).
        for (const held of batch) this.held.delete(held.run.id);
        const retryAtMs = this.options.clock.now() + this.options.cadence.fallbackMs;
        if (this.owner)
          await workflows
            .releaseRuns(
              this.store.db,
              batch.map((held) => held.run.id),
              this.owner,
              retryAtMs,
            )
            .catch(() => {});
        this.wakeAt(retryAtMs);
        throw error;
      }
    }
  }

  /**
   * Runs the next step of the batch's runs, each of which ran `stepIndex` steps. After a change of steps those may be
   * different steps: only the runs of the first one stay in `batch` (so a failure hands back only them), the others go
   * back to the head of their queue.
   */
  private async runBatch(workflowId: string, stepIndex: number, batch: HeldRun[]): Promise<void> {
    const workflow = await this.workflowCache.get(workflowId);
    const steps = workflow ? (JSON.parse(workflow.steps) as Array<{ name: string }>) : [];
    const { position, others } = keepOneStep(steps, batch);
    if (others.length) this.queues.get(`${workflowId}#${stepIndex}`)?.unshift(...others);
    if (!workflow || position === -1) {
      // Deleted (its runs went with it), or changed so that no step is left they have not run.
      const runIds = batch.map((held) => held.run.id);
      if (workflow) await workflows.finishRunsPastLastStep(this.store.db, runIds, stepIndex, this.owner, this.options.clock.now());
      for (const held of batch) this.finish(held.run.id, undefined, false);
      return;
    }
    const result = await this.batches.run(
      workflow,
      stepIndex,
      position,
      batch,
      (runId, response) => this.answers.respond(runId, response, answersHttp(workflow)),
      (runId) => this.answers.isAnswered(runId),
    );
    if (result.handedBack) {
      for (const held of batch) this.held.delete(held.run.id);
      // No signal announces the rows' new due time: look then, not at the lease watch.
      this.wakeAt(this.options.clock.now() + HAND_BACK_DELAY_MS);
      return;
    }
    const stepName = steps[position]!.name;
    let addedChars = 0;
    batch.forEach((held, i) => {
      const verdict = result.verdicts[i]!;
      const outcome = result.outcomes[i]!;
      if (verdict === 'lost') {
        this.answers.lost(held.run.id);
        return void this.held.delete(held.run.id);
      }
      addedChars = Math.max(addedChars, holdStepData(held, stepName, stepData(outcome.step?.returnValue, outcome.step?.exports ?? {})));
      if (verdict === 'finished') {
        // An end by $.flow.exit() is told to a request still waiting as what it is, not as a run that forgot to answer.
        const exit = !outcome.error && outcome.step?.exit ? flowExited(stepName, outcome.step.exit) : undefined;
        return this.finish(held.run.id, outcome.error ?? exit, answersHttp(workflow));
      }
      held.run = { ...held.run, next_step: stepIndex + 1, running_ms: held.run.running_ms + Math.round(outcome.durationMs) };
      if (verdict === 'next') return this.enqueue(held);
      // Delayed: its row has the due time; a scan takes it up again then. Its HTTP client, if any, hears of it.
      this.held.delete(held.run.id);
      this.answers.delayed(held.run.id, outcome.step?.delayMs ?? 0, answersHttp(workflow));
      this.wakeAt(this.options.clock.now() + (outcome.step?.delayMs ?? 0));
    });
    const runMs = result.outcomes.reduce((sum, outcome) => sum + outcome.durationMs, 0);
    this.cutting.ran(`${workflowId}#${stepIndex}`, addedChars, batch.length, runMs);
  }

  /** The run is over here: see RunAnswers.finish. */
  private finish(runId: string, error: InvocationError | undefined, relay: boolean): void {
    this.held.delete(runId);
    this.answers.finish(runId, error, relay);
  }

  /** The runs whose HTTP requests wait here for their answer. */
  waitingAnswers(): string[] {
    return this.answers.waitingIds();
  }

  /** An answer relayed from the node that ran the run: the request waiting here (if any) gets it. */
  answerRelayed(runId: string, response: HttpResponse | undefined, failure: AnswerFailure | undefined): void {
    this.answers.relayed(runId, response, failure);
  }
}
