// New workflow runs as queue rows, inserted in the caller's transaction (a trigger is a row before it is acknowledged).
import type { Transaction, Kysely } from 'kysely';
import type { DialectName } from '../store/database.js';
import type { Database, WorkflowTriggerKind } from '../store/schema.js';
import { insertRuns, type WorkflowRunRow } from '../store/workflows.js';
import { newId } from '../model/ids.js';

export interface NewRun {
  workflowId: string;
  userId: string;
  trigger: WorkflowTriggerKind;
  event: unknown;
  /** Listener hops that led to this run. */
  depth?: number;
  replayOf?: string;
}

export function runRow(run: NewRun, nowMs: number): WorkflowRunRow {
  return {
    id: newId('wr'),
    workflow_id: run.workflowId,
    user_id: run.userId,
    status: 'queued',
    trigger: run.trigger,
    event: JSON.stringify(run.event ?? null),
    depth: run.depth ?? 0,
    next_step: 0,
    due_ms: nowMs,
    lease_owner: null,
    lease_until_ms: null,
    attempts: 0,
    running_ms: 0,
    exit_reason: null,
    error: null,
    replay_of: run.replayOf ?? null,
    created_ms: nowMs,
    finished_ms: null,
  };
}

/**
 * Queues runs; whoever runs them must be woken once the transaction commits. Returns the rows queued: none for a
 * workflow deleted meanwhile.
 */
export async function queueRuns(db: Kysely<Database> | Transaction<Database>, dialect: DialectName, runs: NewRun[], nowMs: number): Promise<WorkflowRunRow[]> {
  return insertRuns(
    db,
    dialect,
    runs.map((run) => runRow(run, nowMs)),
  );
}
