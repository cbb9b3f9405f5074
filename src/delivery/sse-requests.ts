// The options of the live stream hub, and what one stream asks it for.
import type { EventSummary } from '../model/events.js';

export interface SseHubOptions {
  /** Between `:sse-handshake` comments, which keep proxies from closing idle streams. */
  heartbeatMs: number;
  /**
   * A client still holding more unsent output than this when the next commit's events (or a heartbeat) come
   * is cut off, instead of buffering without bound; one commit's events are always written whole. So is a client
   * replaying a Last-Event-ID for which more live events than this are held when the next commit's come.
   */
  maxBufferedBytes: number;
  /** Live events held for a client while its replay is read (or a gap in the bus lasts); past this it is cut off. */
  maxQueuedWhileReplaying: number;
}

/** The headers of every live stream, which a HEAD request of one gets too. */
export const STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
} as const;

export const DEFAULT_SSE_OPTIONS: SseHubOptions = { heartbeatMs: 15_000, maxBufferedBytes: 1024 * 1024, maxQueuedWhileReplaying: 10_000 };

/** Response headers of a stream besides STREAM_HEADERS, by lower-case name. */
export type StreamHeaders = Record<string, number | string | string[]>;

/** What one stream carries: a predicate on event summaries of one emitter. */
export type StreamFilter = (summary: EventSummary) => boolean;

/** What a stream's frames hold of each event summary (its `include` / `exclude`). */
export type FrameSelector = (summary: EventSummary) => unknown;

export interface StreamRequest {
  emitterId: string;
  filter: StreamFilter;
  /** The stream carries the events after this id: the client's Last-Event-ID, else the emitter's newest event. */
  startsAfterId: string;
  /** The client sent a Last-Event-ID: the retained events after it are sent before live ones. */
  replayFirst: boolean;
  /**
   * Events of the stream after an event id, oldest first, at most `limit`: the replay, and the catch-up after a gap.
   * `owed`: a catch-up of a stream that stayed connected, owed every event still stored after it, also those past
   * retention (a node cut off while more than --event-retention were committed); else only the retained ones.
   */
  readAfter: (afterId: string, limit: number, owed: boolean) => Promise<RetainedAfter>;
  /** Extra response headers: those the request's hooks set (its id, the rate limit it counts against). */
  headers?: StreamHeaders;
  /** Trims each summary before it is framed; absent, the stream shares each event's one frame with every such stream. */
  select?: FrameSelector | undefined;
}

/** A replay's read: a page of the stream's events, and the emitter's newest event id (any stream) as it was before them. */
export interface RetainedAfter {
  events: EventSummary[];
  /** Read before the events: every event of the stream up to it is among them. */
  newestId: string;
}
