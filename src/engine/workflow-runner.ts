// Runs workflow runs step by step in the account's worker, committing each finished step before the next starts.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { LRUCache } from 'lru-cache';
import { every, type Clock, type ClockTimer } from '../lib/clock.js';
import { CoalescingTask } from '../lib/coalescing-task.js';
import { countedUpTo } from '../lib/cache-bounds.js';
import type { SecretBox } from '../lib/secrets.js';
import type { DialectName, Store } from '../store/database.js';
import type { TransactionGroup } from '../store/group-commit.js';
import * as workflows from '../store/workflows.js';
import { componentInfo, loadComponent } from '../store/components.js';
import { findUserByIdOrUsername } from '../store/users.js';
import { billUsage } from '../commit/usage.js';
import type { ComponentRuntime } from '../runtime/index.js';
import type { ComponentInfo, HttpResponse, InvocationError, InvocationOutcome, PreparedComponent, StepInput, StepSend } from '../runtime/types.js';
import { runtimeProps } from '../model/props.js';
import { evaluateProps } from '../model/templates.js';
import { stepData, type StoredStep, type WorkflowTrigger } from '../model/workflows.js';
import { commitStep, LostRunError } from '../commit/workflow-steps.js';
import type { EventRouter } from '../commit/routing.js';

export interface WorkflowRunnerOptions {
  /** Runs executed at once, at most. */
  concurrency: number;
  /** How long a taken run is held without renewal before another runner may take it over. */
  leaseMs: number;
  /** Fallback scan for runs queued by other processes or due after a delay. */
  pollMs: number;
  /** This process is the only runner (SQLite): leases left by an earlier process are released at start. */
  soleConsumer: boolean;
  dialect: DialectName;
  retention: number;
  router: EventRouter;
  clock: Clock;
  /** Carries out the `$.send.http`, `email` and `s3` of committed steps. */
  outbox: StepOutbox;
}

/** Where committed sends go: the outbox sender (delivery/sends), reached through this so that engine/ stays below it. */
export interface StepOutbox {
  /** Why this server cannot carry out `$.send.<kind>()` (a setting it needs is missing), or undefined when it can. */
  unavailable(kind: StepSend['kind']): string | undefined;
  /** Sends were committed: carry them out now. */
  wake(): void;
}

/** Called when a run of an HTTP trigger with custom_response answers, or ends without answering (`response` undefined). */
export type RunResponder = (response: HttpResponse | undefined, error?: InvocationError) => void;

/** A step's component ready to run: what the runtime learned of it and its prepared bundle. */
interface RunnableStep {
  info: ComponentInfo;
  prepared: PreparedComponent;
}

export class WorkflowRunner {
  private readonly owner = `node-${randomUUID()}`;
  private readonly running = new Set<string>();
  private readonly ready = new Set<string>();
  private readonly responders = new Map<string, RunResponder>();
  // Component rows never change (an edit saves a new one): entries need no eviction.
  private readonly components = new LRUCache<string, RunnableStep>(countedUpTo(10_000));
  private readonly scanning = new CoalescingTask(() => this.scan());
  private pollTimer: ClockTimer | undefined;
  private dueTimer: { at: number; timer: ClockTimer } | undefined;
  private stopped = false;
  private readonly idleWaiters: Array<() => void> = [];

  constructor(
    private readonly store: Store,
    private readonly runtime: ComponentRuntime,
    private readonly secrets: SecretBox,
    private readonly transactions: TransactionGroup,
    private readonly options: WorkflowRunnerOptions,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    // A run the previous process held when it stopped is taken up again now, not once its lease runs out.
    if (this.options.soleConsumer) await workflows.releaseAllLeases(this.store.db, this.options.clock.now());
    this.pollTimer = every(this.options.clock, this.options.pollMs, () => this.wake());
    this.wake();
  }

  /** Stops taking runs and waits for running steps to commit; unfinished runs continue after the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.pollTimer?.cancel();
    this.dueTimer?.timer.cancel();
    while (this.running.size > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /** Runs were queued (their rows committed): start them now, or (without ids) scan for due runs. */
  wake(runIds?: string[]): void {
    if (this.stopped) return;
    if (!runIds) {
      this.scanning.request();
      return;
    }
    for (const id of runIds) this.ready.add(id);
    this.startReady();
  }

  /** Receives the run's `$.respond()` (or its end without one); set before the run's row commits. */
  onResponse(runId: string, responder: RunResponder): void {
    this.responders.set(runId, responder);
  }

  forgetResponder(runId: string): void {
    this.responders.delete(runId);
  }

  private startReady(): void {
    for (const runId of this.ready) {
      if (this.stopped || this.running.size >= this.options.concurrency) return;
      this.ready.delete(runId);
      if (this.running.has(runId)) continue;
      this.running.add(runId);
      void this.execute(runId)
        .catch((error: unknown) => this.logger.error({ err: error, runId }, 'workflow run failed in the runner; it is taken up again later'))
        .finally(() => {
          this.running.delete(runId);
          for (const resolve of this.idleWaiters.splice(0)) resolve();
          this.startReady();
        });
    }
  }

  private async scan(): Promise<void> {
    try {
      const nowMs = this.options.clock.now();
      const due = await workflows.dueRuns(this.store.db, nowMs, 1000);
      for (const id of due) if (!this.running.has(id)) this.ready.add(id);
      this.startReady();
      const next = await workflows.nextDueMs(this.store.db);
      if (next !== undefined && next > nowMs) this.wakeAt(next);
    } catch (error) {
      if (!this.stopped) this.logger.error({ err: error }, 'workflow runner could not read the run queue');
    }
  }

  /** A delayed run is due before the next poll: wake for it on time. */
  private wakeAt(atMs: number): void {
    if (this.stopped || (this.dueTimer && this.dueTimer.at <= atMs)) return;
    this.dueTimer?.timer.cancel();
    const timer = this.options.clock.after(Math.max(0, atMs - this.options.clock.now()), () => {
      this.dueTimer = undefined;
      this.wake();
    });
    this.dueTimer = { at: atMs, timer };
  }

  private async runnableStep(componentId: string): Promise<RunnableStep | undefined> {
    const cached = this.components.get(componentId);
    if (cached) return cached;
    const row = await loadComponent(this.store.db, componentId);
    if (!row) return undefined;
    const step = { info: componentInfo(row), prepared: await this.runtime.prepare(row.code) };
    this.components.set(componentId, step);
    return step;
  }

  /** Takes the run and runs its unfinished steps in order, each committed before the next; stops at a delay. */
  private async execute(runId: string): Promise<void> {
    const { clock, leaseMs } = this.options;
    let run = await workflows.claimRun(this.store.db, runId, this.owner, clock.now(), clock.now() + leaseMs);
    if (!run) return;
    const workflow = await workflows.loadWorkflow(this.store.db, run.workflow_id);
    if (!workflow) return;
    const steps = JSON.parse(workflow.steps) as StoredStep[];
    const trigger = workflow.trigger ? (JSON.parse(workflow.trigger) as WorkflowTrigger) : undefined;
    const data = await this.stepDataOf(run);
    const account = await findUserByIdOrUsername(this.store.db, run.user_id);
    const renewal = every(clock, Math.max(100, Math.floor(leaseMs / 3)), () => {
      workflows.renewRunLease(this.store.db, runId, this.owner, clock.now() + leaseMs).catch((error: unknown) => {
        this.logger.warn({ err: error, runId }, 'could not renew a workflow run lease');
      });
    });
    let responded = false;
    try {
      for (let index = run.next_step; index < steps.length; index++) {
        const step = steps[index]!;
        const startedMs = clock.now();
        const result = await this.runStep(run, workflow, step, data, trigger, (response) => {
          responded = true;
          this.responders.get(runId)?.(response);
        });
        if (!result) {
          await workflows.releaseRun(this.store.db, runId, this.owner, clock.now());
          return;
        }
        const { outcome, dbWrites, cpuMs } = result;
        let commit: Awaited<ReturnType<typeof commitStep>>;
        try {
          commit = await this.transactions.run(async (trx) => {
            const done = await commitStep(
              trx,
              { run: run!, stepIndex: index, stepName: step.name, stepCount: steps.length, outcome, dbWrites, startedMs, owner: this.owner },
              { dialect: this.options.dialect, retention: this.options.retention, router: this.options.router, nowMs: clock.now() },
            );
            // A run counts once against the invocation quota, when its first step commits; every step's CPU counts.
            if (account) await billUsage(trx, account, index === 0 ? 1 : 0, cpuMs, clock.now());
            return done;
          });
        } catch (error) {
          if (error instanceof LostRunError) return;
          throw error;
        }
        if (commit.committed.events.length) this.options.router.afterCommit(commit.committed);
        if (commit.sends > 0) this.options.outbox.wake();
        if (commit.verdict === 'finished') {
          if (!responded) this.responders.get(runId)?.(undefined, outcome.error);
          this.responders.delete(runId);
          return;
        }
        if (commit.verdict === 'delayed') {
          const due = clock.now() + (outcome.step?.delayMs ?? 0);
          this.wakeAt(due);
          return;
        }
        data[step.name] = stepData(outcome.step?.returnValue, outcome.step?.exports ?? {});
        run = { ...run, next_step: index + 1, running_ms: run.running_ms + Math.round(outcome.durationMs) };
      }
    } finally {
      renewal.cancel();
    }
  }

  /** `steps` as the next step sees it: the trigger and every finished step's exports and return value. */
  private async stepDataOf(run: workflows.WorkflowRunRow): Promise<Record<string, unknown>> {
    const data: Record<string, unknown> = {
      trigger: { event: JSON.parse(run.event) as unknown, context: { id: run.id, ts: new Date(run.created_ms).toISOString(), workflow_id: run.workflow_id } },
    };
    for (const row of await workflows.runSteps(this.store.db, [run.id])) {
      data[row.name] = stepData(row.return_value === null ? undefined : JSON.parse(row.return_value), JSON.parse(row.exports) as Record<string, unknown>);
    }
    return data;
  }

  /**
   * Runs one step in the account's worker. Returns its outcome (a failure of the step's own making included), or
   * undefined when the runtime itself failed and the run should be taken up again later.
   */
  private async runStep(
    run: workflows.WorkflowRunRow,
    workflow: workflows.WorkflowRow,
    step: StoredStep,
    data: Record<string, unknown>,
    trigger: WorkflowTrigger | undefined,
    onRespond: (response: HttpResponse) => void,
  ): Promise<{ outcome: InvocationOutcome; dbWrites: Record<string, unknown>; cpuMs: number } | undefined> {
    const failed = (name: string, message: string, code: string) => ({
      outcome: { emits: [], logs: [], error: { name, message, stack: `${name}: ${message}`, code }, durationMs: 0 },
      dbWrites: {},
      cpuMs: 0,
    });
    const remainingMs = workflow.timeout_ms - run.running_ms;
    if (remainingMs <= 0) return failed('TimeoutError', `the run used its ${workflow.timeout_ms} ms of running time`, 'timeout');
    const runnable = await this.runnableStep(step.component_id);
    if (!runnable) return failed('ConfigurationError', `the component of step "${step.name}" no longer exists`, 'component_missing');
    const { info, prepared } = runnable;
    const input: StepInput = { steps: data, props: evaluateProps(runtimeProps(info.props, step.configured_props, this.secrets), { steps: data }) };
    const usesDb = info.props.some((p) => p.type === '$.service.db');
    const db = usesDb ? await workflows.readStepDb(this.store.db, workflow.id, step.name) : {};
    try {
      const result = await this.runtime.invoke(
        {
          accountId: workflow.user_id,
          sourceId: workflow.id,
          component: prepared,
          method: 'step',
          events: [input],
          props: {},
          auths: Object.fromEntries(info.props.filter((p) => p.type === 'app').map((p) => [p.name, {}])),
          db,
          customResponse: trigger?.type === 'http' && trigger.custom_response,
          timeoutMs: remainingMs,
        },
        { onRespond },
      );
      const outcome = result.outcomes[0]!;
      // A send this server cannot carry out fails its step now, rather than vanishing after the commit.
      for (const send of outcome.step?.sends ?? []) {
        const missing = this.options.outbox.unavailable(send.kind);
        if (missing) return { ...failed('ConfigurationError', `${missing}; nothing of this step was committed`, 'send_unavailable'), cpuMs: result.cpuMs };
      }
      return { outcome, dbWrites: result.dbWrites, cpuMs: result.cpuMs };
    } catch (error) {
      this.logger.error({ err: error, runId: run.id }, 'runtime failed while running a workflow step; the run is taken up again');
      return undefined;
    }
  }
}
