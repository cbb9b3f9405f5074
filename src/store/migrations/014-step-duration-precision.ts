// Workflow step durations keep every digit on PostgreSQL: `real` there is float4 (SQLite's is float8), which rounded them.
import { sql, type Kysely } from 'kysely';
import type { DialectMigration } from './migration.js';

/**
 * 007 declared `workflow_run_steps.duration_ms` as `real`: 8 bytes on SQLite but 4 on PostgreSQL, so a duration such
 * as 12.345678901 came back as 12.345679 there, and a data directory moved by migrate-store failed its checksum.
 * SQLite already stores double precision, so only PostgreSQL changes. No other column is declared `real`.
 */
export const migration014: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    if (dialect !== 'postgres') return;
    await sql`alter table workflow_run_steps alter column duration_ms type double precision`.execute(db);
  },
  async down(db: Kysely<any>) {
    if (dialect !== 'postgres') return;
    await sql`alter table workflow_run_steps alter column duration_ms type real`.execute(db);
  },
});
