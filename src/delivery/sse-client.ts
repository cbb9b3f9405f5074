// The state the live stream hub keeps for one client, and the frames it writes to it.
import type { ServerResponse } from 'node:http';
import type { EventKey, EventSummary } from '../model/events.js';
import type { FrameSelector, StreamFilter, StreamRequest } from './sse-requests.js';

/** Live events of one commit held back for a client, with the event before them (see publish). */
export interface HeldBatch {
  events: readonly EventSummary[];
  after: EventKey | undefined;
}

export interface Client {
  readonly emitterId: string;
  readonly filter: StreamFilter;
  /** The stream's `include` / `exclude`: its frames are its own, serialised for it alone. */
  readonly select: FrameSelector | undefined;
  readonly response: ServerResponse;
  readonly readAfter: StreamRequest['readAfter'];
  /** See StreamRequest: a client that has had no event yet is owed those after it. */
  readonly startsAfterId: string;
  /** Id of the last event written, to skip events seen both in the replay and live. */
  last: EventKey | undefined;
  /**
   * The newest event of the emitter this client was handed, written or not selected by its stream: a commit whose
   * event before it is newer shows that something did not reach this client yet.
   */
  seen: EventKey;
  /**
   * Live events held back while a replay is read or sent, or while the bus may be missing events (then `last` stays
   * where the gap began, so that what the gap hid is sent before them); null while the client is live.
   */
  queued: HeldBatch[] | null;
  /** Events in `queued`. */
  queuedCount: number;
  /** Bytes of the frames held in `queued` for a replay (its stream's events only): they wait for the client too. */
  queuedBytes: number;
  /** A replay is being read or sent. */
  replaying: boolean;
  /** A gap in the bus ended while this client's replay was under way: read again once it is done. */
  missedDuringReplay: boolean;
  closed: boolean;
}

/**
 * One frame per event: `id:` and `data:` (the summary's JSON, trimmed by `select`, has no newlines, so one data line).
 * The id line stays whatever is trimmed: a client resumes with it as Last-Event-ID.
 */
export function sseFrame(summary: EventSummary, select?: FrameSelector): string {
  return `id: ${summary.id}\ndata: ${JSON.stringify(select ? select(summary) : summary)}\n\n`;
}

/**
 * The frame of an event for one client: serialised once per commit for all clients that take every field (`frames`),
 * and for a client that trims the summary (`select`) on its own, so that only such a client pays for it.
 */
export function frameOf(summary: EventSummary, frames: Map<EventSummary, string> | null, select?: FrameSelector): string {
  if (select) return sseFrame(summary, select);
  let frame = frames?.get(summary);
  if (frame === undefined) {
    frame = sseFrame(summary);
    frames?.set(summary, frame);
  }
  return frame;
}
