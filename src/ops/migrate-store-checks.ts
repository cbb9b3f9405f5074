// What migrate-store checks before it writes to either database, reading both only: a refusal leaves them as they were.
import type SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import pg from 'pg';
import { appliedMigrations, migrateToLatest, NewerDatabaseError, refuseNewer } from '../store/migrate.js';
import { openSqliteFile } from '../store/sqlite-file.js';
import { OpsError } from './ops-error.js';
import { damageOf } from './quick-check.js';
import { quote } from './table-rows.js';

/** On the target, one row per table copied and verified; dropped once every table is. Its presence means "resume". */
export const PROGRESS_TABLE = 'tributary_store_migration';

/** The tables of an SQLite database (not SQLite's own), by name. */
export function tableNames(source: SQLite.Database): string[] {
  const rows = source.prepare(`select name from sqlite_master where type = 'table' and name not like 'sqlite\\_%' escape '\\' order by name`).all();
  return (rows as { name: string }[]).map((r) => r.name);
}

/**
 * Refuses a source SQLite cannot read whole, or one written by a newer Tributary, before anything is written (the
 * source is brought to this build's schema only once both databases passed): the copy would stop at the first damaged
 * page with SQLite's bare 'database disk image is malformed', or, worse, move what a damaged page still reads as rows.
 */
export async function checkSource(file: string): Promise<void> {
  const source = openSqliteFile(file, { readonly: true, fileMustExist: true });
  let damage: string | undefined;
  try {
    damage = damageOf(source);
  } catch (error) {
    source.close();
    throw error;
  }
  if (damage) {
    source.close();
    throw new Error(
      `the database ${file} is damaged (${damage}): nothing was copied; restore it from a backup (tributary restore), then run migrate-store again`,
    );
  }
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: source }) });
  try {
    refuseNewer(await appliedMigrations(db, 'sqlite'));
  } catch (error) {
    // As opening it to migrate would have said.
    if (error instanceof NewerDatabaseError) throw new NewerDatabaseError(`cannot open the database at ${file}: ${error.message}`);
    throw error;
  } finally {
    await db.destroy();
  }
}

/** The tables this build's schema has: an empty database in memory, migrated. */
async function tributaryTables(): Promise<Set<string>> {
  const memory = openSqliteFile(':memory:');
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: memory }) });
  try {
    await migrateToLatest(db, 'sqlite');
    return new Set(tableNames(memory));
  } finally {
    await db.destroy();
  }
}

/**
 * Refuses, before anything is written there (or to the source), a target that cannot be reached, that holds tables
 * of something else than Tributary (tables an extension owns, such as PostGIS's, do not count), that others are
 * connected to, or, unless `force` or resuming an interrupted run, that holds Tributary data.
 */
export async function checkTarget(url: string, force: boolean): Promise<void> {
  const ours = await tributaryTables();
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
  } catch (error) {
    throw new OpsError(`cannot connect to the --to database: ${(error as Error).message}`);
  }
  try {
    const { rows } = await client.query<{ name: string }>(
      `select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = current_schema() and c.relkind in ('r', 'p')
         and not exists (select 1 from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype = 'e')
       order by 1`,
    );
    const names = rows.map((r) => r.name);
    // Tributary's tables count as ours only beside its migrations' record: a lone `users` is another app's.
    const tributary = names.includes('kysely_migration');
    const bookkeeping = new Set(['kysely_migration', 'kysely_migration_lock', PROGRESS_TABLE]);
    const foreign = names.filter((name) => !bookkeeping.has(name) && !(tributary && ours.has(name)));
    if (foreign.length > 0) {
      throw new OpsError(
        `the --to database holds tables that are not Tributary's (${foreign.slice(0, 5).join(', ')}${foreign.length > 5 ? ', …' : ''}): choose an empty database`,
      );
    }
    await refuseOtherSessions(client);
    if (force || names.includes(PROGRESS_TABLE)) return;
    const holding = await tablesWithRows(
      client,
      names.filter((name) => !bookkeeping.has(name)),
    );
    if (holding.length > 0) {
      throw new OpsError(
        `the target database already holds Tributary data (rows in ${holding.slice(0, 5).join(', ')}${holding.length > 5 ? ', …' : ''}): ` +
          'pass --force to empty it first, or choose an empty database',
      );
    }
  } finally {
    await client.end();
  }
}

/**
 * Refuses a target that other clients are connected to: most likely a Tributary server already running on it, whose
 * data --force (or a resumed run) would empty under it. Tributary's servers set no application_name, so every other
 * client session counts (background processes such as autovacuum do not).
 */
async function refuseOtherSessions(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ sessions: number; applications: string | null }>(
    `select count(*)::int as sessions, string_agg(distinct nullif(application_name, ''), ', ') as applications from pg_stat_activity
     where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'`,
  );
  const { sessions, applications } = rows[0] ?? { sessions: 0, applications: null };
  if (sessions === 0) return;
  throw new OpsError(
    `the --to database has ${sessions} other ${sessions === 1 ? 'session' : 'sessions'} connected${applications ? ` (${applications})` : ''}, ` +
      'a Tributary server using it perhaps: stop every server and client of that database first; migrate-store must be the only one writing to it',
  );
}

async function tablesWithRows(target: pg.Client, tables: string[]): Promise<string[]> {
  const holding: string[] = [];
  for (const table of tables) {
    const result = await target.query(`select 1 from ${quote(table)} limit 1`);
    if (result.rows.length > 0) holding.push(table);
  }
  return holding;
}
