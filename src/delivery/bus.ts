// Carries committed events to live consumers (the SSE hub): in this process, and with PostgreSQL to every node.
import { randomUUID } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { Logger } from 'pino';
import { parseEventId, toSummary, type EventSummary } from '../model/events.js';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import { eventsBetween, listen, notify, type Listener } from '../store/live.js';
import type { DatabaseOutageLog } from '../store/outage-log.js';

export type BusListener = (emitterId: string, events: readonly EventSummary[]) => void;
/** Told that events may have gone by unseen, so that the subscriber reads what it may have missed. */
export type MissedListener = () => void;

export interface EventBus {
  start(): Promise<void>;
  /** Hands events of one emitter, just committed here, to every subscriber in this process. */
  publish(emitterId: string, events: readonly EventSummary[]): void;
  /** Inside the committing transaction: tells the other nodes which events it stores (cluster mode only). */
  announceInTransaction?(trx: Transaction<Database>, emitterId: string, events: readonly EventSummary[]): Promise<void>;
  /** Returns a function that unsubscribes. `onMissed`: see MissedListener (only a cluster's bus can miss events). */
  subscribe(listener: BusListener, onMissed?: MissedListener): () => void;
  close(): Promise<void>;
}

/** The embedded mode's bus: synchronous calls in this process, no copies of the events. */
export class LocalBus implements EventBus {
  private readonly listeners = new Set<BusListener>();
  protected readonly missedListeners = new Set<MissedListener>();

  constructor(private readonly onListenerError: (error: unknown) => void = () => undefined) {}

  async start(): Promise<void> {}

  publish(emitterId: string, events: readonly EventSummary[]): void {
    if (!events.length) return;
    for (const listener of this.listeners) {
      // One failing consumer must not keep the events from the others, nor fail the commit that published them.
      try {
        listener(emitterId, events);
      } catch (error) {
        this.onListenerError(error);
      }
    }
  }

  subscribe(listener: BusListener, onMissed?: MissedListener): () => void {
    this.listeners.add(listener);
    if (onMissed) this.missedListeners.add(onMissed);
    return () => {
      this.listeners.delete(listener);
      if (onMissed) this.missedListeners.delete(onMissed);
    };
  }

  async close(): Promise<void> {
    this.listeners.clear();
    this.missedListeners.clear();
  }
}

const CHANNEL = 'tributary_events';
/** After announced events could not be read: when subscribers are told to read what they missed. */
const MISSED_READ_RETRY_MS = 1000;

/** What a notification carries: ids only (NOTIFY payloads are small); the receivers read the events. */
interface Announcement {
  /** The announcing node, which has delivered the events itself. */
  n: string;
  e: string;
  /** First and last event id of the commit (one commit's ids of one emitter are consecutive). */
  f: string;
  l: string;
}

/**
 * The cluster's bus: events committed on this node go to local subscribers at once, as with LocalBus, and are
 * announced to the other nodes by a NOTIFY sent in the committing transaction, so it arrives in commit order
 * and only if the commit succeeded. Each node reads announced events back by id and hands them to its own.
 * Announcements sent while its connection was down, or that it could not read, are lost: it then tells its
 * subscribers they may have missed events, and they read them from the store.
 */
export class PostgresBus extends LocalBus {
  private readonly node = randomUUID();
  private listener: Listener | undefined;
  /** Announcements are read one at a time, so that each emitter's events reach streams in order. */
  private reading: Promise<void> = Promise.resolve();
  /** Subscribers are told of a failed read this long after it, when the database may answer again. */
  private missedRetry: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Store,
    private readonly databaseUrl: string,
    private readonly logger: Logger,
    /** Where failures that are a database outage are said, once for the whole outage. */
    private readonly outages: DatabaseOutageLog,
  ) {
    super((error) => logger.error({ err: error }, 'live fan-out failed'));
  }

  override async start(): Promise<void> {
    this.listener = listen(this.databaseUrl, CHANNEL, (payload) => this.receive(payload), {
      onError: (error) => {
        if (!this.outages.absorbed(error)) this.logger.warn({ err: error }, 'event bus connection failed; reconnecting');
      },
      onReconnect: () => {
        this.outages.reached();
        this.missed();
      },
    });
    await this.listener.ready;
  }

  async announceInTransaction(trx: Transaction<Database>, emitterId: string, events: readonly EventSummary[]): Promise<void> {
    if (!events.length) return;
    const announcement: Announcement = { n: this.node, e: emitterId, f: events[0]!.id, l: events[events.length - 1]!.id };
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
        this.publish(
          message.e,
          rows.map((row) => toSummary(row, true)),
        );
      })
      .catch((error: unknown) => {
        if (!this.outages.absorbed(error)) {
          this.logger.error({ err: error, emitterId: message.e }, 'could not read announced events; live streams read them again shortly');
        }
        this.missedRetry ??= setTimeout(() => {
          this.missedRetry = undefined;
          this.missed();
        }, MISSED_READ_RETRY_MS).unref();
      });
  }

  /** Tells every subscriber that events may have gone by unseen. */
  private missed(): void {
    for (const onMissed of this.missedListeners) {
      try {
        onMissed();
      } catch (error) {
        this.logger.error({ err: error }, 'live fan-out failed to catch up');
      }
    }
  }

  override async close(): Promise<void> {
    if (this.missedRetry) clearTimeout(this.missedRetry);
    await this.listener?.close();
    await this.reading;
    await super.close();
  }
}
