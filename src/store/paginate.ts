// Runs a keyset-paginated query over a table whose `id` column sorts by creation (newest first in lists).
import type { SelectQueryBuilder } from 'kysely';
import { decodeCursor, type Page, type PageRequest, resolveHead, toPage } from '../model/pagination.js';
import { isId, type IdPrefix } from '../model/ids.js';

/**
 * `base` must select from the table with all filters applied and no order or limit; `count` is the same
 * filter counting rows. Rows are returned newest first.
 */
export async function paginateById<DB, TB extends keyof DB, Row extends { id: string }>(
  base: SelectQueryBuilder<DB, TB, Row>,
  count: () => Promise<number>,
  prefix: IdPrefix,
  asked: PageRequest,
): Promise<Page<Row>> {
  const page = resolveHead(asked);
  if (page === 'empty') return toPage<Row>([], await count(), (row) => row.id, asked);
  const valid = (key: string) => isId(key, prefix);
  // biome-ignore lint/suspicious/noExplicitAny: Kysely cannot prove `id` exists on an arbitrary table; Row guarantees it.
  const idColumn = 'id' as any;
  let rows: Row[];
  if (page.before !== undefined) {
    const key = decodeCursor(page.before, valid);
    rows = (await base.where(idColumn, '>', key).orderBy(idColumn, 'asc').limit(page.limit).execute()).reverse();
  } else if (page.after !== undefined) {
    const key = decodeCursor(page.after, valid);
    rows = await base.where(idColumn, '<', key).orderBy(idColumn, 'desc').limit(page.limit).execute();
  } else {
    rows = await base.orderBy(idColumn, 'desc').limit(page.limit).execute();
  }
  return toPage(rows, await count(), (row) => row.id, asked);
}
