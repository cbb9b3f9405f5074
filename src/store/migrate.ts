// Runs the numbered, append-only migrations in order; each migration is written once for both dialects.
import { Migrator, sql, type Kysely, type MigrationProvider } from 'kysely';
import { tributaryVersion } from '../lib/version.js';
import { NewerDatabaseError } from './newer-database-error.js';
import type { DialectMigration, DialectName } from './migrations/migration.js';
import { migration001 } from './migrations/001-foundation.js';
import { migration002 } from './migrations/002-sources.js';
import { migration003 } from './migrations/003-timers.js';
import { migration004 } from './migrations/004-delivery.js';
import { migration005 } from './migrations/005-queue-key.js';
import { migration006 } from './migrations/006-published-components.js';
import { migration007 } from './migrations/007-workflows.js';
import { migration008 } from './migrations/008-workflow-sends.js';
import { migration009 } from './migrations/009-connected-accounts.js';
import { migration010 } from './migrations/010-data-stores.js';
import { migration011 } from './migrations/011-additional-props.js';
import { migration012 } from './migrations/012-claim-function.js';
import { migration013 } from './migrations/013-account-queues.js';
import { migration014 } from './migrations/014-step-duration-precision.js';
import { migration015 } from './migrations/015-timer-run-prop.js';
import { migration016 } from './migrations/016-timer-run-pending-index.js';
import { migration017 } from './migrations/017-claim-skips-inactive.js';
import { migration018 } from './migrations/018-data-store-bytes.js';
import { migration019 } from './migrations/019-node-presence.js';
import { migration020 } from './migrations/020-relayed-answers.js';
import { migration021 } from './migrations/021-default-stream-subscriptions.js';

const MIGRATIONS: Record<string, DialectMigration> = {
  '001-foundation': migration001,
  '002-sources': migration002,
  '003-timers': migration003,
  '004-delivery': migration004,
  '005-queue-key': migration005,
  '006-published-components': migration006,
  '007-workflows': migration007,
  '008-workflow-sends': migration008,
  '009-connected-accounts': migration009,
  '010-data-stores': migration010,
  '011-additional-props': migration011,
  '012-claim-function': migration012,
  '013-account-queues': migration013,
  '014-step-duration-precision': migration014,
  '015-timer-run-prop': migration015,
  '016-timer-run-pending-index': migration016,
  '017-claim-skips-inactive': migration017,
  '018-data-store-bytes': migration018,
  '019-node-presence': migration019,
  '020-relayed-answers': migration020,
  '021-default-stream-subscriptions': migration021,
};

/** Every migration this build knows, in the order they run. */
export const KNOWN_MIGRATIONS: readonly string[] = Object.freeze(Object.keys(MIGRATIONS));

export { NewerDatabaseError };

export interface AppliedMigration {
  readonly name: string;
  /** When it ran, as Kysely recorded it (an ISO timestamp). */
  readonly executedAt: string;
}

/** The migrations recorded in the database, in name order; none when the database is new. */
export async function appliedMigrations(db: Kysely<any>, dialect: DialectName): Promise<AppliedMigration[]> {
  const exists =
    dialect === 'sqlite'
      ? await sql<{ n: number }>`select count(*) as n from sqlite_master where type = 'table' and name = 'kysely_migration'`.execute(db)
      : await sql<{
          n: number;
        }>`select count(*)::int as n from information_schema.tables where table_schema = current_schema() and table_name = 'kysely_migration'`.execute(db);
  if (Number(exists.rows[0]?.n ?? 0) === 0) return [];
  const rows = await sql<{ name: string; timestamp: string }>`select name, timestamp from kysely_migration order by name`.execute(db);
  return rows.rows.map((r) => ({ name: r.name, executedAt: String(r.timestamp) }));
}

/** Refuses a database written by a newer Tributary, naming its migration and this build's version. */
export function refuseNewer(applied: readonly AppliedMigration[]): void {
  const unknown = applied.filter((m) => !(m.name in MIGRATIONS));
  if (unknown.length === 0) return;
  throw new NewerDatabaseError(
    `the database has migration ${unknown.map((m) => m.name).join(', ')} which this Tributary (${tributaryVersion()}) does not know ` +
      `(it knows up to ${KNOWN_MIGRATIONS.at(-1)}): it was written by a newer version; upgrade this one`,
  );
}

export async function migrateToLatest(db: Kysely<any>, dialect: DialectName): Promise<void> {
  await migrateTo(db, dialect, 'latest');
}

/** Migrates up (or down) to the named migration, or to the latest; tests use it to upgrade an older schema. */
export async function migrateTo(db: Kysely<any>, dialect: DialectName, target: string): Promise<void> {
  const provider: MigrationProvider = {
    getMigrations: async () => Object.fromEntries(Object.entries(MIGRATIONS).map(([name, m]) => [name, m(dialect)])),
  };
  refuseNewer(await appliedMigrations(db, dialect));
  const migrator = new Migrator({ db, provider });
  const { error, results } = target === 'latest' ? await migrator.migrateToLatest() : await migrator.migrateTo(target);
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`migration ${failed} failed: ${(error as Error).message ?? String(error)}`);
  }
}
