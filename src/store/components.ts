// Queries on the components table (saved components and the global registry, whose user_id is null).
import type { ComponentInfo } from '../runtime/types.js';
import type { Kysely, Selectable } from 'kysely';
import type { ComponentsTable, Database } from './schema.js';

export type ComponentRow = Selectable<ComponentsTable>;

export async function insertComponent(db: Kysely<Database>, row: ComponentRow): Promise<void> {
  await db.insertInto('components').values(row).execute();
}

export function findComponentById(db: Kysely<Database>, userId: string, id: string): Promise<ComponentRow | undefined> {
  return db.selectFrom('components').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
}

/** Any component by id regardless of owner; for the engine, which already holds an owned reference. */
export function loadComponent(db: Kysely<Database>, id: string): Promise<ComponentRow | undefined> {
  return db.selectFrom('components').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The latest component with this key in the account, or in the registry when `userId` is null. */
export function findLatestByKey(db: Kysely<Database>, userId: string | null, key: string): Promise<ComponentRow | undefined> {
  let query = db.selectFrom('components').selectAll().where('key', '=', key);
  query = userId === null ? query.where('user_id', 'is', null) : query.where('user_id', '=', userId);
  return query.orderBy('id', 'desc').limit(1).executeTakeFirst();
}

export function findRegistryVersion(db: Kysely<Database>, key: string, version: string): Promise<ComponentRow | undefined> {
  return db.selectFrom('components').selectAll().where('user_id', 'is', null).where('key', '=', key).where('version', '=', version).executeTakeFirst();
}

/** What loading the component in the sandbox learned of it (props, hooks, dedupe), stored with its row. */
export function componentInfo(row: ComponentRow): ComponentInfo {
  return (JSON.parse(row.metadata) as { info: ComponentInfo }).info;
}
