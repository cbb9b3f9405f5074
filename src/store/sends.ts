// Queries on the outbox of workflow sends: inserted with their step's commit, claimed with a lease, finished once.
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Database, SendState, WorkflowSendsTable } from './schema.js';

export type { OutboxKind, SendState } from './schema.js';

export type SendRow = Selectable<WorkflowSendsTable>;

/** A claimed send with its account's email address (where `$.send.email` goes). */
export interface ClaimedSend extends SendRow {
  account_email: string | null;
}

type Db = Kysely<Database> | Transaction<Database>;

/** A send not attempted yet, due at once. */
export function pendingSend(fields: Pick<SendRow, 'id' | 'run_id' | 'workflow_id' | 'user_id' | 'step_index' | 'kind' | 'payload' | 'created_ms'>): SendRow {
  return {
    ...fields,
    state: 'pending',
    attempt: 0,
    next_attempt_ms: fields.created_ms,
    lease_owner: null,
    lease_until_ms: null,
    last_error: null,
    status_code: null,
    finished_ms: null,
  };
}

export async function insertSends(db: Db, rows: readonly SendRow[]): Promise<void> {
  if (rows.length) await db.insertInto('workflow_sends').values(rows).execute();
}

/** Leases the due sends `ids` for `owner` (those still unheld), earliest due first. */
export async function claimDueSends(db: Db, owner: string, nowMs: number, leaseMs: number, ids: readonly string[]): Promise<ClaimedSend[]> {
  if (!ids.length) return [];
  const untilMs = nowMs + leaseMs;
  // A compare-and-set: of two nodes that saw the same candidates, each row goes to one.
  await db
    .updateTable('workflow_sends')
    .set({ lease_owner: owner, lease_until_ms: untilMs })
    .where('id', 'in', ids)
    .where('state', '=', 'pending')
    .where((eb) => eb.or([eb('lease_until_ms', 'is', null), eb('lease_until_ms', '<', nowMs)]))
    .execute();
  return db
    .selectFrom('workflow_sends as s')
    .leftJoin('users as u', 'u.id', 's.user_id')
    .selectAll('s')
    .select('u.email as account_email')
    .where('s.id', 'in', ids)
    .where('s.lease_owner', '=', owner)
    .where('s.lease_until_ms', '=', untilMs)
    .orderBy('s.next_attempt_ms')
    .orderBy('s.id')
    .execute();
}

/** What one attempt leaves: the send pending again (with its next due time), succeeded or failed for good. */
export interface SendAttempt {
  state: SendState;
  attempt: number;
  nextAttemptMs: number | null;
  statusCode: number | null;
  error: string | null;
  finishedMs: number | null;
}

/** Records an attempt of a send this owner still holds; false when its lease was lost (another node has it now). */
export async function recordSendAttempt(db: Db, id: string, owner: string, result: SendAttempt): Promise<boolean> {
  const updated = await db
    .updateTable('workflow_sends')
    .set({
      state: result.state,
      attempt: result.attempt,
      next_attempt_ms: result.nextAttemptMs,
      status_code: result.statusCode,
      last_error: result.error,
      finished_ms: result.finishedMs,
      lease_owner: null,
      lease_until_ms: null,
    })
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .where('state', '=', 'pending')
    .executeTakeFirst();
  return Number(updated.numUpdatedRows) === 1;
}

/** Gives claimed sends back untried (shutdown), so that they are carried out at once after the restart. */
export async function releaseSends(db: Db, ids: string[], owner: string): Promise<void> {
  if (!ids.length) return;
  await db.updateTable('workflow_sends').set({ lease_owner: null, lease_until_ms: null }).where('id', 'in', ids).where('lease_owner', '=', owner).execute();
}

/** On an embedded (single-process) start, the previous process's leases can be taken back at once. */
export async function releaseAllSendLeases(db: Db): Promise<void> {
  await db
    .updateTable('workflow_sends')
    .set({ lease_owner: null, lease_until_ms: null })
    .where('state', '=', 'pending')
    .where('lease_owner', 'is not', null)
    .execute();
}

/** The sends of some runs, in step order, for their views. */
export function sendsOfRuns(db: Db, runIds: string[]): Promise<SendRow[]> {
  if (!runIds.length) return Promise.resolve([]);
  return db.selectFrom('workflow_sends').selectAll().where('run_id', 'in', runIds).orderBy('run_id').orderBy('step_index').orderBy('id').execute();
}
