// Queries on events and emitter state: append with ids, keep the last N per stream, page newest first.
import type { ExpressionBuilder, Kysely, Selectable, Transaction } from 'kysely';
import { decodeCursor, type Page, type PageRequest, resolveHead, toPage } from '../model/pagination.js';
import type { DialectName } from './database.js';
import { bulkInsert } from './bulk-insert.js';
import type { Database, EmitterStateTable, EventsTable, StreamKind } from './schema.js';
import { compiledOnce } from './compiled.js';
import { compareKeys, eventIdOf, newestEventIdOf, parseEventId, type EventKey } from '../model/events.js';

export type EventRow = Selectable<EventsTable>;

/** `(ms, seq) <op> key`, written out because SQLite and PostgreSQL compare row values differently. */
export function eventKey(eb: ExpressionBuilder<Database, 'events'>, op: '<' | '<=' | '>' | '>=', key: EventKey) {
  return eb.or([eb('ms', op[0] as '<' | '>', key.ms), eb.and([eb('ms', '=', key.ms), eb('seq', op, key.seq)])]);
}
type Db = Kysely<Database> | Transaction<Database>;

export interface EmitterState {
  lastMs: number;
  lastSeq: number;
  dedupe: unknown;
  /** Events stored per stream kind. */
  counts: Partial<Record<StreamKind, number>>;
}

const selectEmitterState = compiledOnce(
  'readEmitterState',
  (db, dialect: DialectName, emitterId: string) => {
    const query = db.selectFrom('emitter_state').selectAll().where('emitter_id', '=', emitterId);
    return dialect === 'postgres' ? query.forUpdate() : query;
  },
  (_dialect, emitterId) => [emitterId],
);

/** Reads the emitter's state, locking its row on PostgreSQL so that concurrent commits take turns. */
export async function readEmitterState(db: Db, dialect: DialectName, emitterId: string): Promise<EmitterState> {
  const row = (await selectEmitterState(db, dialect, emitterId)).rows[0];
  if (!row) return { lastMs: 0, lastSeq: -1, dedupe: null, counts: {} };
  return {
    lastMs: Number(row.last_ms),
    lastSeq: Number(row.last_seq),
    dedupe: row.dedupe === null ? null : JSON.parse(row.dedupe),
    counts: JSON.parse(row.counts),
  };
}

/** The id of the emitter's newest event (any stream), without locking; `0-0` when it has none. */
export async function newestEventId(db: Db, emitterId: string): Promise<string> {
  const row = await db.selectFrom('emitter_state').select(['last_ms', 'last_seq']).where('emitter_id', '=', emitterId).executeTakeFirst();
  return newestEventIdOf({ lastMs: Number(row?.last_ms ?? 0), lastSeq: Number(row?.last_seq ?? -1) });
}

type EmitterStateRow = Selectable<EmitterStateTable>;

const upsertEmitterState = compiledOnce(
  'writeEmitterState',
  (db, row: EmitterStateRow) =>
    db
      .insertInto('emitter_state')
      .values(row)
      .onConflict((oc) => oc.column('emitter_id').doUpdateSet({ last_ms: row.last_ms, last_seq: row.last_seq, dedupe: row.dedupe, counts: row.counts })),
  (row) => [row.emitter_id, row.last_ms, row.last_seq, row.dedupe, row.counts, row.last_ms, row.last_seq, row.dedupe, row.counts],
);

export async function writeEmitterState(db: Db, emitterId: string, state: EmitterState): Promise<void> {
  await upsertEmitterState(db, {
    emitter_id: emitterId,
    last_ms: state.lastMs,
    last_seq: state.lastSeq,
    dedupe: state.dedupe === null ? null : JSON.stringify(state.dedupe),
    counts: JSON.stringify(state.counts),
  });
}

const EVENT_COLUMNS = ['emitter_id', 'stream', 'ms', 'seq', 'name', 'emit_id', 'event_key', 'summary', 'ts', 'event', 'indexed_at_ms'] as const;

export async function insertEvents(db: Db, dialect: DialectName, rows: EventRow[]): Promise<void> {
  await bulkInsert(db, dialect, 'events', EVENT_COLUMNS, rows);
}

/** The key `skip` events in from the oldest (`asc`) or the newest (`desc`) end of a stream; costs O(skip). */
function keyAtPosition(order: 'asc' | 'desc') {
  const query = compiledOnce(
    `keyAtPosition.${order}`,
    (db, emitterId: string, stream: StreamKind, skip: number) =>
      db
        .selectFrom('events')
        .select(['ms', 'seq'])
        .where('emitter_id', '=', emitterId)
        .where('stream', '=', stream)
        .orderBy('ms', order)
        .orderBy('seq', order)
        .limit(1)
        .offset(skip),
    (emitterId, stream, skip) => [emitterId, stream, 1, skip],
  );
  return async (db: Db, emitterId: string, stream: StreamKind, skip: number): Promise<EventKey | undefined> => {
    const row = (await query(db, emitterId, stream, skip)).rows[0];
    return row && { ms: Number(row.ms), seq: Number(row.seq) };
  };
}

const keyFromOldest = keyAtPosition('asc');
const keyFromNewest = keyAtPosition('desc');

const deleteThrough = compiledOnce(
  'trimOldest.delete',
  (db, emitterId: string, stream: StreamKind, boundary: EventKey) =>
    db
      .deleteFrom('events')
      .where('emitter_id', '=', emitterId)
      .where('stream', '=', stream)
      .where((eb) => eventKey(eb, '<=', boundary)),
  (emitterId, stream, boundary) => [emitterId, stream, boundary.ms, boundary.ms, boundary.seq],
);

/** Deletes the `excess` oldest events of one stream of one emitter; costs O(excess), not O(stream). */
export async function trimOldest(db: Db, emitterId: string, stream: StreamKind, excess: number): Promise<void> {
  const boundary = await keyFromOldest(db, emitterId, stream, excess - 1);
  if (boundary) await deleteThrough(db, emitterId, stream, boundary);
}

/**
 * Deletes the events past the newest `retention` of one stream, except those stored at or after `keepFromMs`:
 * how many it deleted, and whether some past retention were kept. Costs O(retention).
 */
export async function trimPastRetentionBefore(
  db: Db,
  emitterId: string,
  stream: StreamKind,
  retention: number,
  keepFromMs: number,
): Promise<{ deleted: number; keptSome: boolean }> {
  const pastRetention = await keyFromNewest(db, emitterId, stream, retention);
  if (!pastRetention) return { deleted: 0, keptSome: false };
  const keptSome = pastRetention.ms >= keepFromMs;
  const through = keptSome ? { ms: keepFromMs - 1, seq: Number.MAX_SAFE_INTEGER } : pastRetention;
  return { deleted: Number((await deleteThrough(db, emitterId, stream, through)).numAffectedRows ?? 0), keptSome };
}

/** What readers see of a stream: its newest `retention` events, of the ones stored. */
export interface RetainedView {
  /** How many events readers see. */
  count: number;
  /** The newest stored event past retention, which readers do not see; undefined when none is stored. */
  hiddenThrough: EventKey | undefined;
}

/**
 * Appends trim a stream only once it holds a few events past retention (a trim costs more than an append),
 * so readers ask for this view and see exactly the newest `retention` events. The boundary is counted from
 * the newest event, not from the count: a trim committed between the two reads then hides nothing visible.
 */
export async function retainedView(db: Db, emitterId: string, stream: StreamKind, retention: number): Promise<RetainedView> {
  const stored = await countStream(db, emitterId, stream);
  if (stored <= retention) return { count: stored, hiddenThrough: undefined };
  return { count: retention, hiddenThrough: await keyFromNewest(db, emitterId, stream, retention) };
}

/** Counts the events of one stream, to correct the stored count after a range deletion. */
export async function countStream(db: Db, emitterId: string, stream: StreamKind): Promise<number> {
  const row = await db
    .selectFrom('events')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('emitter_id', '=', emitterId)
    .where('stream', '=', stream)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The retained events of one stream, newest first; `emit` covers the default stream and every named channel. */
export async function listEvents(db: Kysely<Database>, emitterId: string, stream: StreamKind, asked: PageRequest, retention: number): Promise<Page<EventRow>> {
  const view = await retainedView(db, emitterId, stream, retention);
  const page = resolveHead(asked);
  if (page === 'empty') return toPage<EventRow>([], view.count, eventIdOf, asked);
  let base = db.selectFrom('events').selectAll().where('emitter_id', '=', emitterId).where('stream', '=', stream);
  if (view.hiddenThrough) base = base.where((eb) => eventKey(eb, '>', view.hiddenThrough!));
  const keyOf = (cursor: string) => parseEventId(decodeCursor(cursor, (key) => parseEventId(key) !== undefined))!;
  let rows: EventRow[];
  if (page.before !== undefined) {
    const key = keyOf(page.before);
    rows = await base
      .where((eb) => eventKey(eb, '>', key))
      .orderBy('ms', 'asc')
      .orderBy('seq', 'asc')
      .limit(page.limit)
      .execute();
    rows.reverse();
  } else {
    let query = base;
    if (page.after !== undefined) {
      const key = keyOf(page.after);
      query = query.where((eb) => eventKey(eb, '<', key));
    }
    rows = await query.orderBy('ms', 'desc').orderBy('seq', 'desc').limit(page.limit).execute();
  }
  return toPage(rows, view.count, eventIdOf, asked);
}

/**
 * Retained events of the default stream and channels after `afterId` (oldest first, at most `limit`), for SSE replay;
 * `retention` undefined: every stored one, those past retention not yet trimmed too.
 */
export async function eventsAfter(
  db: Kysely<Database>,
  emitterId: string,
  stream: StreamKind,
  after: EventKey,
  retention: number | undefined,
  limit: number,
): Promise<EventRow[]> {
  const { hiddenThrough } = retention === undefined ? { hiddenThrough: undefined } : await retainedView(db, emitterId, stream, retention);
  if (hiddenThrough && compareKeys(hiddenThrough, after) > 0) after = hiddenThrough;
  return db
    .selectFrom('events')
    .selectAll()
    .where('emitter_id', '=', emitterId)
    .where('stream', '=', stream)
    .where((eb) => eventKey(eb, '>', after))
    .orderBy('ms', 'asc')
    .orderBy('seq', 'asc')
    .limit(limit)
    .execute();
}

/** Deletes the emitted events (all streams of kind `emit`) between two ids, inclusive; either end may be open. */
export async function deleteEventRange(db: Db, emitterId: string, start: EventKey | undefined, end: EventKey | undefined): Promise<number> {
  let query = db.deleteFrom('events').where('emitter_id', '=', emitterId).where('stream', '=', 'emit');
  if (start) query = query.where((eb) => eventKey(eb, '>=', start));
  if (end) query = query.where((eb) => eventKey(eb, '<=', end));
  const result = await query.executeTakeFirst();
  return Number(result.numDeletedRows);
}
