// Workflows, their runs with one row per finished step, and each step's `$.service.db`.
import type { Kysely } from 'kysely';
import type { DialectMigration } from './migration.js';

export const migration007: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('workflows')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('active', 'integer', (c) => c.notNull())
      .addColumn('trigger', 'text')
      .addColumn('steps', 'text', (c) => c.notNull())
      .addColumn('endpoint_id', 'text', (c) => c.unique())
      .addColumn('timeout_ms', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('workflows_user_id').on('workflows').columns(['user_id', 'id']).execute();

    await db.schema
      .createTable('workflow_runs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workflow_id', 'text', (c) => c.notNull().references('workflows.id').onDelete('cascade'))
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('trigger', 'text', (c) => c.notNull())
      .addColumn('event', 'text', (c) => c.notNull())
      .addColumn('depth', 'integer', (c) => c.notNull())
      .addColumn('next_step', 'integer', (c) => c.notNull())
      .addColumn('due_ms', 'bigint')
      .addColumn('lease_owner', 'text')
      .addColumn('lease_until_ms', 'bigint')
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('running_ms', 'bigint', (c) => c.notNull())
      .addColumn('exit_reason', 'text')
      .addColumn('error', 'text')
      .addColumn('replay_of', 'text')
      .addColumn('created_ms', 'bigint', (c) => c.notNull())
      .addColumn('finished_ms', 'bigint')
      .execute();
    await db.schema.createIndex('workflow_runs_list').on('workflow_runs').columns(['workflow_id', 'id']).execute();
    // Only unfinished runs have a due time: the runner's scan reads this index and nothing else.
    await db.schema.createIndex('workflow_runs_due').on('workflow_runs').columns(['due_ms']).execute();

    await db.schema
      .createTable('workflow_run_steps')
      .addColumn('run_id', 'text', (c) => c.notNull().references('workflow_runs.id').onDelete('cascade'))
      .addColumn('step_index', 'integer', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('started_ms', 'bigint', (c) => c.notNull())
      .addColumn('duration_ms', 'real', (c) => c.notNull())
      .addColumn('return_value', 'text')
      .addColumn('exports', 'text', (c) => c.notNull())
      .addColumn('logs', 'text', (c) => c.notNull())
      .addColumn('error', 'text')
      .addPrimaryKeyConstraint('workflow_run_steps_pk', ['run_id', 'step_index'])
      .execute();

    await db.schema
      .createTable('workflow_step_db')
      .addColumn('workflow_id', 'text', (c) => c.notNull().references('workflows.id').onDelete('cascade'))
      .addColumn('step', 'text', (c) => c.notNull())
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('value', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('workflow_step_db_pk', ['workflow_id', 'step', 'key'])
      .execute();
  },
  async down(db: Kysely<any>) {
    for (const table of ['workflow_step_db', 'workflow_run_steps', 'workflow_runs', 'workflows']) await db.schema.dropTable(table).execute();
  },
});
