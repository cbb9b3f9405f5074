// Commits one finished workflow step in the caller's transaction: its row, the run's next state, its db writes, the
// events it emitted or the `$errors` event of its failure, and its `$.send.http/email/s3` queued in the outbox.
import type { Transaction } from 'kysely';
import type { InvocationOutcome } from '../runtime/types.js';
import type { Database } from '../store/schema.js';
import { finishStep, writeStepDb, type WorkflowRunRow, type WorkflowRunStepRow } from '../store/workflows.js';
import { insertSends, pendingSend, type OutboxKind, type SendRow } from '../store/sends.js';
import { newId } from '../model/ids.js';
import type { PendingEvent } from '../model/events.js';
import { SSE_PREFIX } from '../model/workflows.js';
import type { AppendOptions } from './append-events.js';
import { storeAndRoute } from './effects.js';
import type { CommittedEvents, EventRouter } from './routing.js';

/** Reported in every workflow error's `original_context`. */
export const PLATFORM_VERSION = '1.0.0';

export interface FinishedStep {
  run: WorkflowRunRow;
  stepIndex: number;
  stepName: string;
  /** Steps the workflow has: the run succeeds after the last one. */
  stepCount: number;
  outcome: InvocationOutcome;
  dbWrites: Record<string, unknown>;
  startedMs: number;
  /** The runner holding the run's lease. */
  owner: string;
}

/** `$.send` kinds carried out by the outbox sender once the step has committed. */
const OUTBOX_KINDS: ReadonlySet<string> = new Set<OutboxKind>(['http', 'email', 's3']);

function isOutboxKind(kind: string): kind is OutboxKind {
  return OUTBOX_KINDS.has(kind);
}

/** What the step did to its run, for the runner's next move. */
export type StepVerdict = 'next' | 'delayed' | 'finished';

/** Thrown when another runner took the run over (this one was paused past its lease): nothing is committed. */
export class LostRunError extends Error {
  override name = 'LostRunError';
}

/** The spec's workflow error event: `{ original_event, original_context, error }`, plus the error's name and message. */
export function workflowErrorEvent(run: WorkflowRunRow, stepName: string, error: NonNullable<InvocationOutcome['error']>, nowMs: number): PendingEvent {
  const ts = new Date(nowMs).toISOString();
  return {
    stream: '$errors',
    name: '$errors',
    summary: `${error.name}: ${error.message}`.slice(0, 200),
    event: {
      original_event: JSON.parse(run.event) as unknown,
      original_context: {
        id: run.id,
        ts: new Date(run.created_ms).toISOString(),
        workflow_id: run.workflow_id,
        deployment_id: run.workflow_id,
        source_type: run.trigger === 'http' ? 'HTTP' : run.trigger === 'timer' ? 'TIMER' : run.trigger === 'event' ? 'EVENT' : 'MANUAL',
        verified: false,
        owner_id: run.user_id,
        platform_version: PLATFORM_VERSION,
      },
      error: { code: error.code ?? error.name, cellId: stepName, ts, stack: error.stack, name: error.name, message: error.message },
    },
  };
}

/** The run's state after a step: on to the next step, delayed, or finished (failed, exited or past the last step). */
function nextRunState(step: FinishedStep, nowMs: number): { changes: Parameters<typeof finishStep>[3]; verdict: StepVerdict } {
  const { run, outcome } = step;
  const running_ms = run.running_ms + Math.round(outcome.durationMs);
  const finished = { due_ms: null, finished_ms: nowMs, releaseLease: true, running_ms, next_step: step.stepIndex + 1 };
  if (outcome.error) {
    const error = JSON.stringify({ ...outcome.error, step: step.stepName });
    return { changes: { ...finished, status: 'failed', exit_reason: null, error }, verdict: 'finished' };
  }
  const exit = outcome.step?.exit;
  if (exit || step.stepIndex + 1 >= step.stepCount) {
    return { changes: { ...finished, status: 'succeeded', exit_reason: exit ? (exit.reason ?? '') : null, error: null }, verdict: 'finished' };
  }
  const delayMs = outcome.step?.delayMs;
  const moving = { next_step: step.stepIndex + 1, running_ms, exit_reason: null, error: null, finished_ms: null };
  if (delayMs !== undefined && delayMs > 0) {
    return { changes: { ...moving, status: 'delayed', due_ms: nowMs + delayMs, releaseLease: true }, verdict: 'delayed' };
  }
  return { changes: { ...moving, status: 'running', due_ms: nowMs, releaseLease: false }, verdict: 'next' };
}

/**
 * Stores the step and what it did. `$.send.emit` events become the workflow's events (`{ raw_event }`), routed to
 * its subscribers like a source's; a failure becomes its `$errors` event. `$.send.http`, `email` and `s3` become
 * outbox rows (a failed step has none): `sends` counts them, so that the caller wakes the sender after the commit.
 * Throws LostRunError if the run is no longer this runner's.
 */
export async function commitStep(
  trx: Transaction<Database>,
  step: FinishedStep,
  options: AppendOptions & { router: EventRouter },
): Promise<{ committed: CommittedEvents; verdict: StepVerdict; sends: number }> {
  const { run, outcome } = step;
  const { changes, verdict } = nextRunState(step, options.nowMs);
  const row: WorkflowRunStepRow = {
    run_id: run.id,
    step_index: step.stepIndex,
    name: step.stepName,
    status: outcome.error ? 'failed' : 'succeeded',
    started_ms: step.startedMs,
    duration_ms: outcome.durationMs,
    return_value: outcome.step?.returnValue === undefined ? null : JSON.stringify(outcome.step.returnValue),
    exports: JSON.stringify(outcome.step?.exports ?? {}),
    logs: JSON.stringify(outcome.logs),
    error: outcome.error ? JSON.stringify(outcome.error) : null,
  };
  if (!(await finishStep(trx, row, step.owner, changes))) throw new LostRunError(`run ${run.id} was taken over by another runner`);
  if (!outcome.error) await writeStepDb(trx, run.workflow_id, step.stepName, step.dbWrites);
  const events: PendingEvent[] = [];
  const outboxRows: SendRow[] = [];
  for (const send of outcome.step?.sends ?? []) {
    const { kind } = send;
    if (isOutboxKind(kind)) {
      if (outcome.error) continue;
      const fields = { run_id: run.id, workflow_id: run.workflow_id, user_id: run.user_id, step_index: step.stepIndex };
      outboxRows.push(pendingSend({ id: newId('ws'), ...fields, kind, payload: JSON.stringify(send.payload), created_ms: options.nowMs }));
      continue;
    }
    if (send.kind === 'sse') {
      // Kept on a stream of their own, so that `GET /workflows/{id}/sse` can replay them after a Last-Event-ID.
      const { channel, payload } = send.payload as { channel: string; payload: unknown };
      events.push({ stream: '$sse', name: `${SSE_PREFIX}${channel}`, event: payload ?? null });
      continue;
    }
    if (send.kind !== 'emit') continue;
    const payload = send.payload as { raw_event?: unknown; name?: unknown; summary?: unknown };
    events.push({
      stream: 'emit',
      name: typeof payload.name === 'string' ? payload.name : '',
      event: { raw_event: payload.raw_event ?? null },
      summary: typeof payload.summary === 'string' ? payload.summary : undefined,
    });
  }
  if (outcome.error) events.push(workflowErrorEvent(run, step.stepName, outcome.error, options.nowMs));
  await insertSends(trx, outboxRows);
  const committed = await storeAndRoute(trx, { id: run.workflow_id, userId: run.user_id, depth: run.depth }, events, options);
  return { committed, verdict, sends: outboxRows.length };
}
