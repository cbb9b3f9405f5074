// Counting what an account holds of a limited resource, with the account locked so that creates in parallel queue.
import type { Kysely, Transaction } from 'kysely';
import type { LimitedResource } from '../model/account-limits.js';
import type { Database } from './schema.js';

/** The tables each limited resource counts: an auto-subscription is a subscription of every new emitter. */
const TABLES: Record<LimitedResource, ReadonlyArray<'sources' | 'workflows' | 'webhooks' | 'subscriptions' | 'auto_subscriptions' | 'connected_accounts'>> = {
  sources: ['sources'],
  workflows: ['workflows'],
  webhooks: ['webhooks'],
  subscriptions: ['subscriptions', 'auto_subscriptions'],
  connected_accounts: ['connected_accounts'],
};

/** How many of `resource` the account holds, without a lock: an early look, before the transaction decides. */
export async function countHeld(db: Kysely<Database> | Transaction<Database>, userId: string, resource: LimitedResource): Promise<number> {
  let held = 0;
  for (const table of TABLES[resource]) {
    const row = await db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number | string | bigint>().as('n'))
      .where('user_id', '=', userId)
      .executeTakeFirstOrThrow();
    held += Number(row.n);
  }
  return held;
}

/**
 * Locks the account's row (a write of nothing) until the transaction ends. A transaction that counts against a limit
 * takes it; one that may also lock a source's, workflow's or webhook's row takes it first, before those, so that two
 * such transactions never wait on each other in a circle (PostgreSQL's deadlock; SQLite has one writer).
 */
export async function lockAccount(trx: Transaction<Database>, userId: string): Promise<void> {
  await trx
    .updateTable('users')
    .set((eb) => ({ id: eb.ref('id') }))
    .where('id', '=', userId)
    .execute();
}

/**
 * How many of `resource` the account holds. The account's row is locked first, so on PostgreSQL two creates of one
 * account cannot both count below the limit and both insert.
 */
export async function countHeldLocked(trx: Transaction<Database>, userId: string, resource: LimitedResource): Promise<number> {
  await lockAccount(trx, userId);
  return countHeld(trx, userId, resource);
}
