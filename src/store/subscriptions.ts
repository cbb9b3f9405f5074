// Queries on subscriptions and auto-subscriptions: create once per triple, match an emitter, remove.
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { AutoSubscriptionsTable, Database, SubscriptionsTable } from './schema.js';
import { compiledOnce } from './compiled.js';

export type SubscriptionRow = Selectable<SubscriptionsTable>;
export type AutoSubscriptionRow = Selectable<AutoSubscriptionsTable>;
type Db = Kysely<Database> | Transaction<Database>;

export interface SubscriptionKey {
  userId: string;
  emitterId: string;
  listenerId: string;
  eventName: string;
}

export function findSubscription(db: Db, key: SubscriptionKey): Promise<SubscriptionRow | undefined> {
  return db
    .selectFrom('subscriptions')
    .selectAll()
    .where('user_id', '=', key.userId)
    .where('emitter_id', '=', key.emitterId)
    .where('listener_id', '=', key.listenerId)
    .where('event_name', '=', key.eventName)
    .executeTakeFirst();
}

/** Inserts unless the triple exists (a concurrent twin is ignored); returns the row that holds the triple. */
export async function insertSubscription(db: Db, row: SubscriptionRow): Promise<SubscriptionRow> {
  await db
    .insertInto('subscriptions')
    .values(row)
    .onConflict((oc) => oc.columns(['user_id', 'emitter_id', 'listener_id', 'event_name']).doNothing())
    .execute();
  return (await findSubscription(db, { userId: row.user_id, emitterId: row.emitter_id, listenerId: row.listener_id, eventName: row.event_name }))!;
}

export async function deleteSubscription(db: Db, key: SubscriptionKey): Promise<number> {
  const result = await db
    .deleteFrom('subscriptions')
    .where('user_id', '=', key.userId)
    .where('emitter_id', '=', key.emitterId)
    .where('listener_id', '=', key.listenerId)
    .where('event_name', '=', key.eventName)
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

export async function insertAutoSubscription(db: Db, row: AutoSubscriptionRow): Promise<AutoSubscriptionRow> {
  await db
    .insertInto('auto_subscriptions')
    .values(row)
    .onConflict((oc) => oc.columns(['user_id', 'listener_id', 'event_name']).doNothing())
    .execute();
  return (await db
    .selectFrom('auto_subscriptions')
    .selectAll()
    .where('user_id', '=', row.user_id)
    .where('listener_id', '=', row.listener_id)
    .where('event_name', '=', row.event_name)
    .executeTakeFirst())!;
}

export async function deleteAutoSubscription(db: Db, userId: string, listenerId: string, eventName: string): Promise<number> {
  const result = await db
    .deleteFrom('auto_subscriptions')
    .where('user_id', '=', userId)
    .where('listener_id', '=', listenerId)
    .where('event_name', '=', eventName)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

export function listAutoSubscriptions(db: Db, userId: string): Promise<AutoSubscriptionRow[]> {
  return db.selectFrom('auto_subscriptions').selectAll().where('user_id', '=', userId).orderBy('id', 'asc').execute();
}

/** The account's active sources among `ids` (listeners of a commit); a deleted or inactive one is skipped. */
export function activeListenerSources(db: Db, userId: string, ids: string[]): Promise<Array<{ id: string; user_id: string }>> {
  if (!ids.length) return Promise.resolve([]);
  return db.selectFrom('sources').select(['id', 'user_id']).where('user_id', '=', userId).where('id', 'in', ids).where('active', '=', 1).execute();
}
