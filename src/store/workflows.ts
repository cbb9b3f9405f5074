// Queries on workflows, their runs and finished steps, and each step's `$.service.db`.
import { type ExpressionBuilder, type Kysely, type Selectable, sql, type Transaction } from 'kysely';
import type { Page, PageRequest } from '../model/pagination.js';
import type { DialectName } from './database.js';
import type { Database, WorkflowRunStatus, WorkflowRunStepsTable, WorkflowRunsTable, WorkflowsTable } from './schema.js';
import { paginateById } from './paginate.js';
import { splitDbWrites } from './db-writes.js';

export type WorkflowRow = Selectable<WorkflowsTable>;
export type WorkflowRunRow = Selectable<WorkflowRunsTable>;
export type WorkflowRunStepRow = Selectable<WorkflowRunStepsTable>;
type Db = Kysely<Database> | Transaction<Database>;

/** Runs `owner` holds: leased to it, or, for the only runner (null), leased to no one. */
function heldBy(owner: string | null) {
  return (eb: ExpressionBuilder<Database, 'workflow_runs'>) => (owner === null ? eb('lease_owner', 'is', null) : eb('lease_owner', '=', owner));
}

export async function insertWorkflow(db: Db, row: WorkflowRow): Promise<void> {
  await db.insertInto('workflows').values(row).execute();
}

export async function updateWorkflow(db: Db, id: string, changes: Partial<Omit<WorkflowRow, 'id' | 'user_id'>>): Promise<void> {
  await db.updateTable('workflows').set(changes).where('id', '=', id).execute();
}

/**
 * The account's workflow, read in a transaction that changes or deletes it: its row stays locked until the transaction
 * ends on PostgreSQL, so that concurrent changes take turns (SQLite's transactions take turns anyway). The lock is
 * FOR NO KEY UPDATE, as an UPDATE takes: the foreign key checks of runs being queued (a timer tick holding the
 * workflow's timer row, which this transaction may replace) are not kept waiting, which would deadlock.
 */
export function lockWorkflow(trx: Transaction<Database>, dialect: DialectName, userId: string, id: string): Promise<WorkflowRow | undefined> {
  const query = trx.selectFrom('workflows').selectAll().where('id', '=', id).where('user_id', '=', userId);
  return (dialect === 'postgres' ? query.forNoKeyUpdate() : query).executeTakeFirst();
}

export function findWorkflow(db: Db, userId: string, id: string): Promise<WorkflowRow | undefined> {
  return db.selectFrom('workflows').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
}

/** A workflow by id regardless of owner, for the engine (which got the id from an owned run). */
export function loadWorkflow(db: Db, id: string): Promise<WorkflowRow | undefined> {
  return db.selectFrom('workflows').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findWorkflowByEndpoint(db: Db, endpointId: string): Promise<WorkflowRow | undefined> {
  return db.selectFrom('workflows').selectAll().where('endpoint_id', '=', endpointId).executeTakeFirst();
}

export function listWorkflows(db: Kysely<Database>, userId: string, page: PageRequest): Promise<Page<WorkflowRow>> {
  const base = db.selectFrom('workflows').selectAll().where('user_id', '=', userId);
  const count = async () =>
    Number(
      (
        await db
          .selectFrom('workflows')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('user_id', '=', userId)
          .executeTakeFirstOrThrow()
      ).n,
    );
  return paginateById(base, count, 'p', page);
}

/** Active workflows of the account among `ids`: the listeners a subscription may start runs of. */
export async function activeWorkflowIds(db: Db, userId: string, ids: string[]): Promise<string[]> {
  if (!ids.length) return [];
  const rows = await db.selectFrom('workflows').select('id').where('user_id', '=', userId).where('id', 'in', ids).where('active', '=', 1).execute();
  return rows.map((r) => r.id);
}

/** Removes a workflow with its runs, events, step db and subscriptions. */
export async function deleteWorkflowCascade(db: Db, id: string): Promise<void> {
  await db
    .deleteFrom('workflow_run_steps')
    .where('run_id', 'in', (eb) => eb.selectFrom('workflow_runs').select('id').where('workflow_id', '=', id))
    .execute();
  await db.deleteFrom('workflow_runs').where('workflow_id', '=', id).execute();
  await db.deleteFrom('workflow_step_db').where('workflow_id', '=', id).execute();
  await db.deleteFrom('events').where('emitter_id', '=', id).execute();
  await db.deleteFrom('emitter_state').where('emitter_id', '=', id).execute();
  await db
    .deleteFrom('subscriptions')
    .where((eb) => eb.or([eb('emitter_id', '=', id), eb('listener_id', '=', id)]))
    .execute();
  await db.deleteFrom('auto_subscriptions').where('listener_id', '=', id).execute();
  await db.deleteFrom('workflows').where('id', '=', id).execute();
}

/**
 * Inserts the runs whose workflow still exists (an endpoint's run: and is switched on) and returns them: a run of a
 * workflow deleted meanwhile is left out, where its foreign key would fail the statement and every run (and event)
 * committed with it. On PostgreSQL the workflows' rows are held FOR KEY SHARE, as the foreign key check holds them: a delete either waits for this
 * transaction (and takes its runs along) or went first.
 */
export async function insertRuns(db: Db, dialect: DialectName, rows: WorkflowRunRow[]): Promise<WorkflowRunRow[]> {
  if (!rows.length) return [];
  const query = db
    .selectFrom('workflows')
    .select(['id', 'active'])
    .where('id', 'in', [...new Set(rows.map((r) => r.workflow_id))]);
  const found = await (dialect === 'postgres' ? query.forKeyShare() : query).execute();
  const existing = new Set(found.map((r) => r.id));
  // An endpoint's request is refused by a switched-off workflow: a node whose cache missed the switch-off made
  // through another node finds it here (the other kinds of run wait while it is off, and are not queued through here
  // while it is off anyway).
  const active = new Set(found.filter((r) => r.active === 1).map((r) => r.id));
  const kept = rows.filter((r) => (r.trigger === 'http' ? active : existing).has(r.workflow_id));
  if (kept.length) await db.insertInto('workflow_runs').values(kept).execute();
  return kept;
}

export function findRun(db: Db, workflowId: string, runId: string): Promise<WorkflowRunRow | undefined> {
  return db.selectFrom('workflow_runs').selectAll().where('id', '=', runId).where('workflow_id', '=', workflowId).executeTakeFirst();
}

/**
 * A run of the workflow, read in a transaction that writes for it after its step ended: on PostgreSQL its row stays
 * share-locked until the transaction ends, so a delete (which takes the run along) either waits for that transaction
 * and deletes what it wrote, or went first and leaves no run to find.
 */
export function holdRun(db: Db, dialect: DialectName, workflowId: string, runId: string): Promise<WorkflowRunRow | undefined> {
  const query = db.selectFrom('workflow_runs').selectAll().where('id', '=', runId).where('workflow_id', '=', workflowId);
  return (dialect === 'postgres' ? query.forShare() : query).executeTakeFirst();
}

/** A workflow's runs, newest first; only those with `status` when given. */
export function listRuns(db: Kysely<Database>, workflowId: string, page: PageRequest, status?: WorkflowRunStatus): Promise<Page<WorkflowRunRow>> {
  const base = db
    .selectFrom('workflow_runs')
    .selectAll()
    .where('workflow_id', '=', workflowId)
    .$if(status !== undefined, (q) => q.where('status', '=', status!));
  const count = async () =>
    Number(
      (
        await db
          .selectFrom('workflow_runs')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('workflow_id', '=', workflowId)
          .$if(status !== undefined, (q) => q.where('status', '=', status!))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return paginateById(base, count, 'wr', page);
}

/** Characters of the JSON each run's steps hold (return values, exports, logs, errors), by run id; runs without steps are left out. */
export async function runStepChars(db: Db, runIds: string[]): Promise<Map<string, number>> {
  if (!runIds.length) return new Map();
  const rows = await db
    .selectFrom('workflow_run_steps')
    .select((eb) => [
      'run_id',
      eb.fn.sum<number | string>(sql`length(exports) + length(logs) + coalesce(length(return_value), 0) + coalesce(length(error), 0)`).as('chars'),
    ])
    .where('run_id', 'in', runIds)
    .groupBy('run_id')
    .execute();
  return new Map(rows.map((r) => [r.run_id, Number(r.chars)]));
}

export function runSteps(db: Db, runIds: string[]): Promise<WorkflowRunStepRow[]> {
  if (!runIds.length) return Promise.resolve([]);
  return db.selectFrom('workflow_run_steps').selectAll().where('run_id', 'in', runIds).orderBy('run_id').orderBy('step_index').execute();
}

/**
 * Runs whose workflow is not switched off: a switched-off workflow's queued and delayed runs wait for it to be on
 * again. A deleted workflow's are not left out (none are left: they go with it).
 */
function workflowNotOff(eb: ExpressionBuilder<Database, 'workflow_runs'>) {
  return eb.not(
    eb.exists(eb.selectFrom('workflows').select('workflows.id').whereRef('workflows.id', '=', 'workflow_runs.workflow_id').where('workflows.active', '=', 0)),
  );
}

/** Ids of unfinished runs due by `nowMs` whose lease (if any) has run out and whose workflow is on, oldest first. */
export async function dueRuns(db: Db, nowMs: number, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('workflow_runs')
    .select('id')
    .where('due_ms', '<=', nowMs)
    .where(workflowNotOff)
    .where((eb) => eb.or([eb('lease_until_ms', 'is', null), eb('lease_until_ms', '<', nowMs)]))
    .orderBy('due_ms')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/**
 * The earliest due time after `afterMs` of an unfinished run, to wake the runner then. Runs due already (being run, or
 * of a workflow switched off) are left out: their past due time would hide a later one, which then waited for the
 * runner's slow lease watch.
 */
export async function nextDueMs(db: Db, afterMs: number): Promise<number | undefined> {
  const row = await db
    .selectFrom('workflow_runs')
    .select((eb) => eb.fn.min('due_ms').as('due'))
    .where('due_ms', '>', afterMs)
    .executeTakeFirst();
  return row?.due === null || row?.due === undefined ? undefined : Number(row.due);
}

/** Unfinished runs among `ids` of workflows that are on, for the only runner (which holds no leases). */
export function loadUnfinishedRuns(db: Db, ids: string[]): Promise<WorkflowRunRow[]> {
  if (!ids.length) return Promise.resolve([]);
  return db.selectFrom('workflow_runs').selectAll().where('id', 'in', ids).where('due_ms', 'is not', null).where(workflowNotOff).execute();
}

/**
 * Takes the runs among `ids` that are due, not held by another runner and of a workflow that is on, for `owner` until
 * `leaseUntilMs`: one compare-and-set, so that of two runners only one gets each run. Returns the runs as taken.
 */
export function claimRuns(db: Db, ids: string[], owner: string, nowMs: number, leaseUntilMs: number): Promise<WorkflowRunRow[]> {
  if (!ids.length) return Promise.resolve([]);
  return db
    .updateTable('workflow_runs')
    .set((eb) => ({ lease_owner: owner, lease_until_ms: leaseUntilMs, status: 'running', attempts: eb('attempts', '+', 1) }))
    .where('id', 'in', ids)
    .where('due_ms', '<=', nowMs)
    .where((eb) => eb.or([eb('lease_until_ms', 'is', null), eb('lease_until_ms', '<', nowMs), eb('lease_owner', '=', owner)]))
    .where(workflowNotOff)
    .returningAll()
    .execute();
}

/**
 * A node ran a step of a workflow that was switched off (on any node) before the step's commit: nothing of it is
 * committed, and its runs go back to the queue to wait for the workflow to be on again.
 */
export class WorkflowSwitchedOffError extends Error {
  override name = 'WorkflowSwitchedOffError';
  constructor(readonly workflowId: string) {
    super(`workflow ${workflowId} was switched off while a step of its runs ran`);
  }
}

/**
 * The fence of a switch-off, in a step batch's commit: throws WorkflowSwitchedOffError when the workflow is off. On
 * PostgreSQL its row stays share-locked to the commit, so a switch-off (which locks it for update) waits for a commit
 * that came first, and a commit that comes after it sees it. A deleted workflow is left to the commit (its runs went
 * with it, so none advances).
 */
export async function holdWorkflowOn(db: Db, dialect: DialectName, workflowId: string): Promise<void> {
  const query = db.selectFrom('workflows').select('active').where('id', '=', workflowId);
  const row = await (dialect === 'postgres' ? query.forShare() : query).executeTakeFirst();
  if (row && row.active !== 1) throw new WorkflowSwitchedOffError(workflowId);
}

/** Renews every lease `owner` holds, in one statement. */
export async function renewRunLeases(db: Db, owner: string, leaseUntilMs: number): Promise<void> {
  await db.updateTable('workflow_runs').set({ lease_until_ms: leaseUntilMs }).where('lease_owner', '=', owner).execute();
}

/** The run's state after a finished step (see commitSteps). */
export type RunAdvance = Pick<WorkflowRunRow, 'status' | 'next_step' | 'due_ms' | 'running_ms' | 'exit_reason' | 'error' | 'finished_ms'> & {
  releaseLease: boolean;
};

/**
 * Moves a run past step `stepIndex`, if `owner` still holds it (null: the only runner, which holds no leases) and no
 * one moved it first; false when it lost the run.
 */
export async function advanceRun(db: Db, runId: string, stepIndex: number, owner: string | null, advance: RunAdvance): Promise<boolean> {
  const { releaseLease, ...changes } = advance;
  const lease = releaseLease ? { lease_owner: null, lease_until_ms: null } : {};
  const result = await db
    .updateTable('workflow_runs')
    .set({ ...changes, ...lease })
    .where('id', '=', runId)
    .where('next_step', '=', stepIndex)
    .where(heldBy(owner))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Ends runs that ran `stepIndex` steps of a workflow that has no step left they have not run (changed while they
 * waited): they ran every step there is, so they succeeded, as a run past its last step does. Left as they were,
 * they stayed `queued` or `delayed` for good, taken up again by every scan. Only runs `owner` holds (null: the only
 * runner) that are still at that step.
 */
export async function finishRunsPastLastStep(db: Db, runIds: string[], stepIndex: number, owner: string | null, nowMs: number): Promise<void> {
  if (!runIds.length) return;
  await db
    .updateTable('workflow_runs')
    .set({ status: 'succeeded', due_ms: null, finished_ms: nowMs, exit_reason: null, error: null, lease_owner: null, lease_until_ms: null })
    .where('id', 'in', runIds)
    .where('next_step', '=', stepIndex)
    .where(heldBy(owner))
    .execute();
}

export async function insertStepRows(db: Db, rows: WorkflowRunStepRow[]): Promise<void> {
  if (rows.length) await db.insertInto('workflow_run_steps').values(rows).execute();
}

/**
 * Marks runs whose step is about to run `running`: the only runner takes runs up without a claim (which marks them in a
 * cluster), so a run whose first step, or the step after its delay, was running read `queued` or `delayed`.
 */
export async function markRunning(db: Db, runIds: string[], owner: string | null): Promise<void> {
  if (!runIds.length) return;
  await db
    .updateTable('workflow_runs')
    .set({ status: 'running' })
    .where('id', 'in', runIds)
    .where('status', 'in', ['queued', 'delayed'])
    .where(heldBy(owner))
    .execute();
}

/** Hands runs back (the runtime failed): they are due again after `retryAtMs`, for any runner. */
export async function releaseRuns(db: Db, runIds: string[], owner: string | null, retryAtMs: number): Promise<void> {
  if (!runIds.length) return;
  await db
    .updateTable('workflow_runs')
    .set({ lease_owner: null, lease_until_ms: null, status: 'queued', due_ms: retryAtMs })
    .where('id', 'in', runIds)
    .where(heldBy(owner))
    .execute();
}

export async function readStepDb(db: Db, workflowId: string, step: string): Promise<Record<string, unknown>> {
  const rows = await db.selectFrom('workflow_step_db').select(['key', 'value']).where('workflow_id', '=', workflowId).where('step', '=', step).execute();
  return Object.fromEntries(rows.map((r) => [r.key, JSON.parse(r.value)]));
}

/** A key whose value is undefined is removed (`$.service.db` set to undefined), as in writeSourceDb. */
export async function writeStepDb(db: Db, workflowId: string, step: string, writes: Record<string, unknown>): Promise<void> {
  const { removedSlices, upsertSlices } = splitDbWrites(writes);
  for (const keys of removedSlices) {
    await db.deleteFrom('workflow_step_db').where('workflow_id', '=', workflowId).where('step', '=', step).where('key', 'in', keys).execute();
  }
  for (const upserts of upsertSlices) {
    await db
      .insertInto('workflow_step_db')
      .values(upserts.map(({ key, value }) => ({ workflow_id: workflowId, step, key, value })))
      .onConflict((oc) => oc.columns(['workflow_id', 'step', 'key']).doUpdateSet((eb) => ({ value: eb.ref('excluded.value') })))
      .execute();
  }
}

/** Makes every leased run due again at once: the only runner restarted, so no lease is held any more. */
export async function releaseAllLeases(db: Db, nowMs: number): Promise<void> {
  await db
    .updateTable('workflow_runs')
    .set({ lease_owner: null, lease_until_ms: null, status: 'queued', due_ms: nowMs })
    .where('lease_owner', 'is not', null)
    .where('due_ms', 'is not', null)
    .execute();
}

/**
 * True while a timer run of the workflow is queued or running, so that the next due time is skipped, not stacked. A
 * run waiting out `$.flow.delay` does not count: it holds no worker, and a delay of days would skip days of runs.
 */
export async function hasUnfinishedTimerRun(db: Db, workflowId: string): Promise<boolean> {
  return (await unfinishedTimerRunQuery(db, workflowId).executeTakeFirst()) !== undefined;
}

/** hasUnfinishedTimerRun's query, which migration 016's index fits (its test reads the plan). */
export function unfinishedTimerRunQuery(db: Db, workflowId: string) {
  return db
    .selectFrom('workflow_runs')
    .select('id')
    .where('workflow_id', '=', workflowId)
    .where('trigger', '=', 'timer')
    .where('due_ms', 'is not', null)
    .where('status', '!=', 'delayed')
    .limit(1);
}
