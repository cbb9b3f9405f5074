// Subscriptions, auto-subscriptions, webhooks and the webhook delivery queue with its attempt log.
import type { Kysely } from 'kysely';
import type { DialectMigration } from './migration.js';

export const migration004: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('subscriptions')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('emitter_id', 'text', (c) => c.notNull())
      .addColumn('listener_id', 'text', (c) => c.notNull())
      .addColumn('event_name', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addUniqueConstraint('subscriptions_triple', ['user_id', 'emitter_id', 'listener_id', 'event_name'])
      .execute();
    await db.schema.createIndex('subscriptions_listener').on('subscriptions').column('listener_id').execute();
    await db.schema.createIndex('subscriptions_emitter').on('subscriptions').column('emitter_id').execute();

    await db.schema
      .createTable('auto_subscriptions')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('listener_id', 'text', (c) => c.notNull())
      .addColumn('event_name', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addUniqueConstraint('auto_subscriptions_pair', ['user_id', 'listener_id', 'event_name'])
      .execute();

    await db.schema
      .createTable('webhooks')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('name', 'text')
      .addColumn('description', 'text')
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('secret', 'text', (c) => c.notNull())
      .addColumn('active', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('webhooks_user_id').on('webhooks').columns(['user_id', 'id']).execute();

    await db.schema
      .createTable('webhook_deliveries')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('message_id', 'text', (c) => c.notNull())
      .addColumn('webhook_id', 'text', (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('emitter_id', 'text', (c) => c.notNull())
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('attempt', 'integer', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('next_attempt_ms', 'bigint')
      .addColumn('status_code', 'integer')
      .addColumn('error', 'text')
      .addColumn('duration_ms', 'integer')
      .addColumn('attempted_ms', 'bigint')
      .addColumn('created_ms', 'bigint', (c) => c.notNull())
      .addColumn('lease_owner', 'text')
      .addColumn('lease_until_ms', 'bigint')
      .execute();
    await db.schema.createIndex('webhook_deliveries_log').on('webhook_deliveries').columns(['webhook_id', 'id']).execute();
    await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries').columns(['state', 'next_attempt_ms']).execute();
  },
  async down(db: Kysely<any>) {
    for (const table of ['webhook_deliveries', 'webhooks', 'auto_subscriptions', 'subscriptions']) await db.schema.dropTable(table).execute();
  },
});
