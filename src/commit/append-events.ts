// Appends events to an emitter's streams inside the caller's transaction: `<ms>-<seq>` ids, dedupe state, retention.
import type { Transaction } from 'kysely';
import { LRUCache } from 'lru-cache';
import type { DialectName } from '../store/database.js';
import type { Database } from '../store/schema.js';
import * as events from '../store/events.js';
import { ulid } from '../model/ids.js';
import { newestEventIdOf, storableText, toSummary, trimSlack, type EventSummary, type PendingEvent, type StreamKind } from '../model/events.js';

/** How long events stay stored past retention on PostgreSQL, for other nodes to read them after their announcement. */
export const LIVE_READ_GRACE_MS = 10_000;
/** A trim that kept events for the grace is not tried again sooner on this node: each try costs O(retention). */
const KEPT_TRIM_RETRY_MS = 1_000;
/** Per emitter and stream, when this node may try such a trim again; one forgotten costs one try too early. */
const keptTrims = new LRUCache<string, number>({ max: 10_000 });

export interface AppendOptions {
  dialect: DialectName;
  retention: number;
  nowMs: number;
  /** Called with the emitter's dedupe cache, returns the pending events and the new cache. */
  dedupe?: (cache: unknown) => { pending: PendingEvent[]; cache: unknown };
}

/** What an append stored: the summaries in id order, and the id of the emitter's event before them. */
export interface AppendedEvents {
  events: EventSummary[];
  /** The emitter's newest event before these, on any stream (`0-0` when it had none): see CommittedEvents. */
  afterId: string;
}

/**
 * Stores events of one emitter inside the caller's transaction: ids strictly increasing even when the clock
 * steps back, the newest `retention` kept per stream (and up to trimSlack more, unseen).
 */
export async function appendEvents(trx: Transaction<Database>, emitterId: string, extra: PendingEvent[], options: AppendOptions): Promise<AppendedEvents> {
  const state = await events.readEmitterState(trx, options.dialect, emitterId);
  const afterId = newestEventIdOf(state);
  let pending = extra;
  let dedupe = state.dedupe;
  if (options.dedupe) {
    const result = options.dedupe(state.dedupe);
    pending = [...result.pending, ...extra];
    dedupe = result.cache;
  }
  if (!pending.length && dedupe === state.dedupe) return { events: [], afterId };
  let { lastMs, lastSeq } = state;
  const rows: events.EventRow[] = pending.map((p) => {
    if (options.nowMs > lastMs) {
      lastMs = options.nowMs;
      lastSeq = 0;
    } else lastSeq += 1;
    return {
      emitter_id: emitterId,
      stream: p.stream,
      ms: lastMs,
      seq: lastSeq,
      name: storableText(p.name),
      emit_id: ulid(options.nowMs),
      event_key: p.key === undefined ? null : JSON.stringify(p.key),
      summary: p.summary === undefined ? null : storableText(p.summary),
      ts: p.ts ?? null,
      event: JSON.stringify(p.event ?? null),
      indexed_at_ms: options.nowMs,
    };
  });
  await events.insertEvents(trx, options.dialect, rows);
  const counts = { ...state.counts };
  for (const row of rows) counts[row.stream] = (counts[row.stream] ?? 0) + 1;
  for (const stream of Object.keys(counts) as StreamKind[]) {
    const excess = counts[stream]! - options.retention;
    if (excess <= trimSlack(options.retention)) continue;
    if (options.dialect === 'postgres') {
      // Other nodes read announced events back by id: those of the last LIVE_READ_GRACE_MS stay, however many, so
      // that a commit larger than retention (a backlog run at once) reaches their live streams too. Readers still
      // see the newest `retention`.
      const key = `${emitterId}/${stream}`;
      if ((keptTrims.get(key) ?? 0) > options.nowMs) continue;
      const trim = await events.trimPastRetentionBefore(trx, emitterId, stream, options.retention, options.nowMs - LIVE_READ_GRACE_MS);
      counts[stream] = counts[stream]! - trim.deleted;
      if (trim.keptSome) keptTrims.set(key, options.nowMs + KEPT_TRIM_RETRY_MS);
      else keptTrims.delete(key);
    } else {
      await events.trimOldest(trx, emitterId, stream, excess);
      counts[stream] = options.retention;
    }
  }
  await events.writeEmitterState(trx, emitterId, { lastMs, lastSeq, dedupe, counts });
  return { events: rows.map((row) => toSummary(row, true)), afterId };
}
