// Queries on the durable invocation queue: enqueue, claim a batch of one source with a lease, complete.
import { type ExpressionBuilder, type Kysely, type Selectable, sql, type Transaction } from 'kysely';
import type { DialectName } from './database.js';
import { bulkInsert } from './bulk-insert.js';
import type { Database, InvocationsTable, SourcesTable } from './schema.js';
import { compiledOnce } from './compiled.js';

export type InvocationRow = Selectable<InvocationsTable>;
type Db = Kysely<Database> | Transaction<Database>;

const INVOCATION_COLUMNS = [
  'id',
  'source_id',
  'user_id',
  'trigger',
  'event',
  'created_ms',
  'depth',
  'attempts',
  'lease_owner',
  'lease_until_ms',
  'prop_name',
] as const;

export async function insertInvocations(db: Db, dialect: DialectName, rows: InvocationRow[]): Promise<void> {
  await bulkInsert(db, dialect, 'invocations', INVOCATION_COLUMNS, rows);
}

const COLUMN_LIST = INVOCATION_COLUMNS.map((c) => `"${c}"`).join(', ');

/**
 * PostgreSQL only: inserts the rows whose source is active as the statement runs, and returns their ids. The rows go
 * as one JSON parameter typed by the table's own row type. A node whose cache still holds a source another node
 * switched off thus refuses what it would otherwise queue behind that node's answer.
 */
export async function insertInvocationsOfActiveSources(db: Db, rows: InvocationRow[]): Promise<Set<string>> {
  const { rows: inserted } = await sql<{ id: string }>`insert into invocations (${sql.raw(COLUMN_LIST)})
    select ${sql.raw(INVOCATION_COLUMNS.map((c) => `r."${c}"`).join(', '))}
    from json_populate_recordset(null::invocations, ${JSON.stringify(rows)}::json) as r
    where exists (select 1 from sources s where s.id = r.source_id and s.active = 1)
    returning id`.execute(db);
  return new Set(inserted.map((row) => row.id));
}

/**
 * Sources with claimable invocations, oldest waiting first. An inactive source's are left out: they wait for it to be
 * switched on again. A deleted source's are not (what is left of it is cleared by the run).
 */
export async function sourcesWithWork(db: Db, nowMs: number, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('invocations')
    .select('source_id')
    .select((eb) => eb.fn.min('id').as('first_id'))
    .where((eb) => eb.or([eb('lease_until_ms', 'is', null), eb('lease_until_ms', '<', nowMs)]))
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('sources').select('sources.id').whereRef('sources.id', '=', 'invocations.source_id').where('sources.active', '=', 0))),
    )
    .groupBy('source_id')
    .orderBy('first_id')
    .limit(limit)
    .execute();
  return rows.map((r) => r.source_id);
}

/** The oldest `limit` invocations of one source, for a process that is the queue's only consumer (no leases needed). */
export async function oldestInvocations(db: Db, sourceId: string, limit: number): Promise<InvocationRow[]> {
  return db.selectFrom('invocations').selectAll().where('source_id', '=', sourceId).orderBy('id').limit(limit).execute();
}

/** What a claim took: invocations in queue order, or none and when the lease another node holds on the source ends. */
export interface Claim {
  rows: InvocationRow[];
  heldElsewhereUntilMs?: number;
}

/**
 * Leases the oldest `limit` claimable invocations of one source for `owner`, none while the source is switched off
 * (whatever a node's cached settings say: its code must not run). On PostgreSQL (a cluster), none while
 * another node holds a live lease on any of the source's invocations: a source runs on one node at a time, so that
 * its events keep their order and its db sees one writer. Claims of one source take turns on an advisory lock, so
 * two nodes never both find the source free; the function of migration 012 does it in one round trip.
 */
export async function claimBatch(
  db: Kysely<Database>,
  dialect: DialectName,
  sourceId: string,
  owner: string,
  nowMs: number,
  leaseMs: number,
  limit: number,
): Promise<Claim> {
  if (dialect === 'postgres') return claimOnPostgres(db, sourceId, owner, nowMs, leaseMs, limit);
  const claimable = (eb: ExpressionBuilder<Database, 'invocations'>) =>
    eb.or([eb('lease_until_ms', 'is', null), eb('lease_until_ms', '<', nowMs), eb('lease_owner', '=', owner)]);
  // As on PostgreSQL (migration 017): none of a switched-off source.
  const switchedOff = await db.selectFrom('sources').select('id').where('id', '=', sourceId).where('active', '=', 0).executeTakeFirst();
  if (switchedOff) return { rows: [] };
  const candidates = db.selectFrom('invocations').select('id').where('source_id', '=', sourceId).where(claimable).orderBy('id').limit(limit);
  const rows = await db
    .updateTable('invocations')
    .set((eb) => ({ lease_owner: owner, lease_until_ms: nowMs + leaseMs, attempts: eb('attempts', '+', 1) }))
    .where('source_id', '=', sourceId)
    .where('id', 'in', candidates)
    .where(claimable)
    .returningAll()
    .execute();
  return { rows: rows.sort(byId) };
}

type ClaimedRow = { [K in keyof InvocationRow]: InvocationRow[K] | null } & { held_until_ms: number | null };

async function claimOnPostgres(db: Kysely<Database>, sourceId: string, owner: string, nowMs: number, leaseMs: number, limit: number): Promise<Claim> {
  const { rows } = await sql<ClaimedRow>`
    select held_until_ms, (claimed).* from tributary_claim_invocations(${sourceId}, ${owner}, ${nowMs}, ${leaseMs}, ${limit})`.execute(db);
  const held = rows[0]?.held_until_ms;
  if (held !== undefined && held !== null) return { rows: [], heldElsewhereUntilMs: Number(held) };
  return { rows: rows.map(({ held_until_ms: _, ...row }) => row as InvocationRow).sort(byId) };
}

const byId = (a: InvocationRow, b: InvocationRow) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

// Every statement on rows by id names their source too: the queue's key is (source_id, id).
const deleteInvocations = compiledOnce(
  'completeInvocations',
  (db, sourceId: string, ids: string[]) => db.deleteFrom('invocations').where('source_id', '=', sourceId).where('id', 'in', ids),
  (sourceId, ids) => [sourceId, ...ids],
);

const deleteLeasedInvocations = compiledOnce(
  'completeInvocations.leased',
  (db, sourceId: string, ids: string[], owner: string) =>
    db.deleteFrom('invocations').where('source_id', '=', sourceId).where('id', 'in', ids).where('lease_owner', '=', owner),
  (sourceId, ids, owner) => [sourceId, ...ids, owner],
);

/**
 * Removes completed invocations of one source; with an owner, only where it still holds them (a reclaimed row is
 * not ours to drop). Without one (the queue's only consumer), unconditionally.
 */
export async function completeInvocations(db: Db, sourceId: string, ids: string[], owner: string | null): Promise<void> {
  if (!ids.length) return;
  if (owner === null) {
    await deleteInvocations(db, sourceId, ids);
    return;
  }
  // The fence: a node whose lease ran out and was taken over deletes fewer rows, and its transaction is rolled back.
  const deleted = Number((await deleteLeasedInvocations(db, sourceId, ids, owner)).numAffectedRows ?? 0);
  if (deleted !== ids.length) throw new LeaseLostError(sourceId, ids.length - deleted);
}

/**
 * A node lost its lease on invocations it ran (it paused past the lease, or lost the database for that long) and
 * another node claimed them: what it ran must not be committed, since the other node's run is the one that counts.
 */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
  constructor(
    readonly sourceId: string,
    readonly lost: number,
  ) {
    super(`${lost} invocation(s) of source ${sourceId} were taken over by another node after this node's lease ran out`);
  }
}

/**
 * A node ran invocations of a source that was switched off or changed (on any node) before the run's commit: what it
 * ran must not be committed, since nothing of a source runs after its deactivate(), and an update's queued runs run
 * with its new code and props. The invocations go back to the queue: to run again, or wait while the source is off.
 */
export class SourceChangedError extends Error {
  override name = 'SourceChangedError';
  constructor(
    readonly sourceId: string,
    readonly switchedOff: boolean,
  ) {
    super(`source ${sourceId} was ${switchedOff ? 'switched off' : 'changed'} while its invocations ran on this node`);
  }
}

/**
 * A node ran invocations of a source that was deleted (on another node) before the run's commit: nothing of the run is
 * committed, and nothing goes back to the queue, since the source's invocations went with it.
 */
export class SourceDeletedError extends Error {
  override name = 'SourceDeletedError';
  constructor(readonly sourceId: string) {
    super(`source ${sourceId} was deleted while its invocations ran on this node`);
  }
}

/** The columns an update of a source writes: a run of the row as it was before it must not commit after it. */
const AS_RUN = ['component_id', 'name', 'active', 'configured_props', 'endpoint_id', 'additional_props', 'updated_at'] as const;

/**
 * The fence of a switch-off or update across nodes, in a batch's commit (leased runs): throws SourceChangedError
 * when the source's row is no longer `ran`, the one the batch ran with. On PostgreSQL the row stays share-locked to
 * the commit, so an update waits for a commit that came first and a commit that comes after it sees it. The row
 * first, as a delete locks it first (deleteSourceCascade); a source deleted before the commit is a
 * SourceDeletedError (its invocations went with it: no lease on them was lost).
 */
export async function holdSourceAsRun(db: Db, dialect: DialectName, ran: Selectable<SourcesTable>): Promise<void> {
  const query = db.selectFrom('sources').select(AS_RUN).where('id', '=', ran.id);
  const row = await (dialect === 'postgres' ? query.forShare() : query).executeTakeFirst();
  if (!row) throw new SourceDeletedError(ran.id);
  if (row.active !== 1) throw new SourceChangedError(ran.id, true);
  if (AS_RUN.some((column) => row[column] !== ran[column])) throw new SourceChangedError(ran.id, false);
}

/** Gives leased invocations of one source back to the queue, for another attempt. */
export async function releaseInvocations(db: Db, sourceId: string, ids: string[], owner: string): Promise<void> {
  if (!ids.length) return;
  await db
    .updateTable('invocations')
    .set({ lease_owner: null, lease_until_ms: null })
    .where('source_id', '=', sourceId)
    .where('id', 'in', ids)
    .where('lease_owner', '=', owner)
    .execute();
}

/** Extends the lease of invocations of one source this owner is still running. */
export async function renewLeases(db: Db, sourceId: string, ids: string[], owner: string, untilMs: number): Promise<void> {
  if (!ids.length) return;
  await db
    .updateTable('invocations')
    .set({ lease_until_ms: untilMs })
    .where('source_id', '=', sourceId)
    .where('id', 'in', ids)
    .where('lease_owner', '=', owner)
    .execute();
}

/** How many listener runs each of these sources has waiting or running (sources with none are left out). */
export async function queuedListenerRuns(db: Db, sourceIds: string[]): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('invocations')
    .select(['source_id', (eb) => eb.fn.countAll<number>().as('n')])
    .where('source_id', 'in', sourceIds)
    .where('trigger', '=', 'listener')
    .groupBy('source_id')
    .execute();
  return new Map(rows.map((row) => [row.source_id, Number(row.n)]));
}

/** Invocations waiting or running, for the queue-depth gauge (read at scrape time only). */
export async function countQueued(db: Db): Promise<number> {
  const row = await db
    .selectFrom('invocations')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
