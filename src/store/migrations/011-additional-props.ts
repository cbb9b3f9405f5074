// Sources keep the props `additionalProps()` added for their configured values, so that runs and the API see them.
import type { Kysely } from 'kysely';
import type { DialectMigration } from './migration.js';

export const migration011: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    // JSON array of prop descriptors, asked of the sandbox at deploy; null for a component without additionalProps().
    // Workflow steps keep theirs in the steps JSON, which needs no column.
    await db.schema.alterTable('sources').addColumn('additional_props', 'text').execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable('sources').dropColumn('additional_props').execute();
  },
});
