// Statements of the commit path compiled once: Kysely builds and compiles every query anew, which there costs more than running it.
import { isDeepStrictEqual } from 'node:util';
import { CompiledQuery, type Compilable, type Kysely, type QueryResult, type Transaction } from 'kysely';
import type { Database } from './schema.js';

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
    return db.executeQuery(CompiledQuery.raw(sql, parameters)) as Promise<QueryResult<Row>>;
  };
}
