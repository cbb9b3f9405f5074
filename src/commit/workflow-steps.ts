// Commits finished workflow steps in the caller's transaction: their rows, their runs' next states, their db writes,
// the events they emitted or the `$errors` events of failures, and their `$.send.http/email/s3` queued in the outbox.
import type { Transaction } from 'kysely';
import type { DataStoreChange, InvocationOutcome } from '../runtime/types.js';
import type { Database } from '../store/schema.js';
import { advanceRun, insertStepRows, writeStepDb, type RunAdvance, type WorkflowRunRow, type WorkflowRunStepRow } from '../store/workflows.js';
import { insertSends, pendingSend, type OutboxKind, type SendRow } from '../store/sends.js';
import { writeDataStores } from '../store/data-stores.js';
import { newId } from '../model/ids.js';
import { madeSummary, type PendingEvent, storableText } from '../model/events.js';
import { deploymentIdOf, exitCalled, SSE_PREFIX } from '../model/workflows.js';
import type { AppendOptions } from './append-events.js';
import { sameDepthRuns, storeAndRoute } from './effects.js';
import type { CommittedEvents, EventRouter } from './routing.js';

/** Reported in every workflow error's `original_context`. */
export const PLATFORM_VERSION = '1.0.0';

/** One run's call of a step, as the runner got it back from the worker. */
export interface FinishedStep {
  run: WorkflowRunRow;
  outcome: InvocationOutcome;
  startedMs: number;
  /** The run owes its HTTP client a `$.respond()` (custom_response) and no step has given one yet. */
  awaitingResponse: boolean;
  /** No step of the workflow is left that the run has not run: it succeeds after this one. */
  last: boolean;
}

/** A batch of runs that ran the same step of one workflow in one worker call. */
export interface FinishedBatch {
  workflowId: string;
  userId: string;
  /** How many steps each run of the batch ran before this one: its step row's index (not its place in the list). */
  stepIndex: number;
  stepName: string;
  steps: FinishedStep[];
  /** The step's `$.service.db` writes of the batch's successful calls. */
  dbWrites: Record<string, unknown>;
  /** What the batch's successful calls did to the account's data stores. */
  dataStoreWrites?: DataStoreChange[] | undefined;
  /** The runner holding the runs' leases; null for the only runner, which holds none. */
  owner: string | null;
}

/** `$.send` kinds carried out by the outbox sender once the step has committed. */
const OUTBOX_KINDS: ReadonlySet<string> = new Set<OutboxKind>(['http', 'email', 's3']);

function isOutboxKind(kind: string): kind is OutboxKind {
  return OUTBOX_KINDS.has(kind);
}

/** What the step did to its run, for the runner's next move. */
export type StepVerdict = 'next' | 'delayed' | 'finished';

/** What a workflow error event tells of its run: a run's row, or the run a timer was refused over quota. */
export type ErroredRun = Pick<WorkflowRunRow, 'id' | 'workflow_id' | 'user_id' | 'trigger' | 'event' | 'created_ms'>;

/**
 * The spec's workflow error event: `{ original_event, original_context, error }`, plus the error's name and message.
 * `stepName` is the step that failed (`trigger` when the run was refused before any step). `afterStep`: thrown by code
 * the step left behind (a timer) after it ended, marked `original_context.trigger: "after_step"` as a source's is
 * `"after_run"`; the spec's `source_type` there already names what started the run.
 */
export function workflowErrorEvent(
  run: ErroredRun,
  stepName: string,
  error: NonNullable<InvocationOutcome['error']>,
  nowMs: number,
  afterStep = false,
): PendingEvent {
  const ts = new Date(nowMs).toISOString();
  return {
    stream: '$errors',
    name: '$errors',
    summary: madeSummary(`${error.name}: ${error.message}`),
    event: {
      original_event: JSON.parse(run.event) as unknown,
      original_context: {
        id: run.id,
        ts: new Date(run.created_ms).toISOString(),
        workflow_id: run.workflow_id,
        deployment_id: deploymentIdOf(run.workflow_id),
        source_type: run.trigger === 'http' ? 'HTTP' : run.trigger === 'timer' ? 'TIMER' : run.trigger === 'event' ? 'EVENT' : 'MANUAL',
        verified: false,
        owner_id: run.user_id,
        platform_version: PLATFORM_VERSION,
        ...(afterStep && { trigger: 'after_step' }),
      },
      error: { code: error.code ?? error.name, cellId: stepName, ts, stack: error.stack, name: error.name, message: error.message },
    },
  };
}

/** The run's state after a step: on to the next step, delayed, or finished (failed, exited or past the last step). */
function nextRunState(batch: FinishedBatch, step: FinishedStep, nowMs: number): { changes: RunAdvance; verdict: StepVerdict } {
  const { run, outcome } = step;
  const running_ms = run.running_ms + Math.round(outcome.durationMs);
  const finished = { due_ms: null, finished_ms: nowMs, releaseLease: true, running_ms, next_step: batch.stepIndex + 1 };
  if (outcome.error) {
    const error = JSON.stringify({ ...outcome.error, step: batch.stepName });
    return { changes: { ...finished, status: 'failed', exit_reason: null, error }, verdict: 'finished' };
  }
  const exit = outcome.step?.exit;
  if (exit || step.last) {
    return { changes: { ...finished, status: 'succeeded', exit_reason: exit ? storableText(exit.reason ?? '') : null, error: null }, verdict: 'finished' };
  }
  const delayMs = outcome.step?.delayMs;
  const moving = { next_step: batch.stepIndex + 1, running_ms, exit_reason: null, error: null, finished_ms: null };
  if (delayMs !== undefined && delayMs > 0) {
    return { changes: { ...moving, status: 'delayed', due_ms: nowMs + delayMs, releaseLease: true }, verdict: 'delayed' };
  }
  return { changes: { ...moving, status: 'running', due_ms: nowMs, releaseLease: false }, verdict: 'next' };
}

/** What committing a batch did to each run: its verdict, or `lost` when another runner had taken it over. */
export interface CommittedBatch {
  /** One per run of the batch's runs at one listener depth (see sameDepthRuns), in order; none without events. */
  committed: CommittedEvents[];
  verdicts: Array<StepVerdict | 'lost'>;
  /** Outbox rows written: wake the sender after the commit. */
  sends: number;
}

/** Events and outbox rows of one successful or failed call. */
function effectsOf(batch: FinishedBatch, step: FinishedStep, options: StepCommitOptions, events: PendingEvent[], outboxRows: SendRow[]): void {
  const { nowMs } = options;
  const { run, outcome } = step;
  for (const send of outcome.step?.sends ?? []) {
    const { kind } = send;
    if (isOutboxKind(kind)) {
      const fields = { run_id: run.id, workflow_id: run.workflow_id, user_id: run.user_id, step_index: batch.stepIndex };
      // Sealed: `auth` and headers carry what `$auth` and secret props gave the step, secrets at rest as those are.
      const payload = options.sealPayload(JSON.stringify(send.payload));
      outboxRows.push(pendingSend({ id: newId('ws'), ...fields, kind, payload, created_ms: nowMs }));
    } else if (kind === 'sse') {
      // Kept on a stream of their own, so that `GET /workflows/{id}/sse` can replay them after a Last-Event-ID.
      const { channel, payload } = send.payload as { channel: string; payload: unknown };
      events.push({ stream: '$sse', name: `${SSE_PREFIX}${channel}`, event: payload ?? null });
    } else if (kind === 'emit') {
      const payload = send.payload as { raw_event?: unknown; name?: unknown; summary?: unknown };
      events.push({
        stream: 'emit',
        name: typeof payload.name === 'string' ? payload.name : '',
        event: { raw_event: payload.raw_event ?? null },
        summary: typeof payload.summary === 'string' ? payload.summary : undefined,
      });
    }
  }
  if (outcome.error) events.push(workflowErrorEvent(run, batch.stepName, outcome.error, nowMs));
}

/** How a batch is committed: as its events are appended and routed, and how an outbox row's payload is sealed. */
export type StepCommitOptions = AppendOptions & { router: EventRouter; sealPayload: (json: string) => string };

/**
 * Stores a batch of finished steps in the caller's transaction: each run's step row and next state, the step's
 * `$.service.db` writes, the `$.send.emit` events (the workflow's `{ raw_event }` events, routed to its subscribers
 * like a source's) and `$errors` events of failures, `$.send.sse` payloads, and outbox rows for `$.send.http`,
 * `email` and `s3` (a failed step has no sends). A run another runner took over is left alone.
 */
export async function commitSteps(trx: Transaction<Database>, batch: FinishedBatch, options: StepCommitOptions): Promise<CommittedBatch> {
  const events: PendingEvent[] = [];
  /** The listener depth of the run each event comes from. */
  const eventDepths: number[] = [];
  const outboxRows: SendRow[] = [];
  const stepRows: WorkflowRunStepRow[] = [];
  const verdicts: CommittedBatch['verdicts'] = [];
  for (const step of batch.steps) {
    const { run, outcome } = step;
    const { changes, verdict } = nextRunState(batch, step, options.nowMs);
    if (!(await advanceRun(trx, run.id, batch.stepIndex, batch.owner, changes))) {
      verdicts.push('lost');
      continue;
    }
    verdicts.push(verdict);
    if (verdict === 'finished' && !outcome.error && step.awaitingResponse) {
      const exit = outcome.step?.exit;
      const message = exit
        ? `the run ended without any step calling $.respond(): ${exitCalled(batch.stepName, exit)}; the HTTP client got 504 no_response`
        : 'the run ended without any step calling $.respond(); the HTTP client got 504 no_response';
      events.push(
        workflowErrorEvent(run, batch.stepName, { name: 'NoResponseError', message, stack: `NoResponseError: ${message}`, code: 'no_response' }, options.nowMs),
      );
    }
    stepRows.push({
      run_id: run.id,
      step_index: batch.stepIndex,
      name: batch.stepName,
      status: outcome.error ? 'failed' : 'succeeded',
      started_ms: step.startedMs,
      duration_ms: outcome.durationMs,
      return_value: outcome.step?.returnValue === undefined ? null : JSON.stringify(outcome.step.returnValue),
      exports: JSON.stringify(outcome.step?.exports ?? {}),
      logs: JSON.stringify(outcome.logs),
      error: outcome.error ? JSON.stringify(outcome.error) : null,
    });
    effectsOf(batch, step, options, events, outboxRows);
    while (eventDepths.length < events.length) eventDepths.push(run.depth);
  }
  await insertStepRows(trx, stepRows);
  if (stepRows.length) await writeStepDb(trx, batch.workflowId, batch.stepName, batch.dbWrites);
  if (stepRows.length) await writeDataStores(trx, batch.userId, batch.dataStoreWrites, options.nowMs);
  await insertSends(trx, outboxRows);
  const committed: CommittedEvents[] = [];
  for (const { depth, from, to } of sameDepthRuns(eventDepths)) {
    committed.push(await storeAndRoute(trx, { id: batch.workflowId, userId: batch.userId, depth }, events.slice(from, to), options));
  }
  return { committed, verdicts, sends: outboxRows.length };
}
