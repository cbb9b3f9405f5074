// Queries on sources and on what belongs to them ($.service.db rows, emitter state).
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Page, PageRequest } from '../model/pagination.js';
import { withAdditionalProps } from '../model/props.js';
import type { ComponentInfo, PropDescriptor } from '../runtime/types.js';
import type { Database, SourcesTable } from './schema.js';
import { paginateById } from './paginate.js';
import { splitDbWrites } from './db-writes.js';

export type SourceRow = Selectable<SourcesTable>;
type Db = Kysely<Database> | Transaction<Database>;

/** The props `additionalProps()` added for the source's configured values; undefined when none were computed. */
export function additionalPropsOf(row: Pick<SourceRow, 'additional_props'>): PropDescriptor[] | undefined {
  return row.additional_props === null ? undefined : (JSON.parse(row.additional_props) as PropDescriptor[]);
}

/** The component's info with the source's added props: what its runs, hooks, timers and API echo go by. */
export function sourceInfo(info: ComponentInfo, row: Pick<SourceRow, 'additional_props'>): ComponentInfo {
  const additional = additionalPropsOf(row);
  return additional?.length ? { ...info, props: withAdditionalProps(info.props, additional) } : info;
}

export async function insertSource(db: Db, row: SourceRow): Promise<void> {
  await db.insertInto('sources').values(row).execute();
}

export async function updateSource(db: Db, id: string, changes: Partial<Omit<SourceRow, 'id' | 'user_id'>>): Promise<void> {
  await db.updateTable('sources').set(changes).where('id', '=', id).execute();
}

export function findSource(db: Db, userId: string, id: string): Promise<SourceRow | undefined> {
  return db.selectFrom('sources').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
}

/** A source by id regardless of owner, for the engine (which got the id from an owned trigger). */
export function loadSource(db: Db, id: string): Promise<SourceRow | undefined> {
  return db.selectFrom('sources').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findSourceByEndpoint(db: Db, endpointId: string): Promise<SourceRow | undefined> {
  return db.selectFrom('sources').selectAll().where('endpoint_id', '=', endpointId).executeTakeFirst();
}

export function listSources(db: Kysely<Database>, userId: string, page: PageRequest): Promise<Page<SourceRow>> {
  const base = db.selectFrom('sources').selectAll().where('user_id', '=', userId);
  const count = async () =>
    Number(
      (
        await db
          .selectFrom('sources')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('user_id', '=', userId)
          .executeTakeFirstOrThrow()
      ).n,
    );
  return paginateById(base, count, 'dc', page);
}

export async function slugTaken(db: Db, userId: string, slug: string): Promise<boolean> {
  const row = await db.selectFrom('sources').select('id').where('user_id', '=', userId).where('name_slug', '=', slug).executeTakeFirst();
  return row !== undefined;
}

/** How many slugs of the account look like `base-…`; the next free `base-N` is usually just past it. */
export async function countSuffixedSlugs(db: Db, userId: string, base: string): Promise<number> {
  const row = await db
    .selectFrom('sources')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('user_id', '=', userId)
    .where('name_slug', 'like', `${base}-%`)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** True for the error a second source with the same slug in an account raises, on either dialect. */
export function isSlugConflict(error: unknown): boolean {
  const e = error as { code?: string; constraint?: string; message?: string };
  return (e.code === '23505' && e.constraint === 'sources_user_slug') || /UNIQUE constraint failed: sources\.user_id, sources\.name_slug/.test(e.message ?? '');
}

/** Removes a source and everything that belongs to it. */
export async function deleteSourceCascade(db: Db, id: string): Promise<void> {
  // The source's row is locked first, as subscribing to or from it locks it (lockOwnedEndpoint): the two take turns.
  await db.updateTable('sources').set({ active: 0 }).where('id', '=', id).execute();
  await db.deleteFrom('invocations').where('source_id', '=', id).execute();
  await db.deleteFrom('timers').where('source_id', '=', id).execute();
  await db.deleteFrom('events').where('emitter_id', '=', id).execute();
  await db.deleteFrom('emitter_state').where('emitter_id', '=', id).execute();
  await db.deleteFrom('source_db').where('source_id', '=', id).execute();
  await db
    .deleteFrom('subscriptions')
    .where((eb) => eb.or([eb('emitter_id', '=', id), eb('listener_id', '=', id)]))
    .execute();
  await db.deleteFrom('auto_subscriptions').where('listener_id', '=', id).execute();
  await db.deleteFrom('sources').where('id', '=', id).execute();
}

export async function readSourceDb(db: Db, sourceId: string): Promise<Record<string, unknown>> {
  const rows = await db.selectFrom('source_db').select(['key', 'value']).where('source_id', '=', sourceId).execute();
  return Object.fromEntries(rows.map((r) => [r.key, JSON.parse(r.value)]));
}

/** A key whose value is undefined is removed (`$.service.db` set to undefined), as JSON would leave it out. */
export async function writeSourceDb(db: Db, sourceId: string, writes: Record<string, unknown>): Promise<void> {
  const { removedSlices, upsertSlices } = splitDbWrites(writes);
  for (const keys of removedSlices) await db.deleteFrom('source_db').where('source_id', '=', sourceId).where('key', 'in', keys).execute();
  for (const upserts of upsertSlices) {
    await db
      .insertInto('source_db')
      .values(upserts.map(({ key, value }) => ({ source_id: sourceId, key, value })))
      .onConflict((oc) => oc.columns(['source_id', 'key']).doUpdateSet((eb) => ({ value: eb.ref('excluded.value') })))
      .execute();
  }
}
