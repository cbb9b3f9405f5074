// Components an account publishes under their key: one row per version, never changed once written.
import type { Kysely } from 'kysely';
import type { DialectMigration } from './migration.js';

/** The primary key makes a published version immutable even when two publishes race. */
export const migration006: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('published_components')
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('version', 'text', (c) => c.notNull())
      .addColumn('component_id', 'text', (c) => c.notNull().references('components.id'))
      .addColumn('published_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('published_components_key', ['user_id', 'key', 'version'])
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('published_components').execute();
  },
});
