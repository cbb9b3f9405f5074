// Serves live event streams (Server-Sent Events): replay after Last-Event-ID, fan-out, catch-up after a gap in the
// bus, heartbeats, slow-client cut-off.
import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { compareKeys, eventIdOf, parseEventId, type EventKey, type EventSummary } from '../model/events.js';
import type { EventBus } from './bus.js';
import type { DatabaseOutageLog } from '../store/outage-log.js';
import { Turns } from '../lib/turns.js';
import { drainedOrClosed } from '../lib/drained.js';
import { DEFAULT_SSE_OPTIONS, type RetainedAfter, type SseHubOptions, STREAM_HEADERS, type StreamRequest } from './sse-requests.js';
import { type Client, frameOf, type HeldBatch } from './sse-client.js';

/** A replay that found the database unreachable is read again this much later. */
const REPLAY_RETRY_MS = 1000;
/** Replays read at once, at most: a catch-up of thousands of streams must not take every pooled connection. */
const CONCURRENT_REPLAY_READS = 4;
/** Events one replay read returns, at most: up to 1 MB each, so a page is what one read may hold in memory. */
const REPLAY_PAGE = 16;

/** What a hub needs besides the bus and its options. */
export interface SseHubDependencies {
  logger: Logger;
  /** Where a replay's database outage is said, once for the whole outage. */
  outages: DatabaseOutageLog;
}

const HANDSHAKE = ':sse-handshake\n\n';

export class SseHub {
  private readonly clients = new Map<string, Set<Client>>();
  private readonly unsubscribe: () => void;
  private heartbeat: NodeJS.Timeout | undefined;
  private options: SseHubOptions;
  private closed = false;
  /** Clients whose replay found the database unreachable, read again at `retry`. */
  private readonly awaitingDatabase = new Set<Client>();
  private retry: NodeJS.Timeout | undefined;
  /** The bus may be missing events now: every stream holds its live events until the gap is caught up. */
  private inGap = false;
  private readonly replayReads = new Turns(CONCURRENT_REPLAY_READS);

  constructor(
    bus: EventBus,
    options: Partial<SseHubOptions>,
    private readonly deps: SseHubDependencies,
  ) {
    this.options = { ...DEFAULT_SSE_OPTIONS, ...options };
    this.unsubscribe = bus.subscribe((emitterId, events, afterId) => this.publish(emitterId, events, afterId), {
      opened: () => this.holdForGap(),
      closed: () => this.catchUp(),
    });
    this.armHeartbeat();
  }

  /** Changes the options of a running hub (tests shorten the heartbeat and the buffer bound). */
  configure(options: Partial<SseHubOptions>): void {
    this.options = { ...this.options, ...options };
    this.armHeartbeat();
  }

  /** Streams to `response` until the client goes away, the emitter is deleted or the hub closes. */
  async open(response: ServerResponse, request: StreamRequest): Promise<void> {
    const start = parseEventId(request.startsAfterId);
    const client: Client = {
      emitterId: request.emitterId,
      filter: request.filter,
      select: request.select,
      response,
      readAfter: request.readAfter,
      startsAfterId: request.startsAfterId,
      // Nothing up to where the stream starts is sent, even when its announcement comes late.
      last: start,
      seen: start ?? { ms: 0, seq: 0 },
      queued: request.replayFirst || this.inGap ? [] : null,
      queuedCount: 0,
      queuedBytes: 0,
      replaying: false,
      missedDuringReplay: false,
      closed: false,
    };
    response.writeHead(200, { ...request.headers, ...STREAM_HEADERS });
    response.on('close', () => this.remove(client));
    if (this.closed) return void response.end();
    let set = this.clients.get(client.emitterId);
    if (!set) this.clients.set(client.emitterId, (set = new Set()));
    set.add(client);
    // Registered before the replay is read, so that nothing committed meanwhile falls between the two.
    client.response.write(HANDSHAKE);
    if (request.replayFirst) await this.replay(client, client.startsAfterId, false);
  }

  /**
   * The bus may miss events from now on (in a cluster, its connection to the database was lost, or announced events
   * could not be read): every stream holds its live events back, so that none moves past what the gap hides.
   */
  private holdForGap(): void {
    this.inGap = true;
    for (const set of this.clients.values()) for (const client of set) client.queued ??= [];
  }

  /**
   * The gap is over: every stream reads the retained events after the last one it sent (or after where it started)
   * and sends what it had not had, then the live events it held.
   */
  private catchUp(): void {
    this.inGap = false;
    for (const set of this.clients.values()) for (const client of set) this.replayMissed(client);
  }

  /** Reads what the client may have missed now, or once the replay it is reading is done. */
  private replayMissed(client: Client): void {
    if (client.closed) return;
    if (client.replaying) client.missedDuringReplay = true;
    else void this.replay(client, this.resumeAfterId(client), true);
  }

  /**
   * Sends the retained events after `afterId` (`owed`: every stored one, see StreamRequest.readAfter), holding live
   * events back meanwhile, then those held back. Never rejects: a failure cuts the client (or, the database away,
   * reads again later).
   */
  private async replay(client: Client, afterId: string, owed: boolean): Promise<void> {
    client.queued ??= [];
    client.replaying = true;
    // The first read's: every event of the stream up to it is in that page or after it, which the next pages read.
    let newestId: string | undefined;
    let after = afterId;
    for (;;) {
      const page = await this.replayPage(client, after, owed);
      if (!page) return;
      newestId ??= page.newestId;
      after = page.after;
      // Events are up to 1 MB each: a client that stops reading must not hold the rest of its page (a stream that never
      // read held every retained event, 100 MB, until it closed, and one account may open 1,000). The page is let go
      // while the client drains, and read on after the last event written once it has.
      if (page.draining) await drainedOrClosed(client.response);
      if (client.closed || (!page.draining && !page.full)) break;
    }
    client.replaying = false;
    if (client.closed) return;
    // Events of other streams up to the watermark count as had too, though this stream's read did not return them.
    this.handedUpTo(client, parseEventId(newestId));
    if (client.missedDuringReplay) {
      client.missedDuringReplay = false;
      return this.replayMissed(client);
    }
    // Still in a gap (it began during this replay): keep holding until it is caught up.
    if (this.inGap) return;
    const held = client.queued ?? [];
    client.queued = null;
    client.queuedCount = 0;
    client.queuedBytes = 0;
    for (const [i, batch] of held.entries()) {
      // Committed after this read began, behind an event it did not see: hold the rest and read again.
      if (this.lacksEventBefore(client, batch)) {
        client.queued = held.slice(i);
        client.queuedCount = client.queued.reduce((n, b) => n + b.events.length, 0);
        client.queuedBytes = client.queued.reduce((n, b) => n + this.framedBytes(client, b.events, null), 0);
        return this.replayMissed(client);
      }
      this.sendBatch(client, batch, null);
    }
  }

  /**
   * Reads one page of a replay after `afterId` and writes it until the socket wants a drain: where it stopped (`after`),
   * and whether the page was full (more may follow). Undefined when the read failed, which it has dealt with.
   */
  private async replayPage(
    client: Client,
    afterId: string,
    owed: boolean,
  ): Promise<{ newestId: string; after: string; draining: boolean; full: boolean } | undefined> {
    let retained: RetainedAfter;
    await this.replayReads.take();
    try {
      retained = await client.readAfter(afterId, REPLAY_PAGE, owed);
      this.deps.outages.reached('read');
    } catch (error) {
      client.replaying = false;
      if (client.closed) return undefined;
      // The database is away: live events wait with the missed ones (up to maxQueuedWhileReplaying) until it is back.
      if (this.deps.outages.absorb(error)) {
        this.replayWhenBack(client);
        return undefined;
      }
      // Any other failure: the client reconnects with its Last-Event-ID, perhaps to a node that can read it.
      this.deps.logger.error({ err: error, emitterId: client.emitterId }, 'live stream replay failed');
      this.cut(client);
      return undefined;
    } finally {
      this.replayReads.give();
    }
    const { events, newestId } = retained;
    const full = events.length >= REPLAY_PAGE;
    let after = afterId;
    for (const summary of events) {
      if (client.closed) break;
      after = summary.id;
      if (!this.send(client, summary, null)) return { newestId, after, draining: true, full };
    }
    return { newestId, after, draining: false, full };
  }

  /** The client has been handed the emitter's events up to `key` (written, or not selected by its stream). */
  private handedUpTo(client: Client, key: EventKey | undefined): void {
    if (key && compareKeys(key, client.seen) > 0) client.seen = key;
  }

  /** The event before the batch has not been handed to the client: it was committed elsewhere and not read here yet. */
  private lacksEventBefore(client: Client, batch: HeldBatch): boolean {
    return batch.after !== undefined && compareKeys(batch.after, client.seen) > 0;
  }

  private sendBatch(client: Client, batch: HeldBatch, frames: Map<EventSummary, string> | null): void {
    for (const summary of batch.events) this.send(client, summary, frames);
    this.handedUpTo(client, parseEventId(batch.events[batch.events.length - 1]!.id));
  }

  /** Reads the client's replay again a little later, with every other replay that met the outage. */
  private replayWhenBack(client: Client): void {
    this.awaitingDatabase.add(client);
    this.retry ??= setTimeout(() => {
      this.retry = undefined;
      const waiting = [...this.awaitingDatabase];
      this.awaitingDatabase.clear();
      for (const each of waiting) if (!each.closed) this.replayMissed(each);
    }, REPLAY_RETRY_MS).unref();
  }

  /** The id after which the client may lack events: the last one it was sent, else where its stream starts. */
  private resumeAfterId(client: Client): string {
    return client.last ? eventIdOf(client.last) : client.startsAfterId;
  }

  /**
   * Fans events of one emitter out to its clients; each frame is serialised once for all of them. `afterId`: the
   * emitter's event before these; a client that has not been handed it reads what it lacks before them.
   */
  publish(emitterId: string, events: readonly EventSummary[], afterId?: string): void {
    const set = this.clients.get(emitterId);
    if (!set?.size) return;
    const frames = new Map<EventSummary, string>();
    const batch: HeldBatch = { events, after: afterId === undefined ? undefined : parseEventId(afterId) };
    for (const client of set) {
      // Committed on another node just before these, and its announcement not read yet here: read it first.
      if (!client.queued && this.lacksEventBefore(client, batch)) this.replayMissed(client);
      if (client.queued) {
        // A replay waits for the client to drain: live events held past the bound mean it stopped reading.
        const stalled = client.replaying && client.queuedBytes > this.options.maxBufferedBytes;
        if (client.queuedCount + events.length > this.options.maxQueuedWhileReplaying || stalled) this.cut(client);
        else {
          client.queued.push(batch);
          client.queuedCount += events.length;
          if (client.replaying) client.queuedBytes += this.framedBytes(client, events, frames);
        }
        continue;
      }
      if (this.tooSlow(client)) continue;
      this.sendBatch(client, batch, frames);
    }
  }

  /** Ends every stream of an emitter (it was deleted). */
  closeEmitter(emitterId: string): void {
    for (const client of [...(this.clients.get(emitterId) ?? [])]) this.end(client);
  }

  /** Ends the one stream `response` carries of an emitter, its last words `comment` (an SSE comment line). */
  closeStream(emitterId: string, response: ServerResponse, comment: string): void {
    const client = [...(this.clients.get(emitterId) ?? [])].find((c) => c.response === response);
    if (client && !client.closed) client.response.write(comment);
    if (client) this.end(client);
  }

  /** The emitters with clients connected. */
  emitterIds(): string[] {
    return [...this.clients.keys()];
  }

  /** Clients connected to one emitter, or to all. */
  clientCount(emitterId?: string): number {
    if (emitterId !== undefined) return this.clients.get(emitterId)?.size ?? 0;
    let total = 0;
    for (const set of this.clients.values()) total += set.size;
    return total;
  }

  /** Ends every stream; run before the HTTP server closes, which would otherwise wait for them. */
  close(): void {
    this.closed = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.retry) clearTimeout(this.retry);
    this.unsubscribe();
    for (const set of [...this.clients.values()]) {
      for (const client of [...set]) {
        // A last comment says why the stream ends; the client reconnects (to another node) with Last-Event-ID.
        if (!client.closed) client.response.write(': the server is stopping; reconnect with Last-Event-ID\n\n');
        this.end(client);
      }
    }
  }

  /** Writes one event if the client's stream selects it and has not had it; false when the socket wants a drain. */
  private send(client: Client, summary: EventSummary, frames: Map<EventSummary, string> | null): boolean {
    if (client.closed || !client.filter(summary)) return true;
    // Summary ids are always `<ms>-<seq>`, made by eventIdOf.
    const id = parseEventId(summary.id)!;
    if (client.last && compareKeys(id, client.last) <= 0) return true;
    client.last = id;
    return client.response.write(frameOf(summary, frames, client.select));
  }

  /** Length of the frames of the events the client's stream selects, as `send` would write them. */
  private framedBytes(client: Client, events: readonly EventSummary[], frames: Map<EventSummary, string> | null): number {
    let bytes = 0;
    for (const summary of events) if (client.filter(summary)) bytes += frameOf(summary, frames, client.select).length;
    return bytes;
  }

  /** A client that has not read what it was sent before is cut off, so that it slows nobody else. */
  private tooSlow(client: Client): boolean {
    if (client.closed) return true;
    if (client.response.writableLength <= this.options.maxBufferedBytes) return false;
    this.cut(client);
    return true;
  }

  private armHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.closed) return;
    this.heartbeat = setInterval(() => {
      // Also to clients holding events through a gap: a long outage must not let a proxy close their idle stream. A
      // client whose replay waits for a drain gets no comment in between, but is cut if it stopped reading.
      for (const set of this.clients.values()) for (const client of set) if (!this.tooSlow(client) && !client.replaying) client.response.write(HANDSHAKE);
    }, this.options.heartbeatMs);
    this.heartbeat.unref();
  }

  /** A slow client: drop what it has not read and close the connection at once. */
  private cut(client: Client): void {
    if (client.closed) return;
    this.deps.logger.info(
      { emitterId: client.emitterId, buffered: client.response.writableLength },
      'live stream cut off; the client resumes with its Last-Event-ID',
    );
    this.remove(client);
    client.response.destroy();
  }

  private end(client: Client): void {
    if (client.closed) return;
    this.remove(client);
    client.response.end();
  }

  private remove(client: Client): void {
    client.closed = true;
    this.awaitingDatabase.delete(client);
    const set = this.clients.get(client.emitterId);
    if (!set) return;
    set.delete(client);
    if (!set.size) this.clients.delete(client.emitterId);
  }
}
