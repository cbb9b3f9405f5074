// What happens to emitted events before they are stored: ordering by ts, dedupe, and `<ms>-<seq>` ids.
import type { Transaction } from 'kysely';
import type { EmittedEvent } from '../runtime/types.js';
import type { DialectName } from '../store/database.js';
import type { Database, StreamKind } from '../store/schema.js';
import * as events from '../store/events.js';
import { ulid } from '../store/ids.js';

export type DedupeStrategy = 'unique' | 'greatest' | 'last';

export const UNIQUE_CACHE_SIZE = 100;

/** An event about to be stored on one stream of an emitter. */
export interface PendingEvent {
  stream: StreamKind;
  /** Channel for emits ('' = default stream); '$errors' or '$logs' for those streams. */
  name: string;
  event: unknown;
  key?: string | number | undefined;
  summary?: string | undefined;
  ts?: number | undefined;
}

/** The spec's event summary, as the API and the live stream return it. */
export interface EventSummary {
  id: string;
  indexed_at_ms: number;
  event: unknown;
  metadata: {
    emitter_id: string;
    emit_id: string;
    name: string;
    summary?: string;
    id?: string | number;
    ts?: number;
  };
}


/** Orders by `ts` oldest first; events without `ts` keep their order after the timed ones. */
export function orderByTs<T extends { ts?: number | undefined }>(emits: T[]): T[] {
  return emits
    .map((emit, index) => ({ emit, index }))
    .sort((a, b) => (a.emit.ts ?? Infinity) - (b.emit.ts ?? Infinity) || a.index - b.index)
    .map((x) => x.emit);
}

/** Applies a dedupe strategy to ordered emits; returns the accepted ones and the new cache. */
export function applyDedupe(strategy: DedupeStrategy | undefined, cache: unknown, emits: EmittedEvent[]): { accepted: EmittedEvent[]; cache: unknown } {
  if (!strategy) return { accepted: emits, cache };
  switch (strategy) {
    case 'unique': {
      const seen = Array.isArray(cache) ? [...(cache as string[])] : [];
      const accepted: EmittedEvent[] = [];
      for (const emit of emits) {
        const id = JSON.stringify(emit.id);
        if (seen.includes(id)) continue;
        accepted.push(emit);
        seen.push(id);
        if (seen.length > UNIQUE_CACHE_SIZE) seen.shift();
      }
      return { accepted, cache: seen };
    }
    case 'greatest': {
      let greatest = typeof cache === 'number' ? cache : -Infinity;
      const accepted: EmittedEvent[] = [];
      for (const emit of emits) {
        const id = Number(emit.id);
        if (Number.isNaN(id) || id <= greatest) continue;
        accepted.push(emit);
        greatest = id;
      }
      return { accepted, cache: greatest === -Infinity ? null : greatest };
    }
    case 'last': {
      const match = cache === null || cache === undefined ? -1 : emits.findIndex((e) => JSON.stringify(e.id) === cache);
      const accepted = emits.slice(match + 1);
      const last = accepted[accepted.length - 1];
      return { accepted, cache: last ? JSON.stringify(last.id) : cache ?? null };
    }
  }
}

/** Turns runtime emits into pending events, ordered by ts and deduped; returns the updated dedupe cache. */
export function pendingEmits(strategy: DedupeStrategy | undefined, cache: unknown, emits: EmittedEvent[]): { pending: PendingEvent[]; cache: unknown } {
  const { accepted, cache: next } = applyDedupe(strategy, cache, orderByTs(emits));
  const pending = accepted.map((e) => ({ stream: 'emit' as const, name: e.name ?? '', event: e.event, key: e.id, summary: e.summary, ts: e.ts }));
  return { pending, cache: next };
}

/**
 * Events a stream may hold past retention before an append trims it back: trimming costs more than an append,
 * so it happens once per this many events, and readers see only the newest `retention` (store/events.ts).
 */
export function trimSlack(retention: number): number {
  return Math.floor(retention / 10);
}

export interface AppendOptions {
  dialect: DialectName;
  retention: number;
  nowMs: number;
  /** Called with the emitter's dedupe cache, returns the pending events and the new cache. */
  dedupe?: (cache: unknown) => { pending: PendingEvent[]; cache: unknown };
}

/**
 * Stores events of one emitter inside the caller's transaction: ids strictly increasing even when the clock
 * steps back, the newest `retention` kept per stream (and up to trimSlack more, unseen). Returns the stored
 * summaries in id order.
 */
export async function appendEvents(
  trx: Transaction<Database>,
  emitterId: string,
  extra: PendingEvent[],
  options: AppendOptions,
): Promise<EventSummary[]> {
  const state = await events.readEmitterState(trx, options.dialect, emitterId);
  let pending = extra;
  let dedupe = state.dedupe;
  if (options.dedupe) {
    const result = options.dedupe(state.dedupe);
    pending = [...result.pending, ...extra];
    dedupe = result.cache;
  }
  if (!pending.length && dedupe === state.dedupe) return [];
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
      name: p.name,
      emit_id: ulid(options.nowMs),
      event_key: p.key === undefined ? null : JSON.stringify(p.key),
      summary: p.summary ?? null,
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
    await events.trimOldest(trx, emitterId, stream, excess);
    counts[stream] = options.retention;
  }
  await events.writeEmitterState(trx, emitterId, { lastMs, lastSeq, dedupe, counts });
  return rows.map((row) => toSummary(row, true));
}

export const TRUNCATE_BYTES = 1024;

/** The API view of a stored event; without `expand`, event JSON over 1 KiB becomes a truncation marker. */
export function toSummary(row: events.EventRow, expand: boolean): EventSummary {
  const metadata: EventSummary['metadata'] = { emitter_id: row.emitter_id, emit_id: row.emit_id, name: row.name };
  if (row.summary !== null) metadata.summary = row.summary;
  if (row.event_key !== null) metadata.id = JSON.parse(row.event_key) as string | number;
  if (row.ts !== null) metadata.ts = Number(row.ts);
  const size = Buffer.byteLength(row.event, 'utf8');
  const event = expand || size <= TRUNCATE_BYTES
    ? JSON.parse(row.event)
    : { $truncated: true, size, preview: Buffer.from(row.event, 'utf8').subarray(0, TRUNCATE_BYTES).toString('utf8') };
  return { id: events.eventIdOf(row), indexed_at_ms: Number(row.indexed_at_ms), event, metadata };
}
