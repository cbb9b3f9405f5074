// Retention when events are appended: SQLite trims past the newest `retention` at once; PostgreSQL keeps what the last
// LIVE_READ_GRACE_MS stored, so that other nodes can read announced events back, and trims it with a later commit.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { appendEvents, LIVE_READ_GRACE_MS } from '../../src/commit/append-events.js';
import type { PendingEvent } from '../../src/model/events.js';
import type { Store } from '../../src/store/database.js';
import { DIALECTS } from '../helpers/server.js';
import { freshStoreEach } from '../helpers/stores.js';

const EMITTER = 'dc_retention';
const RETENTION = 100;

const emits = (count: number, from = 0): PendingEvent[] => Array.from({ length: count }, (_, i) => ({ stream: 'emit', name: '', event: from + i }));

describe.each(DIALECTS)('retention on %s', (dialect) => {
  // The PostgreSQL database was created here and never dropped: every run left one behind.
  const open = freshStoreEach(dialect);

  const append = (store: Store, events: PendingEvent[], nowMs: number) =>
    store.db.transaction().execute((trx) => appendEvents(trx, EMITTER, events, { dialect: store.dialect, retention: RETENTION, nowMs }));

  const stored = async (store: Store) =>
    (await sql<{ event: string }>`select event from events where emitter_id = ${EMITTER} order by ms, seq`.execute(store.db)).rows.map((r) =>
      JSON.parse(r.event),
    );

  it('keeps the newest events of a commit larger than retention for as long as the dialect needs', async () => {
    const store = await open();
    const start = 1_800_000_000_000;
    await append(store, emits(150), start);
    const newest = Array.from({ length: RETENTION }, (_, i) => 50 + i);
    // PostgreSQL: every event of the commit is still there for the other nodes to read.
    expect(await stored(store)).toEqual(dialect === 'postgres' ? Array.from({ length: 150 }, (_, i) => i) : newest);
    // Once the grace is over, the next commit trims what is past retention (SQLite: one past it is within the slack).
    await append(store, emits(1, 150), start + LIVE_READ_GRACE_MS + 1);
    expect(await stored(store)).toEqual([...(dialect === 'postgres' ? newest.slice(1) : newest), 150]);
  });
});
