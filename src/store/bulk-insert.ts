// Multi-row inserts for the hot path, compiled by hand: Kysely's query builder costs more per row than SQLite.
import type { Kysely, Transaction } from 'kysely';
import { LRUCache } from 'lru-cache';
import { runCompiled } from './compiled.js';
import type { DialectName } from './database.js';
import type { Database } from './schema.js';

/** Rows per statement; keeps the bound parameters well under both databases' limits. */
export const ROWS_PER_STATEMENT = 500;

/** Shapes kept at most; the least recently used goes first. */
const MAX_SHAPES = 2000;
/** The SQL of each shape (dialect, table, columns, row count) seen: inserts of a hot path repeat a few shapes. */
const sqlByShape = new LRUCache<string, string>({ max: MAX_SHAPES });

function insertSql(dialect: DialectName, table: string, columns: readonly string[], rowCount: number): string {
  const shape = `${dialect}/${table}/${columns.join(',')}/${rowCount}`;
  let sql = sqlByShape.get(shape);
  if (sql === undefined) {
    const tuples: string[] = [];
    let parameter = 0;
    for (let row = 0; row < rowCount; row++) {
      tuples.push(`(${columns.map(() => (dialect === 'postgres' ? `$${++parameter}` : '?')).join(', ')})`);
    }
    sql = `insert into "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) values ${tuples.join(', ')}`;
    sqlByShape.set(shape, sql);
  }
  return sql;
}

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
  for (let start = 0; start < rows.length; start += ROWS_PER_STATEMENT) {
    const end = Math.min(rows.length, start + ROWS_PER_STATEMENT);
    const parameters: unknown[] = [];
    for (let i = start; i < end; i++) {
      const row = rows[i]!;
      for (const column of columns) parameters.push(row[column]);
    }
    await runCompiled(db, insertSql(dialect, table, columns, end - start), parameters);
  }
}
