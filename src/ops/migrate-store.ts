// `tributary migrate-store`: moves a stopped data directory's SQLite database into PostgreSQL, table by table, verified and resumable.
import fs from 'node:fs';
import path from 'node:path';
import type SQLite from 'better-sqlite3';
import { openSqliteFile } from '../store/sqlite-file.js';
import pg from 'pg';
import { lockDataDir } from '../store/data-dir-lock.js';
import { refuseInterruptedRestore } from '../store/interrupted-restore.js';
import { openStore } from '../store/database.js';
import { OpsError, OpsInterruptedError } from './ops-error.js';
import { checkSource, checkTarget, PROGRESS_TABLE, tableNames } from './migrate-store-checks.js';
import { Checksum, kindOf, quote, rowText, sourceBatches, sourceChecksum, type TableShape } from './table-rows.js';

/** Kysely's own bookkeeping: the target gets its own from running the migrations. */
const SKIPPED_TABLES = new Set(['kysely_migration', 'kysely_migration_lock']);

export interface TableReport {
  readonly table: string;
  readonly rows: number;
  /** sha256-based checksum of the rows, the same on both databases. */
  readonly checksum: string;
  /** Verified by an earlier, interrupted run: not copied again. */
  readonly resumed: boolean;
}

export interface MigrateStoreOptions {
  readonly dataDir: string;
  readonly to: string;
  readonly force: boolean;
  /** Rows read and inserted per statement. */
  readonly batchSize?: number;
  readonly onProgress?: (table: string, copied: number, total: number) => void;
  readonly onTable?: (report: TableReport) => void;
  /** Resuming: `table`, verified by the interrupted run, has changed in the source since; it and those after it are copied again. */
  readonly onChanged?: (table: string) => void;
  /** Tests: stop (throw) once this many batches have been written, as an interrupted run would. */
  readonly stopAfterBatches?: number;
  /** Aborted (the command's Ctrl-C or SIGTERM): the copy stops between two batches, keeping the tables verified. */
  readonly signal?: AbortSignal;
}

/**
 * Copies every table of `<dataDir>/tributary.db` into the PostgreSQL database `to` in primary-key order, in batches,
 * then checks the target's row count and checksum against the source's. The server must be stopped (the data
 * directory's lock is held for the whole run). A target that already holds Tributary data is refused unless `force`,
 * which empties it first. Interrupted, it leaves its progress table on the target; run again, it keeps the tables
 * already verified and copies the others again from the start.
 */
export async function migrateStore(options: MigrateStoreOptions): Promise<TableReport[]> {
  const dataDir = path.resolve(options.dataDir);
  const file = path.join(dataDir, 'tributary.db');
  if (!fs.existsSync(file)) throw new OpsError(`no Tributary database at ${file}: check --data-dir`);
  const lock = lockDataDir(dataDir, 'stop it first (SIGTERM, and wait until it has exited), then run migrate-store again', 'migrate-store');
  try {
    // A killed restore's copy beside it: the database to move may not be the one the operator means.
    refuseInterruptedRestore(dataDir);
    // Both databases are read, only, until both have passed: a refusal changes neither.
    await checkSource(file);
    await checkTarget(options.to, options.force);
    // Brings the source up to this build's schema, as starting the server would.
    const sourceStore = await openStore({ dataDir, migrate: true });
    await sourceStore.close();
    // The target gets the same schema, under the migrations' lock.
    const targetStore = await openStore({ dataDir, databaseUrl: options.to, migrate: true });
    await targetStore.close();
    const source = openSqliteFile(file, { readonly: true, fileMustExist: true });
    const target = new pg.Client({ connectionString: options.to });
    await target.connect();
    try {
      return await copyAll(source, target, options);
    } finally {
      source.close();
      await target.end();
    }
  } finally {
    lock.release();
  }
}

async function copyAll(source: SQLite.Database, target: pg.Client, options: MigrateStoreOptions): Promise<TableReport[]> {
  const tables = await tableShapes(source, target);
  // A target holding data was refused before anything was written (checkTarget), unless forced.
  if (options.force) {
    await target.query(`truncate ${tables.map((t) => quote(t.name)).join(', ')} cascade`);
    await target.query(`drop table if exists ${PROGRESS_TABLE}`);
  }
  await target.query(`create table if not exists ${PROGRESS_TABLE} (table_name text primary key, row_count bigint not null, checksum text not null)`);
  const verified = new Map(
    (await target.query<{ table_name: string; row_count: string; checksum: string }>(`select table_name, row_count, checksum from ${PROGRESS_TABLE}`)).rows.map(
      (r) => [r.table_name, r],
    ),
  );
  await forgetChanged(source, target, tables, verified, options);
  const reports: TableReport[] = [];
  const budget = {
    batches: options.stopAfterBatches ?? Number.POSITIVE_INFINITY,
    // Said once the connection is closed and the lock released: what is kept, and how to go on.
    stopIfAsked: () => {
      if (!options.signal?.aborted) return;
      throw new OpsInterruptedError(
        `migrate-store was interrupted: the tables verified so far (${reports.length} of ${tables.length}) stay on the target; run the same command again to copy the others`,
      );
    },
  };
  for (const table of tables) {
    const done = verified.get(table.name);
    let report: TableReport;
    if (done) {
      report = { table: table.name, rows: Number(done.row_count), checksum: done.checksum, resumed: true };
    } else {
      // Rows an interrupted run left behind are copied again; the tables after this one are not started yet.
      await target.query(`delete from ${quote(table.name)}`);
      const copied = await copyTable(source, target, table, options, budget);
      const check = await targetChecksum(target, table, options.batchSize ?? 1000);
      if (check.rows !== copied.rows || check.checksum !== copied.checksum) {
        throw new Error(
          `${table.name}: the copy does not match (source ${copied.rows} rows, checksum ${copied.checksum}; target ${check.rows} rows, checksum ${check.checksum})`,
        );
      }
      await target.query(`insert into ${PROGRESS_TABLE} (table_name, row_count, checksum) values ($1, $2, $3)`, [table.name, copied.rows, copied.checksum]);
      report = { table: table.name, rows: copied.rows, checksum: copied.checksum, resumed: false };
    }
    reports.push(report);
    options.onTable?.(report);
  }
  await target.query(`drop table ${PROGRESS_TABLE}`);
  return reports;
}

/**
 * A server may have run on the data directory since the interrupted run (or --data-dir names another one): a table
 * verified then is kept only while the source still holds exactly those rows. From the first that changed on (its
 * children come after it), every table is emptied and copied again, else the rows written meanwhile would be lost.
 */
async function forgetChanged(
  source: SQLite.Database,
  target: pg.Client,
  tables: TableShape[],
  verified: Map<string, { row_count: string; checksum: string }>,
  options: MigrateStoreOptions,
): Promise<void> {
  const changed = tables.findIndex((table) => {
    const done = verified.get(table.name);
    if (!done) return false;
    const now = sourceChecksum(source, table, options.batchSize ?? 1000);
    return now.rows !== Number(done.row_count) || now.checksum !== done.checksum;
  });
  if (changed < 0) return;
  const again = tables.slice(changed);
  options.onChanged?.(again[0]!.name);
  await target.query(`truncate ${again.map((t) => quote(t.name)).join(', ')}`);
  await target.query(`delete from ${PROGRESS_TABLE} where table_name = any($1)`, [again.map((t) => t.name)]);
  for (const table of again) verified.delete(table.name);
}

/** Every table of the source but Kysely's, parents before the tables whose foreign keys name them. */
async function tableShapes(source: SQLite.Database, target: pg.Client): Promise<TableShape[]> {
  const names = tableNames(source).filter((name) => !SKIPPED_TABLES.has(name));
  const parents = new Map(names.map((name) => [name, (source.pragma(`foreign_key_list(${quote(name)})`) as { table: string }[]).map((f) => f.table)]));
  const ordered: string[] = [];
  const visit = (name: string, path: string[]) => {
    if (ordered.includes(name)) return;
    if (path.includes(name)) throw new Error(`foreign keys form a cycle: ${[...path, name].join(' → ')}`);
    for (const parent of parents.get(name) ?? []) if (parent !== name && names.includes(parent)) visit(parent, [...path, name]);
    ordered.push(name);
  };
  for (const name of names) visit(name, []);
  const targetColumns = await target.query<{ table_name: string; column_name: string; data_type: string }>(
    'select table_name, column_name, data_type from information_schema.columns where table_schema = current_schema()',
  );
  return ordered.map((name) => {
    const info = source.pragma(`table_info(${quote(name)})`) as { name: string; pk: number }[];
    const columns = info.map((c) => c.name);
    const key = info
      .filter((c) => c.pk > 0)
      .sort((a, b) => a.pk - b.pk)
      .map((c) => c.name);
    const kinds = columns.map((column) => {
      const type = targetColumns.rows.find((r) => r.table_name === name && r.column_name === column)?.data_type;
      if (type === undefined) throw new Error(`the target has no column ${name}.${column}: its schema is not the one this Tributary writes`);
      return kindOf(type);
    });
    return { name, columns, key: key.length > 0 ? key : columns, kinds };
  });
}

async function copyTable(
  source: SQLite.Database,
  target: pg.Client,
  table: TableShape,
  options: MigrateStoreOptions,
  budget: { batches: number; stopIfAsked: () => void },
): Promise<{ rows: number; checksum: string }> {
  const size = options.batchSize ?? 1000;
  const total = (source.prepare(`select count(*) as n from ${quote(table.name)}`).get() as { n: number }).n;
  const checksum = new Checksum();
  options.onProgress?.(table.name, 0, total);
  for (const rows of sourceBatches(source, table, size)) {
    if (budget.batches <= 0) throw new Error('stopped after the given number of batches');
    budget.stopIfAsked();
    await insertRows(target, table, rows);
    budget.batches--;
    for (const row of rows) checksum.add(rowText(row, table.kinds));
    options.onProgress?.(table.name, checksum.rows, total);
  }
  return { rows: checksum.rows, checksum: checksum.value };
}

async function insertRows(target: pg.Client, table: TableShape, rows: unknown[][]): Promise<void> {
  const width = table.columns.length;
  const values: unknown[] = [];
  const tuples = rows.map((row, r) => {
    for (const value of row) values.push(typeof value === 'bigint' ? value.toString() : value);
    return `(${row.map((_, c) => `$${r * width + c + 1}`).join(', ')})`;
  });
  await target.query(`insert into ${quote(table.name)} (${table.columns.map(quote).join(', ')}) values ${tuples.join(', ')}`, values);
}

/** Reads the target table back in its own key order, in batches, into the same checksum. */
async function targetChecksum(target: pg.Client, table: TableShape, size: number): Promise<{ rows: number; checksum: string }> {
  const columns = table.columns.map(quote).join(', ');
  const key = table.key.map(quote).join(', ');
  const keyIndexes = table.key.map((k) => table.columns.indexOf(k));
  const checksum = new Checksum();
  let last: unknown[] | undefined;
  for (;;) {
    const where = last ? `where (${key}) > (${table.key.map((_, i) => `$${i + 1}`).join(', ')})` : '';
    const params = last ? keyIndexes.map((i) => last![i]) : [];
    const result = await target.query({
      text: `select ${columns} from ${quote(table.name)} ${where} order by ${key} limit ${size}`,
      values: params,
      rowMode: 'array',
      // Every value as the text PostgreSQL sends: no number is rounded on the way.
      types: { getTypeParser: () => (value: string) => value },
    });
    const rows = result.rows as unknown[][];
    for (const row of rows) checksum.add(rowText(row, table.kinds));
    if (rows.length < size) break;
    last = rows.at(-1);
  }
  return { rows: checksum.rows, checksum: checksum.value };
}
