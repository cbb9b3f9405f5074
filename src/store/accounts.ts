// Queries on connected accounts (apps' credentials) and on the sources and workflows whose props name one.
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Page, PageRequest } from '../model/pagination.js';
import type { DialectName } from './database.js';
import type { ConnectedAccountsTable, Database } from './schema.js';
import { paginateById } from './paginate.js';

export type ConnectedAccountRow = Selectable<ConnectedAccountsTable>;
type Db = Kysely<Database> | Transaction<Database>;

/** A source or workflow whose configured props name a connected account. */
export interface AccountUser {
  id: string;
  name: string;
  active: boolean;
}

export async function insertConnectedAccount(db: Db, row: ConnectedAccountRow): Promise<void> {
  await db.insertInto('connected_accounts').values(row).execute();
}

export function findConnectedAccount(db: Db, userId: string, id: string): Promise<ConnectedAccountRow | undefined> {
  return db.selectFrom('connected_accounts').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
}

/** The account's connected accounts among `ids` (others' ids find nothing). */
export async function findConnectedAccounts(db: Db, userId: string, ids: string[]): Promise<ConnectedAccountRow[]> {
  if (!ids.length) return [];
  return db.selectFrom('connected_accounts').selectAll().where('user_id', '=', userId).where('id', 'in', ids).execute();
}

export function listConnectedAccounts(db: Kysely<Database>, userId: string, page: PageRequest): Promise<Page<ConnectedAccountRow>> {
  const base = db.selectFrom('connected_accounts').selectAll().where('user_id', '=', userId);
  const count = async () =>
    Number(
      (
        await db
          .selectFrom('connected_accounts')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('user_id', '=', userId)
          .executeTakeFirstOrThrow()
      ).n,
    );
  return paginateById(base, count, 'apn', page);
}

/**
 * Writes only the columns given, so that a rename and a rotation at the same time both land. False when the
 * account is gone (deleted meanwhile).
 */
export async function updateConnectedAccount(
  db: Db,
  userId: string,
  id: string,
  changes: Partial<Pick<ConnectedAccountRow, 'name' | 'credentials' | 'fields' | 'healthy' | 'updated_at'>>,
): Promise<boolean> {
  const result = await db.updateTable('connected_accounts').set(changes).where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Changes the account only if its sealed credentials are still `sealed` (a compare-and-set): a refresh that finishes
 * after a rotation must not put the old credentials back. False when they changed or the account went.
 */
export async function updateCredentialsIf(
  db: Db,
  id: string,
  sealed: string,
  changes: Partial<Pick<ConnectedAccountRow, 'credentials' | 'fields' | 'healthy'>>,
): Promise<boolean> {
  const result = await db.updateTable('connected_accounts').set(changes).where('id', '=', id).where('credentials', '=', sealed).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** False when there was no such account (a concurrent delete took it). */
export async function deleteConnectedAccount(db: Db, userId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('connected_accounts').where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/**
 * The account's connected account, locked until the transaction ends on PostgreSQL (FOR UPDATE: deploys naming it
 * wait, see holdConnectedAccounts), for a delete that must first see every source and workflow naming it.
 */
export function lockConnectedAccount(trx: Transaction<Database>, dialect: DialectName, userId: string, id: string): Promise<ConnectedAccountRow | undefined> {
  const query = trx.selectFrom('connected_accounts').selectAll().where('id', '=', id).where('user_id', '=', userId);
  return (dialect === 'postgres' ? query.forUpdate() : query).executeTakeFirst();
}

/**
 * Holds the account's connected accounts among `ids` until the transaction ends (FOR KEY SHARE on PostgreSQL: a
 * delete waits for it, a rename or rotation does not) and returns the ids it has no account of (any more).
 */
export async function holdConnectedAccounts(trx: Transaction<Database>, dialect: DialectName, userId: string, ids: string[]): Promise<string[]> {
  const unique = [...new Set(ids)];
  if (!unique.length) return [];
  const query = trx.selectFrom('connected_accounts').select('id').where('user_id', '=', userId).where('id', 'in', unique);
  const found = new Set((await (dialect === 'postgres' ? query.forKeyShare() : query).execute()).map((row) => row.id));
  return unique.filter((id) => !found.has(id));
}

/** The connected account ids that configured props name: `{ authProvisionId: id }` values, as `names` reads them. */
export function accountIdsNamed(props: Record<string, unknown>): string[] {
  return Object.values(props).flatMap((value) => {
    const id = typeof value === 'object' && value !== null ? (value as { authProvisionId?: unknown }).authProvisionId : undefined;
    return typeof id === 'string' ? [id] : [];
  });
}

/** True when one of the props is an app prop's value naming the account: `{ authProvisionId: id }`. */
function names(props: Record<string, unknown>, accountId: string): boolean {
  return Object.values(props).some(
    (value) => typeof value === 'object' && value !== null && (value as { authProvisionId?: unknown }).authProvisionId === accountId,
  );
}

/**
 * The account's sources whose configured props name the connected account. The text match narrows the rows
 * down in the database (ids are unique, `_` matching any character only widens it); the parse decides.
 */
export async function sourcesNaming(db: Db, userId: string, accountId: string): Promise<AccountUser[]> {
  const rows = await db
    .selectFrom('sources')
    .select(['id', 'name', 'active', 'configured_props'])
    .where('user_id', '=', userId)
    .where('configured_props', 'like', `%${accountId}%`)
    .orderBy('id', 'asc')
    .execute();
  return rows
    .filter((row) => names(JSON.parse(row.configured_props) as Record<string, unknown>, accountId))
    .map((row) => ({ id: row.id, name: row.name, active: row.active === 1 }));
}

/** The account's workflows with a step whose configured props name the connected account. */
export async function workflowsNaming(db: Db, userId: string, accountId: string): Promise<AccountUser[]> {
  const rows = await db
    .selectFrom('workflows')
    .select(['id', 'name', 'active', 'steps'])
    .where('user_id', '=', userId)
    .where('steps', 'like', `%${accountId}%`)
    .orderBy('id', 'asc')
    .execute();
  return rows
    .filter((row) => (JSON.parse(row.steps) as Array<{ configured_props: Record<string, unknown> }>).some((step) => names(step.configured_props, accountId)))
    .map((row) => ({ id: row.id, name: row.name, active: row.active === 1 }));
}
