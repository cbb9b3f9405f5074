// An index for the check each firing of a workflow's timer makes: is a timer run of this workflow queued or running.
import { type Kysely, sql } from 'kysely';
import type { DialectMigration } from './migration.js';

/**
 * Without it the check read the workflow's runs by workflow_runs_list (workflow_id, id): every run it ever kept, most
 * of them finished. Partial on `due_ms is not null` (only unfinished runs have a due time), so it holds just the
 * unfinished runs and costs finished ones nothing; the check names that condition word for word, as SQLite needs to
 * use a partial index, and its other conditions (trigger, status) come in as parameters, hence index columns.
 */
export const migration016: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await sql`create index workflow_runs_timer_pending on workflow_runs (workflow_id, trigger, status) where due_ms is not null`.execute(db);
  },
  async down(db: Kysely<any>) {
    await db.schema.dropIndex('workflow_runs_timer_pending').execute();
  },
});
