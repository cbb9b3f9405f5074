// The invocation queue keyed by (source_id, id): its rows are read, claimed and removed per source in id order.
import { sql, type Kysely } from 'kysely';
import type { DialectMigration } from './migration.js';

/**
 * Every queued invocation is written twice (queued, then removed), and each b-tree it lives in costs pages in both
 * commits. SQLite: one clustered b-tree (WITHOUT ROWID) instead of four (the table, its primary-key index, the
 * per-source index and the per-source-and-trigger index). PostgreSQL: the primary key takes the place of both
 * indexes. The one query by trigger (is a timer run of this source still queued?) reads the source's rows instead.
 */
export const migration005: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    if (dialect === 'postgres') {
      await sql`alter table invocations drop constraint invocations_pkey`.execute(db);
      await sql`alter table invocations add primary key (source_id, id)`.execute(db);
      await db.schema.dropIndex('invocations_source').execute();
      await db.schema.dropIndex('invocations_trigger').execute();
      return;
    }
    await db.schema
      .createTable('invocations_keyed')
      .addColumn('id', 'text', (c) => c.notNull())
      .addColumn('source_id', 'text', (c) => c.notNull())
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('trigger', 'text', (c) => c.notNull())
      .addColumn('event', 'text', (c) => c.notNull())
      .addColumn('created_ms', 'bigint', (c) => c.notNull())
      .addColumn('depth', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('lease_owner', 'text')
      .addColumn('lease_until_ms', 'bigint')
      .addPrimaryKeyConstraint('invocations_key', ['source_id', 'id'])
      .modifyEnd(sql`without rowid`)
      .execute();
    await sql`insert into invocations_keyed (id, source_id, user_id, trigger, event, created_ms, depth, attempts, lease_owner, lease_until_ms)
      select id, source_id, user_id, trigger, event, created_ms, depth, attempts, lease_owner, lease_until_ms from invocations`.execute(db);
    await db.schema.dropTable('invocations').execute();
    await db.schema.alterTable('invocations_keyed').renameTo('invocations').execute();
  },
  async down(db: Kysely<any>) {
    if (dialect === 'postgres') {
      await sql`alter table invocations drop constraint invocations_pkey`.execute(db);
      await sql`alter table invocations add primary key (id)`.execute(db);
      await db.schema.createIndex('invocations_source').on('invocations').columns(['source_id', 'id']).execute();
      await db.schema.createIndex('invocations_trigger').on('invocations').columns(['source_id', 'trigger']).execute();
      return;
    }
    throw new Error('005-queue-key cannot be undone on SQLite');
  },
});
