// The outbox of workflow steps: one row per `$.send.http`, `$.send.email` or `$.send.s3`, written with its step's
// commit and carried out after it.
import type { Kysely } from 'kysely';
import type { DialectMigration } from './migration.js';

export const migration008: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('workflow_sends')
      .addColumn('id', 'text', (c) => c.primaryKey())
      // Deleting a workflow deletes its runs, and with them the sends not made yet.
      .addColumn('run_id', 'text', (c) => c.notNull().references('workflow_runs.id').onDelete('cascade'))
      .addColumn('workflow_id', 'text', (c) => c.notNull())
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('step_index', 'integer', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('attempt', 'integer', (c) => c.notNull())
      .addColumn('next_attempt_ms', 'bigint')
      .addColumn('lease_owner', 'text')
      .addColumn('lease_until_ms', 'bigint')
      .addColumn('last_error', 'text')
      .addColumn('status_code', 'integer')
      .addColumn('created_ms', 'bigint', (c) => c.notNull())
      .addColumn('finished_ms', 'bigint')
      .execute();
    // Only pending sends have a due time: the sender's claims and its sleep read this index and nothing else.
    await db.schema.createIndex('workflow_sends_due').on('workflow_sends').columns(['next_attempt_ms']).execute();
    // A run's sends, for its view, and for the cascade when the run goes.
    await db.schema.createIndex('workflow_sends_run').on('workflow_sends').columns(['run_id', 'step_index']).execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('workflow_sends').execute();
  },
});
