// `tributary migrate --status`: which migrations a database has applied, which this build would apply, and any it does not know.
import { openStore } from '../store/database.js';
import { appliedMigrations, KNOWN_MIGRATIONS } from '../store/migrate.js';
import { tributaryVersion } from '../lib/version.js';

export interface MigrationStatus {
  /** Where the database is (the SQLite path, or the PostgreSQL URL without its password). */
  readonly location: string;
  readonly version: string;
  readonly applied: { name: string; executed_at: string }[];
  /** Known to this build, not yet applied: the next start applies them. */
  readonly pending: string[];
  /** Applied by a newer Tributary: this build refuses to start on the database. */
  readonly unknown: string[];
}

/** Reads the status without changing anything (no migration runs). */
export async function migrationStatus(storage: { dataDir: string; databaseUrl: string | undefined }): Promise<MigrationStatus> {
  const store = await openStore({ ...storage, migrate: false });
  try {
    const applied = await appliedMigrations(store.db, store.dialect);
    const names = new Set(applied.map((m) => m.name));
    return {
      location: store.location,
      version: tributaryVersion(),
      applied: applied.map((m) => ({ name: m.name, executed_at: m.executedAt })),
      pending: KNOWN_MIGRATIONS.filter((name) => !names.has(name)),
      unknown: applied.filter((m) => !KNOWN_MIGRATIONS.includes(m.name)).map((m) => m.name),
    };
  } finally {
    await store.close();
  }
}

/** The status for people: one line per migration, then a summary line. */
export function formatMigrationStatus(status: MigrationStatus): string[] {
  const lines = [`database: ${status.location} (this Tributary: ${status.version})`];
  for (const m of status.applied)
    lines.push(`applied  ${m.name}  ${m.executed_at}${status.unknown.includes(m.name) ? '  (unknown: written by a newer version)' : ''}`);
  for (const name of status.pending) lines.push(`pending  ${name}`);
  const summary = `${status.applied.length} applied, ${status.pending.length} pending`;
  lines.push(status.unknown.length > 0 ? `${summary}, ${status.unknown.length} unknown: upgrade this Tributary before starting it on this database` : summary);
  return lines;
}
