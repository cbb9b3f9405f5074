// Runs one step of one workflow for a batch of its runs in a single worker call, and commits what each run's step did.
import type { Logger } from 'pino';
import { LRUCache } from 'lru-cache';
import type { Clock } from '../lib/clock.js';
import { countedUpTo } from '../lib/cache-bounds.js';
import { bindings, type SecretBox } from '../lib/secrets.js';
import type { DialectName, Store } from '../store/database.js';
import type { TransactionGroup } from '../store/group-commit.js';
import * as workflows from '../store/workflows.js';
import { componentInfo, loadComponent } from '../store/components.js';
import { findUserByIdOrUsername } from '../store/users.js';
import type { ComponentRuntime } from '../runtime/index.js';
import { RuntimeClosedError } from '../runtime/errors.js';
import type { ComponentInfo, DataStoreChange, HttpResponse, InvocationOutcome, PreparedComponent, StepInput, StepSend } from '../runtime/types.js';
import { dataStoreNames, withAdditionalProps } from '../model/props.js';
import { readDataStores } from '../store/data-stores.js';
import { evaluateProps } from '../model/templates.js';
import { type StoredStep, storedTrigger, type WorkflowTrigger } from '../model/workflows.js';
import { billUsage, ComputeCarry } from '../commit/usage.js';
import { commitSteps, type CommittedBatch, type FinishedStep } from '../commit/workflow-steps.js';
import { failedForGoodLog, writeOrFailRefused } from './refused-results.js';
import { CommitAttempts } from './commit-attempts.js';
import { type HeldRun, nextStepPosition } from './workflow-run-data.js';
import type { EventRouter } from '../commit/routing.js';
import { CredentialError, credentialFailure, type CredentialSource, openedProps, resolveAuths } from './invocation-base.js';

export type { HeldRun };

/** A batch the runtime could not take is due again after this long. */
export const HAND_BACK_DELAY_MS = 1000;

/** Where committed sends go: the outbox sender (delivery/sends), reached through this so that engine/ stays below it. */
export interface StepOutbox {
  /** Why this server cannot carry out `$.send.<kind>()` (a setting it needs is missing), or undefined when it can. */
  unavailable(kind: StepSend['kind']): string | undefined;
  /** Sends were committed: carry them out now. */
  wake(): void;
}

export interface StepBatchOptions {
  dialect: DialectName;
  retention: number;
  router: EventRouter;
  clock: Clock;
  outbox: StepOutbox;
  /** `$auth` of the steps' app props, from the connected accounts they name; read for every batch. */
  credentials: CredentialSource;
  /** The lease owner of the runs; null for the only runner, which holds no leases. */
  owner: string | null;
}

/** What became of a batch: each run's verdict in batch order, or `handedBack` when the runtime itself failed. */
export type BatchResult = { handedBack: true } | { handedBack: false; verdicts: CommittedBatch['verdicts']; outcomes: InvocationOutcome[] };

/** A step's component ready to run: what the runtime learned of it and its prepared bundle. */
interface RunnableStep {
  info: ComponentInfo;
  prepared: PreparedComponent;
}

function failedOutcome(name: string, message: string, code: string): InvocationOutcome {
  return { emits: [], logs: [], error: { name, message, stack: `${name}: ${message}`, code }, durationMs: 0 };
}

/** The `$.send` kinds the outbox cannot carry out, with why, for the step's worker to fail a step that uses one. */
function unavailableSendsOf(outbox: StepBatchOptions['outbox']): { unavailableSends?: Record<string, string> } {
  const reasons: Record<string, string> = {};
  for (const kind of ['http', 'email', 's3', 'emit', 'sse'] as const) {
    const reason = outbox.unavailable(kind);
    if (reason !== undefined) reasons[kind] = reason;
  }
  return Object.keys(reasons).length ? { unavailableSends: reasons } : {};
}

/** The outcome of a run that has no running time left for its next step. */
function usedItsTime(timeoutMs: number): InvocationOutcome {
  return failedOutcome('TimeoutError', `the run used its ${timeoutMs} ms of running time`, 'timeout');
}

export class StepBatchRunner {
  // Component rows never change (an edit saves a new one): entries need no eviction.
  private readonly components = new LRUCache<string, RunnableStep>(countedUpTo(10_000));
  private readonly commitAttempts = new CommitAttempts();
  private readonly compute = new ComputeCarry();
  /** The server's settings decide it, once: every step call carries it. */
  private readonly unavailableSends: { unavailableSends?: Record<string, string> };

  constructor(
    private readonly store: Store,
    private readonly runtime: ComponentRuntime,
    private readonly secrets: SecretBox,
    private readonly transactions: TransactionGroup,
    private readonly options: StepBatchOptions,
    private readonly logger: Logger,
  ) {
    this.unavailableSends = unavailableSendsOf(options.outbox);
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

  /**
   * Runs the step at `position` of `workflow` for every run of the batch in one worker call (one StepInput each, props
   * evaluated per run) and commits the results in one transaction, as each run's step number `stepIndex` (the steps it
   * ran before: its row's index). `onRespond` gets a run's `$.respond()` at once.
   */
  async run(
    workflow: workflows.WorkflowRow,
    stepIndex: number,
    position: number,
    batch: HeldRun[],
    onRespond: (runId: string, response: HttpResponse) => void,
    /** Whether a run's HTTP client has had its `$.respond()`, in this batch or an earlier one. */
    answered: (runId: string) => boolean,
  ): Promise<BatchResult> {
    const { clock } = this.options;
    // Switched off: its runs wait, queued, until it is on again (no step of them runs meanwhile).
    if (workflow.active !== 1) return this.waitForSwitchOn(workflow.id, batch, 'before');
    const steps = JSON.parse(workflow.steps) as StoredStep[];
    const step = steps[position]!;
    const trigger = storedTrigger(workflow) ?? undefined;
    // Shown `running` while its step runs, whatever node takes it (in a cluster the claim marked it already).
    const marking = batch.filter((held) => held.run.status !== 'running');
    if (marking.length) {
      await workflows.markRunning(
        this.store.db,
        marking.map((held) => held.run.id),
        this.options.owner,
      );
      for (const held of marking) held.run = { ...held.run, status: 'running' };
    }
    const startedMs = clock.now();
    // The worker warns of a second `$.respond()` in one step only: it cannot know that an earlier step answered.
    const answeredBefore = batch.map((held) => answered(held.run.id));
    const invoked = await this.invoke(workflow, step, batch, trigger, onRespond);
    if (!invoked) {
      await workflows.releaseRuns(
        this.store.db,
        batch.map((held) => held.run.id),
        this.options.owner,
        clock.now() + HAND_BACK_DELAY_MS,
      );
      return { handedBack: true };
    }
    const { dbWrites, cpuMs, dataStoreWrites } = invoked;
    invoked.outcomes.forEach((outcome, i) => {
      if (!answeredBefore[i] || !outcome.response) return;
      const msg = `$.respond() was called in step "${step.name}", but an earlier step had answered; only the first response was sent`;
      outcome.logs = [...outcome.logs, { k: 'warn', ts: clock.now(), msg }];
    });
    const account = await findUserByIdOrUsername(this.store.db, workflow.user_id);
    // Taken once, outside the transaction: a commit tried again must not carry the same time twice.
    const computeMs = account ? this.compute.take(account.id, cpuMs) : 0;
    const custom = trigger?.type === 'http' && trigger.custom_response;
    const { router, dialect, retention, owner } = this.options;
    const write = (committing: InvocationOutcome[], keepChanges: boolean) =>
      this.transactions.run(async (trx) => {
        // First, as a delete locks the workflow's row before its runs' rows.
        await workflows.holdWorkflowOn(trx, dialect, workflow.id);
        const nowMs = clock.now();
        const finished: FinishedStep[] = batch.map((held, i) => ({
          run: held.run,
          outcome: committing[i]!,
          startedMs,
          awaitingResponse: custom && held.run.trigger === 'http' && !answered(held.run.id),
          last: nextStepPosition(steps, { ...held.data, [step.name]: true }) === -1,
        }));
        const result = await commitSteps(
          trx,
          {
            workflowId: workflow.id,
            userId: workflow.user_id,
            stepIndex,
            stepName: step.name,
            steps: finished,
            dbWrites: keepChanges ? dbWrites : {},
            dataStoreWrites: keepChanges ? dataStoreWrites : undefined,
            owner,
          },
          { dialect, retention, router, nowMs, sealPayload: (json) => this.secrets.encrypt(json, bindings.send(workflow.user_id, workflow.id)) },
        );
        // A run counts once against the invocation quota, when its first step commits; every step's CPU counts.
        const started = stepIndex === 0 ? result.verdicts.filter((v) => v !== 'lost').length : 0;
        if (account) await billUsage(trx, account, started, computeMs, nowMs);
        return result;
      });
    const runIds = batch.map((held) => held.run.id);
    let written: Awaited<ReturnType<typeof writeOrFailRefused<CommittedBatch>>>;
    try {
      written = await writeOrFailRefused(
        invoked.outcomes,
        write,
        (error, why) => this.logger.error({ err: error, workflowId: workflow.id, runIds }, failedForGoodLog("the step's results", why)),
        (error) => this.commitAttempts.failedForGood(runIds, error),
      );
    } catch (error) {
      if (!(error instanceof workflows.WorkflowSwitchedOffError)) throw error;
      return this.waitForSwitchOn(workflow.id, batch, 'while');
    }
    this.commitAttempts.settled(runIds);
    const committed = written.result;
    const outcomes = written.outcomes;
    for (const events of committed.committed) if (events.events.length) router.afterCommit(events);
    if (committed.sends > 0) this.options.outbox.wake();
    return { handedBack: false, verdicts: committed.verdicts, outcomes };
  }

  /**
   * The workflow is switched off: the batch's runs go back to the queue uncommitted (a step that ran is run again,
   * from its start), where they wait until the workflow is on again.
   */
  private async waitForSwitchOn(workflowId: string, batch: HeldRun[], when: 'before' | 'while'): Promise<BatchResult> {
    const runIds = batch.map((held) => held.run.id);
    this.commitAttempts.settled(runIds);
    await workflows.releaseRuns(this.store.db, runIds, this.options.owner, this.options.clock.now());
    const what = when === 'before' ? 'its queued runs wait' : 'the step that ran is not committed and its runs wait';
    this.logger.info({ workflowId, runIds }, `workflow switched off: ${what}, queued, until it is switched on again`);
    return { handedBack: true };
  }

  /**
   * The worker call. Returns each run's outcome (failures of the step's own making included), or undefined when the
   * runtime itself failed and the runs should be taken up again later.
   */
  private async invoke(
    workflow: workflows.WorkflowRow,
    step: StoredStep,
    batch: HeldRun[],
    trigger: WorkflowTrigger | undefined,
    onRespond: (runId: string, response: HttpResponse) => void,
  ): Promise<{ outcomes: InvocationOutcome[]; dbWrites: Record<string, unknown>; cpuMs: number; dataStoreWrites?: DataStoreChange[] } | undefined> {
    // A run with no running time left fails alone: its batchmates still run, each with the time it has.
    const hasTime = (held: HeldRun) => workflow.timeout_ms - held.run.running_ms > 0;
    const left = batch.filter(hasTime);
    if (left.length > 0 && left.length < batch.length) {
      const invoked = await this.invoke(workflow, step, left, trigger, onRespond);
      if (!invoked) return undefined;
      let next = 0;
      return { ...invoked, outcomes: batch.map((held) => (hasTime(held) ? invoked.outcomes[next++]! : usedItsTime(workflow.timeout_ms))) };
    }
    const runnable = await this.runnableStep(step.component_id);
    if (!runnable) {
      const missing = failedOutcome('ConfigurationError', `the component of step "${step.name}" no longer exists`, 'component_missing');
      return { outcomes: batch.map(() => missing), dbWrites: {}, cpuMs: 0 };
    }
    const { prepared } = runnable;
    // The step's own props: the component's, with what its additionalProps() added for this step at deploy.
    const info = { ...runnable.info, props: withAdditionalProps(runnable.info.props, step.additional_props) };
    let stored: Record<string, unknown>;
    try {
      stored = openedProps(info.props, step.configured_props, this.secrets, workflow.user_id);
    } catch (error) {
      if (error instanceof CredentialError) return { outcomes: batch.map(() => credentialFailure(error)), dbWrites: {}, cpuMs: 0 };
      throw error;
    }
    const inputs: StepInput[] = batch.map((held) => ({ steps: held.data, props: evaluateProps(stored, { steps: held.data }) }));
    // The batch shares one call, so it shares the shortest time any of its runs has left; a run the call's timeout cut
    // short is run again alone with its own (eventTimeoutsMs).
    const eventTimeoutsMs = batch.map((held) => workflow.timeout_ms - held.run.running_ms);
    const remainingMs = Math.min(...eventTimeoutsMs);
    if (remainingMs <= 0) return { outcomes: batch.map(() => usedItsTime(workflow.timeout_ms)), dbWrites: {}, cpuMs: 0 };
    const usesDb = info.props.some((p) => p.type === '$.service.db');
    const db = usesDb ? await workflows.readStepDb(this.store.db, workflow.id, step.name) : {};
    // The account's data stores the step's data_store props name (per run: a name may come from a template).
    const storeNames = [...new Set(inputs.flatMap((input) => dataStoreNames(info.props, input.props)))];
    const dataStores = storeNames.length ? await readDataStores(this.store.db, workflow.user_id, storeNames, this.options.clock.now()) : undefined;
    try {
      // Per batch, not cached: a rotated credential or a refreshed token reaches the next batch by itself.
      const { auths } = await resolveAuths(this.options.credentials, workflow.user_id, info.props, step.configured_props);
      const result = await this.runtime.invoke(
        {
          accountId: workflow.user_id,
          sourceId: workflow.id,
          component: prepared,
          method: 'step',
          events: inputs,
          logContext: { step: step.name, runIds: batch.map((held) => held.run.id) },
          props: {},
          auths,
          db,
          ...(dataStores && { dataStores }),
          customResponse: trigger?.type === 'http' && trigger.custom_response,
          ...this.unavailableSends,
          timeoutMs: remainingMs,
          eventTimeoutsMs,
        },
        { onRespond: (response, index = 0) => onRespond(batch[index]!.run.id, response) },
      );
      // A send this server cannot carry out fails its step now, rather than vanishing after the commit.
      const outcomes = result.outcomes.map((outcome) => {
        const missing = (outcome.step?.sends ?? []).map((send) => this.options.outbox.unavailable(send.kind)).find((reason) => reason !== undefined);
        return missing ? failedOutcome('ConfigurationError', `${missing}; nothing of this step was committed`, 'send_unavailable') : outcome;
      });
      return { outcomes, dbWrites: result.dbWrites, cpuMs: result.cpuMs, dataStoreWrites: result.dataStoreWrites };
    } catch (error) {
      // The step cannot have its credentials (a failed OAuth refresh, a deleted account): its runs fail with the reason.
      if (error instanceof CredentialError) return { outcomes: batch.map(() => credentialFailure(error)), dbWrites: {}, cpuMs: 0 };
      const runIds = batch.map((b) => b.run.id);
      // A runtime closed under the step is a stop past --shutdown-timeout, which hands running steps back by design.
      if (error instanceof RuntimeClosedError)
        this.logger.info({ workflowId: workflow.id, runIds }, 'the server is stopping: workflow runs handed back to the queue');
      else this.logger.error({ err: error, workflowId: workflow.id, runIds }, 'runtime failed while running a workflow step; its runs are taken up again');
      return undefined;
    }
  }
}
