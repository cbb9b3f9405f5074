// Data stores: an account's named key-value stores, which `data_store` props of its sources and workflow steps share.
import type { Kysely } from 'kysely';
import type { DialectMigration } from './migration.js';

export const migration010: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('data_stores')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    // A store is made on first use by name: two runs making the same one at once must end with one row.
    await db.schema.createIndex('data_stores_user_name').on('data_stores').columns(['user_id', 'name']).unique().execute();
    // The account's list, newest first.
    await db.schema.createIndex('data_stores_user_id').on('data_stores').columns(['user_id', 'id']).execute();
    await db.schema
      .createTable('data_store_records')
      .addColumn('store_id', 'text', (c) => c.notNull().references('data_stores.id').onDelete('cascade'))
      .addColumn('key', 'text', (c) => c.notNull())
      // The value as JSON.
      .addColumn('value', 'text', (c) => c.notNull())
      // When the record expires (set with a ttl), epoch ms; null: never. Expired records are not read, and are
      // deleted when their store is next written.
      .addColumn('expires_ms', 'bigint')
      .addPrimaryKeyConstraint('data_store_records_pk', ['store_id', 'key'])
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('data_store_records').execute();
    await db.schema.dropTable('data_stores').execute();
  },
});
