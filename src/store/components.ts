// Queries on the components table (saved components and the global registry, whose user_id is null) and on the
// versions accounts published.
import type { ComponentInfo } from '../runtime/types.js';
import type { Kysely, Selectable } from 'kysely';
import type { ComponentsTable, Database, PublishedComponentsTable } from './schema.js';
import type { Page, PageRequest } from '../model/pagination.js';
import { paginateById } from './paginate.js';

export type ComponentRow = Selectable<ComponentsTable>;
export type PublishedComponentRow = Selectable<PublishedComponentsTable>;

export async function insertComponent(db: Kysely<Database>, row: ComponentRow): Promise<void> {
  await db.insertInto('components').values(row).execute();
}

/** A component of the account, or a published registry component (public: any account may read and deploy it). */
export async function findComponentById(db: Kysely<Database>, userId: string, id: string): Promise<ComponentRow | undefined> {
  // Read by id alone and owned here: an `or` in the query costs Kysely's expression builder 10 µs per deploy.
  const row = await db.selectFrom('components').selectAll().where('id', '=', id).executeTakeFirst();
  return row && (row.user_id === userId || row.user_id === null) ? row : undefined;
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

/** Records a published version; false when the account already published this version of the key. */
export async function insertPublished(db: Kysely<Database>, row: PublishedComponentRow): Promise<boolean> {
  const result = await db
    .insertInto('published_components')
    .values(row)
    .onConflict((oc) => oc.columns(['user_id', 'key', 'version']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) === 1;
}

/** Every version of a key the account published, with the component each one names. */
export function publishedVersions(db: Kysely<Database>, userId: string, key: string): Promise<Array<{ version: string; component_id: string }>> {
  return db.selectFrom('published_components').select(['version', 'component_id']).where('user_id', '=', userId).where('key', '=', key).execute();
}

/** The account's saved components (its own code, code steps included), newest first. */
export function listComponents(db: Kysely<Database>, userId: string, page: PageRequest): Promise<Page<ComponentRow>> {
  const base = db.selectFrom('components').selectAll().where('user_id', '=', userId);
  const count = async () =>
    Number(
      (
        await base
          .clearSelect()
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return paginateById(base, count, 'sc', page);
}
