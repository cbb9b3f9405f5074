// Carries committed events to live consumers (the SSE hub): in this process, and with PostgreSQL to every node.
import { randomUUID } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { Logger } from 'pino';
import { parseEventId, toSummary, type EventSummary } from '../model/events.js';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import { eventsBetween, listen, notify, type Listener } from '../store/live.js';
import type { ListenLosses } from './listen-losses.js';
import type { DatabaseOutageLog } from '../store/outage-log.js';

/** `afterId`: the emitter's event just before these (see CommittedEvents); absent when unknown. */
export type BusListener = (emitterId: string, events: readonly EventSummary[], afterId?: string) => void;
/** Told of a gap in what the bus hands on: events may go by unseen from `opened` until `closed`. */
export interface GapListener {
  /** From now on events may be missed (the connection was lost, or announced events could not be read). */
  opened(): void;
  /** The bus hears again: read what may have gone by since `opened`. */
  closed(): void;
}

export interface EventBus {
  start(): Promise<void>;
  /** Hands events of one emitter, just committed here, to every subscriber in this process. */
  publish(emitterId: string, events: readonly EventSummary[], afterId?: string): void;
  /** Inside the committing transaction: tells the other nodes which events it stores (cluster mode only). */
  announceInTransaction?(trx: Transaction<Database>, emitterId: string, events: readonly EventSummary[], afterId: string): Promise<void>;
  /** Returns a function that unsubscribes. `gaps`: see GapListener (only a cluster's bus has gaps). */
  subscribe(listener: BusListener, gaps?: GapListener): () => void;
  close(): Promise<void>;
}

/** The embedded mode's bus: synchronous calls in this process, no copies of the events. */
export class LocalBus implements EventBus {
  private readonly listeners = new Set<BusListener>();
  protected readonly gapListeners = new Set<GapListener>();

  constructor(private readonly onListenerError: (error: unknown) => void = () => undefined) {}

  async start(): Promise<void> {}

  publish(emitterId: string, events: readonly EventSummary[], afterId?: string): void {
    if (!events.length) return;
    for (const listener of this.listeners) {
      // One failing consumer must not keep the events from the others, nor fail the commit that published them.
      try {
        listener(emitterId, events, afterId);
      } catch (error) {
        this.onListenerError(error);
      }
    }
  }

  subscribe(listener: BusListener, gaps?: GapListener): () => void {
    this.listeners.add(listener);
    if (gaps) this.gapListeners.add(gaps);
    return () => {
      this.listeners.delete(listener);
      if (gaps) this.gapListeners.delete(gaps);
    };
  }

  async close(): Promise<void> {
    this.listeners.clear();
    this.gapListeners.clear();
  }
}

const CHANNEL = 'tributary_events';
/** After announced events could not be read: when subscribers are told to read what they missed. */
const FAILED_READ_RETRY_MS = 1000;

/** What a notification carries: ids only (NOTIFY payloads are small); the receivers read the events. */
interface Announcement {
  /** The announcing node, which has delivered the events itself. */
  n: string;
  e: string;
  /** First and last event id of the commit (one commit's ids of one emitter are consecutive). */
  f: string;
  l: string;
  /** The emitter's event before them (CommittedEvents.afterId). */
  p?: string;
}

/**
 * The cluster's bus: events committed on this node go to local subscribers at once, as with LocalBus, and are
 * announced to the other nodes by a NOTIFY sent in the committing transaction, so it arrives in commit order
 * and only if the commit succeeded. Each node reads announced events back by id and hands them to its own.
 * Announcements sent while its connection was down, or that it could not read, are lost: its subscribers hear of
 * the gap when it opens and when it closes, and read what it hid from the store.
 */
export class PostgresBus extends LocalBus {
  private readonly node = randomUUID();
  private listener: Listener | undefined;
  /** Announcements are read one at a time, so that each emitter's events reach streams in order. */
  private reading: Promise<void> = Promise.resolve();
  /** What keeps a gap open: the LISTEN connection is down, or a read failed (it ends a little later, see below). */
  private readonly gap = { connectionDown: false, readFailed: false };
  /** After a failed read: when the gap it opened ends, and the database may answer again. */
  private failedReadRetry: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Store,
    private readonly databaseUrl: string,
    private readonly logger: Logger,
    /** Where failures that are a database outage are said, once for the whole outage. */
    private readonly outages: DatabaseOutageLog,
    /** Where a lost LISTEN connection is said when the database itself stays up. */
    private readonly losses: ListenLosses,
    /** How often its LISTEN connection is asked whether it still answers (LISTEN_CHECK_MS by default). */
    private readonly listenCheckMs?: number,
  ) {
    super((error) => logger.error({ err: error }, 'live fan-out failed'));
  }

  override async start(): Promise<void> {
    this.listener = listen(this.databaseUrl, CHANNEL, (payload) => this.receive(payload), {
      onError: (error) => {
        if (!this.losses.failed(CHANNEL, error)) this.logger.warn({ err: error }, 'event bus connection failed; reconnecting');
      },
      // Every LISTEN in place ends a gap, the first one too: a start that needed retries opened one already.
      onConnected: (connected) => {
        if (connected) {
          this.outages.reached('read');
          this.losses.listening(CHANNEL);
        }
        this.setGap('connectionDown', !connected);
      },
      ...(this.listenCheckMs !== undefined && { checkEveryMs: this.listenCheckMs }),
    });
    await this.listener.ready;
  }

  async announceInTransaction(trx: Transaction<Database>, emitterId: string, events: readonly EventSummary[], afterId: string): Promise<void> {
    if (!events.length) return;
    const announcement: Announcement = { n: this.node, e: emitterId, f: events[0]!.id, l: events[events.length - 1]!.id, p: afterId };
    await notify(trx, CHANNEL, JSON.stringify(announcement));
  }

  private receive(payload: string): void {
    let message: Announcement;
    try {
      message = JSON.parse(payload) as Announcement;
    } catch {
      return;
    }
    const from = parseEventId(message.f);
    const to = parseEventId(message.l);
    if (message.n === this.node || !from || !to) return;
    this.reading = this.reading
      .then(async () => {
        const rows = await eventsBetween(this.store.db, message.e, from, to);
        this.outages.reached('read');
        this.publish(
          message.e,
          rows.map((row) => toSummary(row, true)),
          message.p,
        );
      })
      .catch((error: unknown) => {
        if (!this.outages.absorb(error)) {
          this.logger.error({ err: error, emitterId: message.e }, 'could not read announced events; live streams read them again shortly');
        }
        // Opened before the next announcement is read (this chain reads them one at a time), so none moves past it.
        this.setGap('readFailed', true);
        this.failedReadRetry ??= setTimeout(() => {
          this.failedReadRetry = undefined;
          this.setGap('readFailed', false);
        }, FAILED_READ_RETRY_MS).unref();
      });
  }

  /** Tells the subscribers when the first cause of a gap begins and when the last one ends. */
  private setGap(cause: keyof PostgresBus['gap'], on: boolean): void {
    const wasOpen = this.gap.connectionDown || this.gap.readFailed;
    this.gap[cause] = on;
    const isOpen = this.gap.connectionDown || this.gap.readFailed;
    if (isOpen === wasOpen) return;
    for (const gaps of this.gapListeners) {
      try {
        if (isOpen) gaps.opened();
        else gaps.closed();
      } catch (error) {
        this.logger.error({ err: error }, 'live fan-out failed to handle a gap in the bus');
      }
    }
  }

  override async close(): Promise<void> {
    if (this.failedReadRetry) clearTimeout(this.failedReadRetry);
    await this.listener?.close();
    await this.reading;
    await super.close();
  }
}
