// Data stores: each store's running size in bytes, which a commit that writes the store keeps up to date, and an
// index of the records that expire.
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
    // Each write deletes its store's expired records: through this, not by reading every record of the store (1.7 ms
    // of a commit to a store of 40,000 records on SQLite). Records without a ttl, most of them, are not in it.
    await db.schema
      .createIndex('data_store_records_expiry')
      .on('data_store_records')
      .columns(['store_id', 'expires_ms'])
      .where(sql.ref('expires_ms'), 'is not', null)
      .execute();
    await sql`
      update data_stores set bytes = coalesce(
        (select sum(octet_length(r.key) + octet_length(r.value)) from data_store_records r where r.store_id = data_stores.id), 0)
    `.execute(db);
  },
  async down(db: Kysely<any>) {
    await db.schema.dropIndex('data_store_records_expiry').execute();
    await db.schema.alterTable('data_stores').dropColumn('bytes').execute();
  },
});
