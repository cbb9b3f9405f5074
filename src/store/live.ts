// PostgreSQL LISTEN/NOTIFY for the cluster bus: announcing committed event ids, listening, reading them back.
import type pg from 'pg';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from './schema.js';
import { eventKey, type EventRow } from './events.js';
import type { EventKey } from '../model/events.js';

type Db = Kysely<Database> | Transaction<Database>;

/** Sends a notification; inside a transaction PostgreSQL delivers it at commit, in commit order, or never. */
export async function notify(db: Db, channel: string, payload: string): Promise<void> {
  await sql`select pg_notify(${channel}, ${payload})`.execute(db);
}

/** Every event of an emitter from `from` to `to` inclusive, all streams, oldest first. */
export function eventsBetween(db: Kysely<Database>, emitterId: string, from: EventKey, to: EventKey): Promise<EventRow[]> {
  return db
    .selectFrom('events')
    .selectAll()
    .where('emitter_id', '=', emitterId)
    .where((eb) => eventKey(eb, '>=', from))
    .where((eb) => eventKey(eb, '<=', to))
    .orderBy('ms', 'asc')
    .orderBy('seq', 'asc')
    .execute();
}

export interface Listener {
  /** Resolves once the first LISTEN is in place. */
  readonly ready: Promise<void>;
  close(): Promise<void>;
}

/**
 * Listens on `channel` over a dedicated connection (a pooled one cannot hold a LISTEN), reconnecting after
 * failures; notifications sent while it was disconnected are lost, which live streams tolerate.
 */
export interface ListenCallbacks {
  onError(error: unknown): void;
  /** Each time the LISTEN is in place again after a lost connection (what was sent meanwhile is lost). */
  onReconnect?: () => void;
  /** Whether notifications arrive now: true once the LISTEN is in place, false as soon as its connection is lost. */
  onConnected?: (connected: boolean) => void;
  /** How often the connection is asked whether it still answers (LISTEN_CHECK_MS by default; tests shorten it). */
  checkEveryMs?: number;
}

/**
 * How often a LISTEN connection is asked `select 1`; one unanswered by the next ask counts as lost. A listening
 * connection only receives, so a link that drops it without a word (a NAT or load balancer past its idle timeout, a
 * network cut with no reset) would otherwise leave the node deaf for good, believing itself signalled: its loops not
 * polling, its live streams missing every event of other nodes.
 */
export const LISTEN_CHECK_MS = 10_000;

/** The error a LISTEN connection that stopped answering ends with, as a lost connection's error is said. */
export class SilentListenError extends Error {
  override name = 'SilentListenError';
  /** A connection that timed out, as Node says it: read as a lost connection (an outage only if the pool fails too). */
  readonly code = 'ETIMEDOUT';
  constructor(channel: string, ms: number) {
    super(`the LISTEN connection on ${channel} did not answer within ${ms} ms; connecting again`);
  }
}

export function listen(url: string, channel: string, onPayload: (payload: string) => void, callbacks: ListenCallbacks): Listener {
  const { onError, onReconnect, onConnected, checkEveryMs = LISTEN_CHECK_MS } = callbacks;
  if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`invalid channel name "${channel}"`);
  let client: pg.Client | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  let listening = false;
  let check: NodeJS.Timeout | undefined;
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));

  const reconnect = (failed: pg.Client) => {
    if (closed || client !== failed) return;
    client = undefined;
    clearInterval(check);
    onConnected?.(false);
    // A polite end waits for the server's answer, which a silent link never brings: the socket goes at once.
    failed.connection.stream.destroy();
    retry = setTimeout(() => void connect(), 1000);
    retry.unref();
  };
  const connect = async () => {
    // Loaded here, not at startup: a server on SQLite never needs the driver.
    const { default: driver } = await import('pg');
    if (closed) return;
    const next = new driver.Client({ connectionString: url });
    client = next;
    next.on('notification', (message) => {
      if (message.channel === channel && message.payload !== undefined) onPayload(message.payload);
    });
    next.on('error', (error) => {
      // One dropped for silence says so itself; the end of its socket is not another loss.
      if (closed || client !== next) return;
      onError(error);
      reconnect(next);
    });
    next.on('end', () => reconnect(next));
    try {
      await next.connect();
      await next.query(`LISTEN ${channel}`);
      if (listening) onReconnect?.();
      listening = true;
      onConnected?.(true);
      markReady();
      watchSilence(next);
    } catch (error) {
      if (closed) return;
      onError(error);
      reconnect(next);
    }
  };
  /** Asks the connection every `checkEveryMs`; one ask still unanswered at the next means the link went silent. */
  const watchSilence = (watched: pg.Client) => {
    let asking = false;
    check = setInterval(() => {
      if (client !== watched) return;
      if (asking) {
        onError(new SilentListenError(channel, checkEveryMs));
        reconnect(watched);
        return;
      }
      asking = true;
      watched.query('select 1').then(
        () => (asking = false),
        // A failed ask is the connection's error too, which its error or end event handles.
        () => undefined,
      );
    }, checkEveryMs);
    check.unref();
  };
  void connect();
  return {
    ready,
    close: async () => {
      closed = true;
      if (retry) clearTimeout(retry);
      clearInterval(check);
      markReady();
      const last = client;
      // Ended politely, unless the link went silent: then the socket goes without waiting for an answer.
      const silent = new Promise<void>((resolve) => setTimeout(resolve, checkEveryMs).unref());
      await Promise.race([last?.end().catch(() => undefined), silent]);
      last?.connection.stream.destroy();
    },
  };
}

/** Whether the database answers a statement on a pooled connection (the outage it met if not). */
export async function databaseAnswers(db: Kysely<Database>): Promise<unknown> {
  try {
    await sql`select 1`.execute(db);
    return undefined;
  } catch (error) {
    return error ?? new Error('the database did not answer');
  }
}
