// Runs the numbered, append-only migrations in order; each migration is written once for both dialects.
import { Migrator, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { DialectName } from './database.js';
import { migration001 } from './migrations/001-foundation.js';
import { migration002 } from './migrations/002-sources.js';
import { migration003 } from './migrations/003-timers.js';
import { migration004 } from './migrations/004-delivery.js';

/** A migration receives the dialect so that the rare dialect-specific type can be chosen in place. */
export type DialectMigration = (dialect: DialectName) => Migration;

const MIGRATIONS: Record<string, DialectMigration> = {
  '001-foundation': migration001,
  '002-sources': migration002,
  '003-timers': migration003,
  '004-delivery': migration004,
};

export async function migrateToLatest(db: Kysely<any>, dialect: DialectName): Promise<void> {
  const provider: MigrationProvider = {
    getMigrations: async () => Object.fromEntries(Object.entries(MIGRATIONS).map(([name, m]) => [name, m(dialect)])),
  };
  const { error, results } = await new Migrator({ db, provider }).migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`migration ${failed} failed: ${(error as Error).message ?? String(error)}`);
  }
}
