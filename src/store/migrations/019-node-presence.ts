// The nodes serving from one database, each row kept fresh by its own node: which roles are alive, and the settings
// every node must share.
import type { Kysely } from 'kysely';
import type { DialectMigration } from './migration.js';

/**
 * A node writes its row at start, renews `seen_ms` every few seconds and deletes it when it stops; a node that died
 * leaves a row that stops being renewed. On SQLite the one server is the whole service and writes none.
 */
export const migration019: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('nodes')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('host', 'text', (c) => c.notNull())
      .addColumn('pid', 'integer', (c) => c.notNull())
      .addColumn('event_retention', 'bigint', (c) => c.notNull())
      .addColumn('started_ms', 'bigint', (c) => c.notNull())
      .addColumn('seen_ms', 'bigint', (c) => c.notNull())
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('nodes').execute();
  },
});
