// The state the live stream hub keeps for one client, and the frames it writes to it.
import type { ServerResponse } from 'node:http';
import type { EventKey, EventSummary } from '../model/events.js';
import type { StreamFilter, StreamRequest } from './sse-requests.js';

/** Live events of one commit held back for a client, with the event before them (see publish). */
export interface HeldBatch {
  events: readonly EventSummary[];
  after: EventKey | undefined;
}

export interface Client {
  readonly emitterId: string;
  readonly filter: StreamFilter;
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

/** One frame per event: `id:` and `data:` (the summary's JSON has no newlines, so one data line). */
export function sseFrame(summary: EventSummary): string {
  return `id: ${summary.id}\ndata: ${JSON.stringify(summary)}\n\n`;
}

/** The frame of an event, serialised once per commit for all clients (`frames`). */
export function frameOf(summary: EventSummary, frames: Map<EventSummary, string> | null): string {
  let frame = frames?.get(summary);
  if (frame === undefined) {
    frame = sseFrame(summary);
    frames?.set(summary, frame);
  }
  return frame;
}
