// Queries on webhooks: create, read within an account, list newest first, change, deactivate, delete.
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Page, PageRequest } from '../model/pagination.js';
import type { Database, WebhooksTable } from './schema.js';
import { paginateById } from './paginate.js';
import { compiledOnce } from './compiled.js';

export type WebhookRow = Selectable<WebhooksTable>;
type Db = Kysely<Database> | Transaction<Database>;

export async function insertWebhook(db: Db, row: WebhookRow): Promise<void> {
  await db.insertInto('webhooks').values(row).execute();
}

export function findWebhook(db: Db, userId: string, id: string): Promise<WebhookRow | undefined> {
  return db.selectFrom('webhooks').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
}

/** The sealed signing secret of the newest webhook of any account: a sample of what this database's key sealed. */
export async function newestWebhookSecret(db: Db): Promise<Pick<WebhookRow, 'id' | 'user_id' | 'secret'> | undefined> {
  return await db.selectFrom('webhooks').select(['id', 'user_id', 'secret']).orderBy('id', 'desc').limit(1).executeTakeFirst();
}

const selectActiveWebhooks = compiledOnce(
  'activeWebhooks',
  (db, userId: string, ids: string[]) => db.selectFrom('webhooks').selectAll().where('user_id', '=', userId).where('id', 'in', ids).where('active', '=', 1),
  (userId, ids) => [userId, ...ids, 1],
);

/** The account's active webhooks among `ids` (listeners of a commit). */
export async function activeWebhooks(db: Db, userId: string, ids: string[]): Promise<WebhookRow[]> {
  if (!ids.length) return [];
  return (await selectActiveWebhooks(db, userId, ids)).rows;
}

export function listWebhooks(db: Kysely<Database>, userId: string, page: PageRequest): Promise<Page<WebhookRow>> {
  const base = db.selectFrom('webhooks').selectAll().where('user_id', '=', userId);
  const count = async () =>
    Number(
      (
        await db
          .selectFrom('webhooks')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('user_id', '=', userId)
          .executeTakeFirstOrThrow()
      ).n,
    );
  return paginateById(base, count, 'wh', page);
}

/** Whether the webhook is there and active: read in an attempt's record, as a 410 may have retired it meanwhile. */
export async function webhookIsActive(db: Db, id: string): Promise<boolean> {
  const row = await db.selectFrom('webhooks').select('active').where('id', '=', id).executeTakeFirst();
  return row?.active === 1;
}

/** Fields a webhook's owner may change. */
export type WebhookChanges = Partial<Pick<WebhookRow, 'name' | 'description' | 'active'>>;

export async function updateWebhook(db: Db, id: string, changes: WebhookChanges & { updated_at: number }): Promise<void> {
  await db.updateTable('webhooks').set(changes).where('id', '=', id).execute();
}

export async function deactivateWebhook(db: Db, id: string, nowSeconds: number): Promise<void> {
  await db.updateTable('webhooks').set({ active: 0, updated_at: nowSeconds }).where('id', '=', id).execute();
}

/** Removes a webhook with its delivery queue and log, and every subscription naming it. */
export async function deleteWebhookCascade(db: Db, id: string): Promise<void> {
  // Its deliveries first: a commit recording one of its attempts holds that row and may then queue the webhook's next
  // delivery, which waits on the webhook's row; deleting that row first made the two wait on each other. Then the
  // webhook's row, before its subscriptions, as subscribing to it locks it (lockOwnedEndpoint): the two take turns.
  // Deliveries queued meanwhile go with the webhook's row (the foreign key cascades).
  await db.deleteFrom('webhook_deliveries').where('webhook_id', '=', id).execute();
  await db.deleteFrom('webhooks').where('id', '=', id).execute();
  await db.deleteFrom('subscriptions').where('listener_id', '=', id).execute();
  await db.deleteFrom('auto_subscriptions').where('listener_id', '=', id).execute();
}
