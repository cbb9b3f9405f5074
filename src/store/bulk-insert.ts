// Multi-row inserts for the hot path, compiled by hand: Kysely's query builder costs more per row than SQLite.
import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import type { DialectName } from './database.js';
import type { Database } from './schema.js';

/** Rows per statement; keeps the bound parameters well under both databases' limits. */
const ROWS_PER_STATEMENT = 500;

/**
 * Inserts rows (all with the same columns, in `columns` order) into `table`. The SQL for a given table and row
 * count is always the same string, so SQLite's prepared-statement cache serves it.
 */
export async function bulkInsert<T extends keyof Database & string>(
  db: Kysely<Database> | Transaction<Database>,
  dialect: DialectName,
  table: T,
  columns: ReadonlyArray<keyof Database[T] & string>,
  rows: ReadonlyArray<Database[T]>,
): Promise<void> {
  const columnList = columns.map((c) => `"${c}"`).join(', ');
  for (let start = 0; start < rows.length; start += ROWS_PER_STATEMENT) {
    const chunk = rows.slice(start, start + ROWS_PER_STATEMENT);
    const parameters: unknown[] = [];
    const tuples: string[] = [];
    for (const row of chunk) {
      const marks: string[] = [];
      for (const column of columns) {
        parameters.push(row[column]);
        marks.push(dialect === 'postgres' ? `$${parameters.length}` : '?');
      }
      tuples.push(`(${marks.join(', ')})`);
    }
    await db.executeQuery(CompiledQuery.raw(`insert into "${table}" (${columnList}) values ${tuples.join(', ')}`, parameters));
  }
}
