// Accounts, their usage counters, and saved components.
import type { Kysely } from 'kysely';
import type { DialectMigration } from './migration.js';

export const migration001: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('users')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('username', 'text', (c) => c.notNull().unique())
      .addColumn('email', 'text', (c) => c.notNull())
      .addColumn('plan', 'text', (c) => c.notNull())
      .addColumn('api_key_hash', 'text', (c) => c.notNull().unique())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('components')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.references('users.id').onDelete('cascade'))
      .addColumn('key', 'text')
      .addColumn('code', 'text', (c) => c.notNull())
      .addColumn('code_hash', 'text', (c) => c.notNull())
      .addColumn('component_url', 'text')
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('version', 'text', (c) => c.notNull())
      .addColumn('configurable_props', 'text', (c) => c.notNull())
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('usage')
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('period', 'text', (c) => c.notNull())
      .addColumn('invocations', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('compute_ms', 'bigint', (c) => c.notNull().defaultTo(0))
      .addPrimaryKeyConstraint('usage_pk', ['user_id', 'period'])
      .execute();
    await db.schema.createIndex('components_user_key').on('components').columns(['user_id', 'key', 'id']).execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('usage').execute();
    await db.schema.dropTable('components').execute();
    await db.schema.dropTable('users').execute();
  },
});
