// Timer runs name the timer prop that queued them, so that each timer prop is skipped only while its own run is pending.
import type { Kysely } from 'kysely';
import type { DialectMigration } from './migration.js';

/**
 * Null for every run that is not a timer's, and for timer runs queued before this migration (those count as pending
 * for every timer prop of their source, as they did). The pending check reads the source's rows by the queue's key
 * (source_id, id), as it did since 005: a source has few queued rows, so no index. Adding a column changes the row
 * type the claim function of 012 returns; it returns whole rows, so it needs no change.
 */
export const migration015: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('invocations').addColumn('prop_name', 'text').execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable('invocations').dropColumn('prop_name').execute();
  },
});
