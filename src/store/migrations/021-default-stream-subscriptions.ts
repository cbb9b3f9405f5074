// Subscriptions and auto-subscriptions to the default stream: `event_name` '' and 'default' are one, kept once.
import { sql, type Kysely } from 'kysely';
import type { DialectMigration } from './migration.js';

/**
 * '' and 'default' both select the default stream, yet were stored as two subscriptions (listed twice, counted twice
 * against the limit) when one was made with each. Where a database holds both, the older is kept, as a create made
 * second now answers with the one there. The unique indexes then read 'default' as '', so the pair cannot come back;
 * the triple constraints of 004 stay (they are implied by these).
 */
export const migration021: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await sql`
      delete from subscriptions where event_name in ('', 'default') and exists (
        select 1 from subscriptions older
        where older.user_id = subscriptions.user_id and older.emitter_id = subscriptions.emitter_id
          and older.listener_id = subscriptions.listener_id and older.event_name in ('', 'default') and older.id < subscriptions.id)
    `.execute(db);
    await sql`
      delete from auto_subscriptions where event_name in ('', 'default') and exists (
        select 1 from auto_subscriptions older
        where older.user_id = auto_subscriptions.user_id and older.listener_id = auto_subscriptions.listener_id
          and older.event_name in ('', 'default') and older.id < auto_subscriptions.id)
    `.execute(db);
    await sql`
      create unique index subscriptions_stream
      on subscriptions (user_id, emitter_id, listener_id, (case when event_name = 'default' then '' else event_name end))
    `.execute(db);
    await sql`
      create unique index auto_subscriptions_stream
      on auto_subscriptions (user_id, listener_id, (case when event_name = 'default' then '' else event_name end))
    `.execute(db);
  },
  async down(db: Kysely<any>) {
    await db.schema.dropIndex('auto_subscriptions_stream').execute();
    await db.schema.dropIndex('subscriptions_stream').execute();
  },
});
