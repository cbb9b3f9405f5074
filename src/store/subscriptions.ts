// Queries on subscriptions and auto-subscriptions: create once per triple, match an emitter, remove.
import { type Kysely, type Selectable, sql, type Transaction } from 'kysely';
import type { AutoSubscriptionsTable, Database, SubscriptionsTable } from './schema.js';
import { compiledOnce } from './compiled.js';
import { streamNameOf } from '../model/subscriptions.js';

export type SubscriptionRow = Selectable<SubscriptionsTable>;
export type AutoSubscriptionRow = Selectable<AutoSubscriptionsTable>;
type Db = Kysely<Database> | Transaction<Database>;

export interface SubscriptionKey {
  userId: string;
  emitterId: string;
  listenerId: string;
  eventName: string;
}

/**
 * The stored names that select the same stream as `eventName`: '' and 'default' both name the default stream, so a
 * subscription made with one of them is the one the other finds (any other name is itself alone).
 */
function spellingsOf(eventName: string): string[] {
  return streamNameOf(eventName) === '' ? ['', 'default'] : [eventName];
}

/**
 * The conflict targets of migration 021's unique indexes: the stream is keyed with 'default' read as '' (the literal
 * is written out, not bound, so PostgreSQL matches it to the index's expression).
 */
const SUBSCRIPTION_STREAM_KEY = sql`user_id, emitter_id, listener_id, (case when event_name = 'default' then '' else event_name end)`;
const AUTO_SUBSCRIPTION_STREAM_KEY = sql`user_id, listener_id, (case when event_name = 'default' then '' else event_name end)`;

/** Whether the account has this subscription already (its create would return it, not add one). */
export async function hasSubscription(db: Db, key: SubscriptionKey): Promise<boolean> {
  const row = await db
    .selectFrom('subscriptions')
    .select('id')
    .where('user_id', '=', key.userId)
    .where('emitter_id', '=', key.emitterId)
    .where('listener_id', '=', key.listenerId)
    .where('event_name', 'in', spellingsOf(key.eventName))
    .executeTakeFirst();
  return row !== undefined;
}

/** Whether the account has this auto-subscription already. */
export async function hasAutoSubscription(db: Db, userId: string, listenerId: string, eventName: string): Promise<boolean> {
  const row = await db
    .selectFrom('auto_subscriptions')
    .select('id')
    .where('user_id', '=', userId)
    .where('listener_id', '=', listenerId)
    .where('event_name', 'in', spellingsOf(eventName))
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Inserts the subscription, or returns the one with the same triple (its event name as stored: '' and 'default' are
 * one): one statement, so a concurrent delete cannot fall between.
 */
export async function insertSubscription(db: Db, row: SubscriptionRow): Promise<SubscriptionRow> {
  return db
    .insertInto('subscriptions')
    .values(row)
    .onConflict((oc) => oc.expression(SUBSCRIPTION_STREAM_KEY).doUpdateSet((eb) => ({ event_name: eb.ref('subscriptions.event_name') })))
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function deleteSubscription(db: Db, key: SubscriptionKey): Promise<number> {
  const result = await db
    .deleteFrom('subscriptions')
    .where('user_id', '=', key.userId)
    .where('emitter_id', '=', key.emitterId)
    .where('listener_id', '=', key.listenerId)
    .where('event_name', 'in', spellingsOf(key.eventName))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Newest first, as every list. */
export function listSubscriptions(db: Db, userId: string): Promise<SubscriptionRow[]> {
  return db.selectFrom('subscriptions').selectAll().where('user_id', '=', userId).orderBy('id', 'desc').execute();
}

const selectSubscriptionsOf = compiledOnce(
  'subscriptionsOf',
  (db, userId: string, emitterIds: string[]) => db.selectFrom('subscriptions').selectAll().where('user_id', '=', userId).where('emitter_id', 'in', emitterIds),
  (userId, emitterIds) => [userId, ...emitterIds],
);

/** Subscriptions of the account naming this emitter or the glob covering it. */
export async function subscriptionsOf(db: Db, userId: string, emitterIds: string[]): Promise<SubscriptionRow[]> {
  return (await selectSubscriptionsOf(db, userId, emitterIds)).rows;
}

/** Inserts the auto-subscription, or returns the one with the same pair, in one statement (see insertSubscription). */
export async function insertAutoSubscription(db: Db, row: AutoSubscriptionRow): Promise<AutoSubscriptionRow> {
  return db
    .insertInto('auto_subscriptions')
    .values(row)
    .onConflict((oc) => oc.expression(AUTO_SUBSCRIPTION_STREAM_KEY).doUpdateSet((eb) => ({ event_name: eb.ref('auto_subscriptions.event_name') })))
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * True when the account owns this source or webhook; also locks its row until the transaction ends, so that a
 * delete running at the same time either finishes first (and this finds nothing) or removes what this adds.
 * An update that changes nothing is the one lock both SQLite and PostgreSQL take the same way.
 */
export async function lockOwnedEndpoint(db: Db, userId: string, id: string, table: 'sources' | 'webhooks' | 'workflows'): Promise<boolean> {
  const result = await db
    .updateTable(table)
    .set((eb) => ({ id: eb.ref('id') }))
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function deleteAutoSubscription(db: Db, userId: string, listenerId: string, eventName: string): Promise<number> {
  const result = await db
    .deleteFrom('auto_subscriptions')
    .where('user_id', '=', userId)
    .where('listener_id', '=', listenerId)
    .where('event_name', 'in', spellingsOf(eventName))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Oldest first by default (the order a new emitter's subscriptions are made in); the API lists newest first, as every list. */
export function listAutoSubscriptions(db: Db, userId: string, order: 'asc' | 'desc' = 'asc'): Promise<AutoSubscriptionRow[]> {
  return db.selectFrom('auto_subscriptions').selectAll().where('user_id', '=', userId).orderBy('id', order).execute();
}

/** The account's active sources among `ids` (listeners of a commit); a deleted or inactive one is skipped. */
export function activeListenerSources(db: Db, userId: string, ids: string[]): Promise<Array<{ id: string; user_id: string }>> {
  if (!ids.length) return Promise.resolve([]);
  return db.selectFrom('sources').select(['id', 'user_id']).where('user_id', '=', userId).where('id', 'in', ids).where('active', '=', 1).execute();
}
