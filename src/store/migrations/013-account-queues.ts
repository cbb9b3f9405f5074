// Outbound queues are claimed fairly between accounts: an index that finds each account's pending rows in due order.
import type { Kysely } from 'kysely';
import type { DialectMigration } from './migration.js';

/** The queues claimed per account (store/account-queues.ts): the accounts with pending rows, then each one's earliest. */
const ACCOUNT_QUEUES = [
  ['webhook_deliveries_account_due', 'webhook_deliveries'],
  ['workflow_sends_account_due', 'workflow_sends'],
] as const;

export const migration013: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    for (const [index, table] of ACCOUNT_QUEUES) {
      await db.schema.createIndex(index).on(table).columns(['state', 'user_id', 'next_attempt_ms']).execute();
    }
  },
  async down(db: Kysely<any>) {
    for (const [index] of ACCOUNT_QUEUES) await db.schema.dropIndex(index).execute();
  },
});
