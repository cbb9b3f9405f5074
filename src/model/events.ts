// Events as the specification shows them: streams, ids `<ms>-<seq>`, summaries and the truncation of large ones.
import { firstCharacters } from '../runtime/worker/quote.js';

/** The three streams of an emitter: its emits (every channel), `$errors` and `$logs`. */
export type StreamKind = 'emit' | '$errors' | '$logs' | '$sse';

/** What started an invocation. */
export type TriggerKind = 'manual' | 'http' | 'timer' | 'listener';

/** An event's position in its emitter's sequence: the two parts of `<ms>-<seq>`. */
export interface EventKey {
  ms: number;
  seq: number;
}

const EVENT_ID = /^(\d{1,16})-(\d{1,12})$/;

export function parseEventId(id: string): EventKey | undefined {
  const match = EVENT_ID.exec(id);
  return match ? { ms: Number(match[1]), seq: Number(match[2]) } : undefined;
}

/** Negative when `a` is the older event, positive when it is the newer, zero for the same. */
export function compareKeys(a: EventKey, b: EventKey): number {
  return a.ms - b.ms || a.seq - b.seq;
}

export function eventIdOf(key: EventKey): string {
  return `${key.ms}-${key.seq}`;
}

/** The id of an emitter's newest event from its stored state (`lastSeq` -1: none yet, and `0-0` comes before all). */
export function newestEventIdOf(state: { lastMs: number; lastSeq: number }): string {
  return state.lastSeq < 0 ? '0-0' : eventIdOf({ ms: state.lastMs, seq: state.lastSeq });
}

/** Text as both databases store it: PostgreSQL's text holds no NUL character, so a NUL becomes U+FFFD on both. */
export function storableText(text: string): string {
  return text.includes('\0') ? text.replaceAll('\0', '\uFFFD') : text;
}

/** The most characters (code points) of a `$logs` line or an error the server keeps as its event's summary. */
const MADE_SUMMARY_CHARS = 200;

/**
 * The summary the server makes for a `$logs` or `$errors` event: its text's first 200 characters. Cut in code points:
 * cut in UTF-16 units, an emoji at the edge left half a surrogate pair, which SQLite read back as three U+FFFD.
 */
export function madeSummary(text: string): string {
  return firstCharacters(text, MADE_SUMMARY_CHARS);
}

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

/** A stored event as the summary is made from it (the events table's row). */
export interface StoredEvent extends EventKey {
  emitter_id: string;
  /** Channel name for emits (empty for the default stream); `$errors`/`$logs` for those streams. */
  name: string;
  emit_id: string;
  /** The `id` given to `$emit`, as JSON (string or number), or null. */
  event_key: string | null;
  summary: string | null;
  ts: number | null;
  /** The event's JSON text. */
  event: string;
  indexed_at_ms: number;
}

/**
 * Events a stream may hold past retention before an append trims it back: trimming costs more than an append,
 * so it happens once per this many events, and readers see only the newest `retention` (store/events.ts).
 */
export function trimSlack(retention: number): number {
  return Math.floor(retention / 10);
}

export const TRUNCATE_BYTES = 1024;

/**
 * The longest start of `text` that fits in `bytes` of UTF-8, cut before a character rather than inside one: a cut
 * inside one decodes to U+FFFD, a character the event never held, and makes the preview longer than `bytes`.
 */
function utf8Prefix(text: string, bytes: number): string {
  const encoded = Buffer.from(text, 'utf8');
  let end = Math.min(bytes, encoded.length);
  // 0b10xxxxxx is a continuation byte: the character it belongs to started before `end` and does not fit.
  while (end > 0 && end < encoded.length && (encoded[end]! & 0xc0) === 0x80) end--;
  return encoded.subarray(0, end).toString('utf8');
}

/** The API view of a stored event; without `expand`, event JSON over 1 KiB becomes a truncation marker. */
export function toSummary(row: StoredEvent, expand: boolean): EventSummary {
  const metadata: EventSummary['metadata'] = { emitter_id: row.emitter_id, emit_id: row.emit_id, name: row.name };
  if (row.summary !== null) metadata.summary = row.summary;
  if (row.event_key !== null) metadata.id = JSON.parse(row.event_key) as string | number;
  if (row.ts !== null) metadata.ts = Number(row.ts);
  const size = Buffer.byteLength(row.event, 'utf8');
  const event = expand || size <= TRUNCATE_BYTES ? JSON.parse(row.event) : { $truncated: true, size, preview: utf8Prefix(row.event, TRUNCATE_BYTES) };
  return { id: eventIdOf(row), indexed_at_ms: Number(row.indexed_at_ms), event, metadata };
}
