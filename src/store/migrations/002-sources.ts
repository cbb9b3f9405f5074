// Sources, their db and emitter state, events, and the invocation queue.
import type { Kysely } from 'kysely';
import type { DialectMigration } from './migration.js';

export const migration002: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('sources')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('component_id', 'text', (c) => c.notNull().references('components.id'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('name_slug', 'text', (c) => c.notNull())
      .addColumn('active', 'integer', (c) => c.notNull())
      .addColumn('configured_props', 'text', (c) => c.notNull())
      .addColumn('endpoint_id', 'text', (c) => c.unique())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addUniqueConstraint('sources_user_slug', ['user_id', 'name_slug'])
      .execute();
    await db.schema.createIndex('sources_user_id').on('sources').columns(['user_id', 'id']).execute();

    await db.schema
      .createTable('source_db')
      .addColumn('source_id', 'text', (c) => c.notNull().references('sources.id').onDelete('cascade'))
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('value', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('source_db_pk', ['source_id', 'key'])
      .execute();

    await db.schema
      .createTable('emitter_state')
      .addColumn('emitter_id', 'text', (c) => c.primaryKey())
      .addColumn('last_ms', 'bigint', (c) => c.notNull())
      .addColumn('last_seq', 'bigint', (c) => c.notNull())
      .addColumn('dedupe', 'text')
      .addColumn('counts', 'text', (c) => c.notNull().defaultTo('{}'))
      .execute();

    await db.schema
      .createTable('events')
      .addColumn('emitter_id', 'text', (c) => c.notNull())
      .addColumn('stream', 'text', (c) => c.notNull())
      .addColumn('ms', 'bigint', (c) => c.notNull())
      .addColumn('seq', 'bigint', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('emit_id', 'text', (c) => c.notNull())
      .addColumn('event_key', 'text')
      .addColumn('summary', 'text')
      .addColumn('ts', 'bigint')
      .addColumn('event', 'text', (c) => c.notNull())
      .addColumn('indexed_at_ms', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('events_pk', ['emitter_id', 'ms', 'seq'])
      .execute();
    await db.schema.createIndex('events_stream').on('events').columns(['emitter_id', 'stream', 'ms', 'seq']).execute();

    await db.schema
      .createTable('invocations')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('source_id', 'text', (c) => c.notNull())
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('trigger', 'text', (c) => c.notNull())
      .addColumn('event', 'text', (c) => c.notNull())
      .addColumn('created_ms', 'bigint', (c) => c.notNull())
      .addColumn('depth', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('lease_owner', 'text')
      .addColumn('lease_until_ms', 'bigint')
      .execute();
    await db.schema.createIndex('invocations_source').on('invocations').columns(['source_id', 'id']).execute();
  },
  async down(db: Kysely<any>) {
    for (const table of ['invocations', 'events', 'emitter_state', 'source_db', 'sources']) await db.schema.dropTable(table).execute();
  },
});
