// Timers of active sources, due times claimed with a compare-and-set.
import type { Kysely } from 'kysely';
import type { DialectMigration } from './migration.js';

export const migration003: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('timers')
      .addColumn('source_id', 'text', (c) => c.notNull())
      .addColumn('prop_name', 'text', (c) => c.notNull())
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('schedule', 'text', (c) => c.notNull())
      .addColumn('next_due_ms', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('timers_pk', ['source_id', 'prop_name'])
      .execute();
    await db.schema.createIndex('timers_due').on('timers').column('next_due_ms').execute();
    await db.schema.createIndex('invocations_trigger').on('invocations').columns(['source_id', 'trigger']).execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropIndex('invocations_trigger').execute();
    await db.schema.dropTable('timers').execute();
  },
});
