// Queries on webhook deliveries: pending attempts claimed with a lease, finished attempts kept as the log.
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Page, PageRequest } from '../model/pagination.js';
import type { DialectName } from './database.js';
import type { Database, WebhookDeliveriesTable } from './schema.js';
import { bulkInsert } from './bulk-insert.js';
import { paginateById } from './paginate.js';
import { compiledOnce } from './compiled.js';

export type DeliveryRow = Selectable<WebhookDeliveriesTable>;
type Db = Kysely<Database> | Transaction<Database>;

/** A claimed attempt with what sending it needs from its webhook. */
export interface ClaimedDelivery extends DeliveryRow {
  url: string;
  secret: string;
  active: number;
}

const DELIVERY_COLUMNS = [
  'id',
  'message_id',
  'webhook_id',
  'user_id',
  'emitter_id',
  'event_id',
  'payload',
  'attempt',
  'state',
  'next_attempt_ms',
  'status_code',
  'error',
  'duration_ms',
  'attempted_ms',
  'created_ms',
  'lease_owner',
  'lease_until_ms',
] as const satisfies ReadonlyArray<keyof WebhookDeliveriesTable>;

/** The fields an attempt fills in when it is made, and the lease of one that nobody holds yet. */
type UnmadeFields = 'state' | 'status_code' | 'error' | 'duration_ms' | 'attempted_ms' | 'lease_owner' | 'lease_until_ms';

/** A pending attempt not made yet and held by no one. */
export function pendingDelivery(fields: Omit<DeliveryRow, UnmadeFields>): DeliveryRow {
  return { ...fields, state: 'pending', status_code: null, error: null, duration_ms: null, attempted_ms: null, lease_owner: null, lease_until_ms: null };
}

export async function insertDeliveries(db: Db, dialect: DialectName, rows: readonly DeliveryRow[]): Promise<void> {
  await bulkInsert(db, dialect, 'webhook_deliveries', DELIVERY_COLUMNS, rows);
}

// The lease is a compare-and-set: of two nodes that saw the same candidates, each row goes to one.
const leaseDue = compiledOnce(
  'claimDue.lease',
  (db, ids: readonly string[], owner: string, nowMs: number, untilMs: number) =>
    db
      .updateTable('webhook_deliveries')
      .set({ lease_owner: owner, lease_until_ms: untilMs })
      .where('id', 'in', ids)
      .where('state', '=', 'pending')
      .where((eb) => eb.or([eb('lease_until_ms', 'is', null), eb('lease_until_ms', '<', nowMs)])),
  (ids, owner, nowMs, untilMs) => [owner, untilMs, ...ids, 'pending', nowMs],
);

const selectLeased = compiledOnce(
  'claimDue.read',
  (db, ids: readonly string[], owner: string, untilMs: number) =>
    db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
      .selectAll('d')
      .select(['w.url', 'w.secret', 'w.active'])
      .where('d.id', 'in', ids)
      .where('d.lease_owner', '=', owner)
      .where('d.lease_until_ms', '=', untilMs)
      .orderBy('d.next_attempt_ms')
      .orderBy('d.id'),
  (ids, owner, untilMs) => [...ids, owner, untilMs],
);

/** Leases the pending attempts `ids` for `owner` (those still unheld), earliest due first. */
export async function claimDue(db: Db, owner: string, nowMs: number, leaseMs: number, ids: readonly string[]): Promise<ClaimedDelivery[]> {
  if (!ids.length) return [];
  const untilMs = nowMs + leaseMs;
  await leaseDue(db, ids, owner, nowMs, untilMs);
  return (await selectLeased(db, ids, owner, untilMs)).rows;
}

export interface AttemptResult {
  state: 'succeeded' | 'failed';
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  attemptedMs: number;
  /** When the retry is due; null when there is none. */
  nextAttemptMs: number | null;
}

const updateAttempt = compiledOnce(
  'recordAttempt',
  (db, id: string, owner: string, result: AttemptResult) =>
    db
      .updateTable('webhook_deliveries')
      .set({
        state: result.state,
        status_code: result.statusCode,
        error: result.error,
        duration_ms: Math.round(result.durationMs),
        attempted_ms: result.attemptedMs,
        next_attempt_ms: result.nextAttemptMs,
        lease_owner: null,
        lease_until_ms: null,
      })
      .where('id', '=', id)
      .where('lease_owner', '=', owner)
      // A failed row still leased is an attempt on its way when failPending ended its webhook's queue (a 410): it
      // reached the receiver, so its answer replaces the "not sent". Any other record clears the lease.
      .where('state', 'in', ['pending', 'failed']),
  (id, owner, result) => [
    result.state,
    result.statusCode,
    result.error,
    Math.round(result.durationMs),
    result.attemptedMs,
    result.nextAttemptMs,
    null,
    null,
    id,
    owner,
    'pending',
    'failed',
  ],
);

/** Records an attempt this owner still holds; false when its lease was lost (another node has it now). */
export async function recordAttempt(db: Db, id: string, owner: string, result: AttemptResult): Promise<boolean> {
  return Number((await updateAttempt(db, id, owner, result)).numAffectedRows ?? 0) === 1;
}

/** Extends this owner's leases that still run past `validAfterMs`; returns the ids renewed. */
export async function renewDeliveryLeases(db: Db, ids: string[], owner: string, untilMs: number, validAfterMs: number): Promise<string[]> {
  if (!ids.length) return [];
  const rows = await db
    .updateTable('webhook_deliveries')
    .set({ lease_until_ms: untilMs })
    .where('id', 'in', ids)
    .where('lease_owner', '=', owner)
    .where('lease_until_ms', '>', validAfterMs)
    .where('state', '=', 'pending')
    .returning('id')
    .execute();
  return rows.map((row) => row.id);
}

/** Gives claimed attempts back untried (shutdown), so that they are sent again at once. */
export async function releaseDeliveries(db: Db, ids: string[], owner: string): Promise<void> {
  if (!ids.length) return;
  await db.updateTable('webhook_deliveries').set({ lease_owner: null, lease_until_ms: null }).where('id', 'in', ids).where('lease_owner', '=', owner).execute();
}

/** On an embedded (single-process) start, the previous process's leases can be taken back at once. */
export async function releaseAllDeliveryLeases(db: Db): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ lease_owner: null, lease_until_ms: null })
    .where('state', '=', 'pending')
    .where('lease_owner', 'is not', null)
    .execute();
}

/**
 * Ends every pending attempt of a webhook (it was deactivated): they are logged as failed with `reason`. Leases are
 * kept, so that an attempt already on its way still records the answer it gets (see recordAttempt); no claim takes a
 * failed row.
 */
export async function failPending(db: Db, webhookId: string, reason: string, nowMs: number): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ state: 'failed', error: reason, next_attempt_ms: null, attempted_ms: nowMs })
    .where('webhook_id', '=', webhookId)
    .where('state', '=', 'pending')
    .execute();
  // The failed attempts before them announced retries that will not come.
  await db
    .updateTable('webhook_deliveries')
    .set({ next_attempt_ms: null })
    .where('webhook_id', '=', webhookId)
    .where('state', '=', 'failed')
    .where('next_attempt_ms', 'is not', null)
    .execute();
}

/** Deletes the finished attempts of a webhook beyond the newest `keep`; pending ones stay. */
export async function pruneLog(db: Db, webhookId: string, keep: number): Promise<void> {
  const boundary = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('webhook_id', '=', webhookId)
    .where('state', '!=', 'pending')
    .orderBy('id', 'desc')
    .limit(1)
    .offset(keep)
    .executeTakeFirst();
  if (!boundary) return;
  await db.deleteFrom('webhook_deliveries').where('webhook_id', '=', webhookId).where('state', '!=', 'pending').where('id', '<=', boundary.id).execute();
}

/** The attempt log of one webhook, newest first. */
export function listDeliveries(db: Kysely<Database>, webhookId: string, page: PageRequest): Promise<Page<DeliveryRow>> {
  const base = db.selectFrom('webhook_deliveries').selectAll().where('webhook_id', '=', webhookId);
  const count = async () =>
    Number(
      (
        await db
          .selectFrom('webhook_deliveries')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('webhook_id', '=', webhookId)
          .executeTakeFirstOrThrow()
      ).n,
    );
  return paginateById(base, count, 'dl', page);
}
