// Statements of the commit path compiled once: Kysely builds and compiles every query anew, which there costs more than running it.
import { isDeepStrictEqual } from 'node:util';
import type SQLite from 'better-sqlite3';
import { CompiledQuery, type Compilable, type Kysely, type QueryResult, type Transaction } from 'kysely';
import { codeOf } from '../model/outages.js';
import type { Database } from './schema.js';
import { waitingForLock } from './sqlite-busy.js';

type Db = Kysely<Database> | Transaction<Database>;

/**
 * A statement built by `build` once per dialect and number of values, then run again with the values that
 * `values` lists. Only for statements whose SQL depends on nothing else (an `in` list may vary in length). The
 * first build of each shape checks that `values` lists the values in the order the SQL binds them.
 */
export function compiledOnce<Args extends unknown[], Row>(
  name: string,
  build: (db: Db, ...args: Args) => Compilable<Row>,
  values: (...args: Args) => unknown[],
): (db: Db, ...args: Args) => Promise<QueryResult<Row>> {
  const sqlByShape = new Map<string, string>();
  return async (db, ...args) => {
    const parameters = values(...args);
    // Kysely and its transactions share the dialect's adapter, whose class names the dialect.
    const shape = `${db.getExecutor().adapter.constructor.name}/${parameters.length}`;
    let sql = sqlByShape.get(shape);
    if (sql === undefined) {
      const compiled = build(db, ...args).compile();
      if (!isDeepStrictEqual(compiled.parameters, parameters)) {
        throw new Error(`statement ${name}: values() lists ${JSON.stringify(parameters)}, the SQL binds ${JSON.stringify(compiled.parameters)}`);
      }
      sqlByShape.set(shape, (sql = compiled.sql));
    }
    return runCompiled<Row>(db, sql, parameters);
  };
}

/** Prepared statements of one SQLite connection, cached (see withStatementCache in database.ts). */
export interface SqliteStatements {
  prepare(sql: string): SQLite.Statement;
  /** Hears of a wait for another process's write lock that ran out (WriteHealthWatch). */
  gaveUpOnLock?: () => void;
}

/** SQLite connections by the adapter their Kysely instance shares with its transactions. */
const sqliteByAdapter = new WeakMap<object, SqliteStatements>();

/** Lets runCompiled run statements of `db`'s transactions on its SQLite connection directly. */
export function runTransactionsDirectly(db: Kysely<Database>, statements: SqliteStatements): void {
  sqliteByAdapter.set(db.getExecutor().adapter, statements);
}

/**
 * Runs SQL already compiled. Inside a SQLite transaction it goes straight to the connection's cached statement:
 * the transaction holds the one connection, and Kysely's executor layers (a connection provider, several async
 * closures and promises per statement) cost more than most statements of the commit path. Elsewhere, through Kysely.
 */
export function runCompiled<Row>(db: Db, sql: string, parameters: unknown[]): Promise<QueryResult<Row>> {
  const statements = db.isTransaction ? sqliteByAdapter.get(db.getExecutor().adapter) : undefined;
  if (!statements) return db.executeQuery(CompiledQuery.raw(sql, parameters)) as Promise<QueryResult<Row>>;
  const run = (): QueryResult<Row> => {
    const statement = statements.prepare(sql);
    if (statement.reader) return { rows: statement.all(parameters) as Row[] };
    // As Kysely's SQLite driver reports a write.
    const { changes, lastInsertRowid } = statement.run(parameters);
    return { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid) };
  };
  try {
    return Promise.resolve(run());
  } catch (error) {
    // Another process holds the write lock: wait for it without stopping the event loop (sqlite-busy.ts).
    return codeOf(error) === 'SQLITE_BUSY' ? waitingForLock(run, undefined, statements.gaveUpOnLock) : Promise.reject(error);
  }
}
