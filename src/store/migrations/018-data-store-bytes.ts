// Data stores: each store's running size in bytes, which a commit that writes the store keeps up to date.
import { sql, type Kysely } from 'kysely';
import type { DialectMigration } from './migration.js';

/**
 * A commit that set keys summed the whole store to check its 4 MB limit: 3–4 ms for a full store of 40,000 small
 * records, on every commit. The count kept beside the store costs an update of one row. It counts every record
 * present, expired or not, as the records' octet_length of key and value: a commit deletes the expired ones before
 * checking. An existing store's count is taken once here.
 */
export const migration018: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .alterTable('data_stores')
      .addColumn('bytes', 'bigint', (c) => c.notNull().defaultTo(0))
      .execute();
    await sql`
      update data_stores set bytes = coalesce(
        (select sum(octet_length(r.key) + octet_length(r.value)) from data_store_records r where r.store_id = data_stores.id), 0)
    `.execute(db);
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable('data_stores').dropColumn('bytes').execute();
  },
});
