// Connected accounts: an app's credentials (API keys, OAuth tokens) that sources and workflow steps name by id.
import type { Kysely } from 'kysely';
import type { DialectMigration } from './migration.js';

export const migration009: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('connected_accounts')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('app', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      // The whole credentials object as JSON, sealed with the SecretBox: nothing of it is readable at rest.
      .addColumn('credentials', 'text', (c) => c.notNull())
      // JSON array of the credential field names, so that lists show them without opening every seal.
      .addColumn('fields', 'text', (c) => c.notNull())
      .addColumn('healthy', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    // The account's list, newest first, and every look-up by owner and id.
    await db.schema.createIndex('connected_accounts_user_id').on('connected_accounts').columns(['user_id', 'id']).execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('connected_accounts').execute();
  },
});
