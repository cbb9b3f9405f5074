// Cluster: the custom responses relayed between nodes, kept a while, so that a node whose LISTEN connection was lost
// when one was sent can still read it for the request that waits on it.
import type { Kysely } from 'kysely';
import type { DialectMigration } from './migration.js';

/**
 * One row per relayed answer (a `$.flow.delay` notice and the response of the same run are two), in the order they
 * were sent (`seq`). Unused on SQLite, where one process runs everything and nothing is relayed.
 */
export const migration020: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('relayed_answers')
      .addColumn('seq', dialect === 'postgres' ? 'bigserial' : 'integer', (c) => c.primaryKey())
      .addColumn('id', 'text', (c) => c.notNull())
      .addColumn('answer', 'text', (c) => c.notNull())
      .addColumn('at_ms', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('relayed_answers_id').on('relayed_answers').column('id').execute();
    await db.schema.createIndex('relayed_answers_at').on('relayed_answers').column('at_ms').execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('relayed_answers').execute();
  },
});
