// Queries on the users table.
import type { Kysely, Selectable } from 'kysely';
import type { Database, UsersTable } from './schema.js';

export type UserRow = Selectable<UsersTable>;

/** Inserts the user unless its username is taken (also by a concurrent insert); returns whether it did. */
export async function insertUser(db: Kysely<Database>, row: UserRow): Promise<boolean> {
  const result = await db
    .insertInto('users')
    .values(row)
    .onConflict((oc) => oc.column('username').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) === 1;
}

export function findUserByKeyHash(db: Kysely<Database>, hash: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('api_key_hash', '=', hash).executeTakeFirst();
}

export function findUserByIdOrUsername(db: Kysely<Database>, idOrUsername: string): Promise<UserRow | undefined> {
  return db
    .selectFrom('users')
    .selectAll()
    .where((eb) => eb.or([eb('id', '=', idOrUsername), eb('username', '=', idOrUsername)]))
    .executeTakeFirst();
}

export function listAllUsers(db: Kysely<Database>): Promise<UserRow[]> {
  return db.selectFrom('users').selectAll().orderBy('id', 'asc').execute();
}

export async function countUsers(db: Kysely<Database>): Promise<number> {
  const row = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The current key hash of each of these accounts (a deleted account is absent). */
export async function keyHashesOf(db: Kysely<Database>, ids: readonly string[]): Promise<Map<string, string>> {
  if (!ids.length) return new Map();
  const rows = await db
    .selectFrom('users')
    .select(['id', 'api_key_hash'])
    .where('id', 'in', [...ids])
    .execute();
  return new Map(rows.map((row) => [row.id, row.api_key_hash]));
}

export async function setUserKeyHash(db: Kysely<Database>, id: string, hash: string, now: number): Promise<void> {
  await db.updateTable('users').set({ api_key_hash: hash, updated_at: now }).where('id', '=', id).execute();
}
