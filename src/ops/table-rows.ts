// How migrate-store reads a table's rows in key order, and sums them into a checksum both databases give alike.
import { createHash } from 'node:crypto';
import type SQLite from 'better-sqlite3';

export interface TableShape {
  readonly name: string;
  readonly columns: string[];
  readonly key: string[];
  /** How each column's values are written into the checksum, from the target's column types. */
  readonly kinds: Kind[];
}

export type Kind = 'int' | 'float' | 'text';

export const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

export function kindOf(postgresType: string): Kind {
  if (['bigint', 'integer', 'smallint'].includes(postgresType)) return 'int';
  if (['double precision', 'real', 'numeric'].includes(postgresType)) return 'float';
  return 'text';
}

/** One row as text both databases give alike: integers (bigint in SQLite, text from pg) as digits, floats as JS prints them. */
export function rowText(values: unknown[], kinds: Kind[]): string {
  return JSON.stringify(
    values.map((value, i) => {
      if (value === null || value === undefined) return null;
      if (kinds[i] === 'int') return `i${String(value)}`;
      if (kinds[i] === 'float') return `f${String(Number(value))}`;
      return `t${Buffer.isBuffer(value) ? value.toString('base64') : String(value)}`;
    }),
  );
}

/**
 * A checksum that does not depend on the order rows are read in (the two databases sort text differently): the sum,
 * modulo 2^256, of each row's sha256. Rows are unique by their primary key, so no two cancel or collide by design.
 */
export class Checksum {
  private sum = 0n;
  rows = 0;
  add(text: string): void {
    this.sum = (this.sum + BigInt(`0x${createHash('sha256').update(text).digest('hex')}`)) & ((1n << 256n) - 1n);
    this.rows++;
  }
  get value(): string {
    return this.sum.toString(16).padStart(64, '0');
  }
}

/** The SQLite table's rows in key order, `size` at a time (raw, integers as bigint): each batch starts after the last key. */
export function* sourceBatches(source: SQLite.Database, table: TableShape, size: number): Generator<unknown[][]> {
  const columns = table.columns.map(quote).join(', ');
  const key = table.key.map(quote).join(', ');
  const first = source
    .prepare(`select ${columns} from ${quote(table.name)} order by ${key} limit ?`)
    .raw(true)
    .safeIntegers(true);
  const next = source
    .prepare(`select ${columns} from ${quote(table.name)} where (${key}) > (${table.key.map(() => '?').join(', ')}) order by ${key} limit ?`)
    .raw(true)
    .safeIntegers(true);
  const keyIndexes = table.key.map((k) => table.columns.indexOf(k));
  let last: unknown[] | undefined;
  for (;;) {
    const rows = (last ? next.all(...keyIndexes.map((i) => last![i]), size) : first.all(size)) as unknown[][];
    if (rows.length === 0) return;
    yield rows;
    if (rows.length < size) return;
    last = rows.at(-1);
  }
}

/** The checksum of the SQLite table as it is now, as a copy of it would record. */
export function sourceChecksum(source: SQLite.Database, table: TableShape, size: number): { rows: number; checksum: string } {
  const checksum = new Checksum();
  for (const rows of sourceBatches(source, table, size)) for (const row of rows) checksum.add(rowText(row, table.kinds));
  return { rows: checksum.rows, checksum: checksum.value };
}
