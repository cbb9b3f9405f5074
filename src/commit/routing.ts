// The seam between storing events and delivering them: routing inside the commit, live fan-out after it.
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../store/schema.js';
import type { EventSummary } from '../model/events.js';
import type { QuotaVerdict } from '../model/quotas.js';

/** Events one commit stored for one emitter. */
export interface CommittedEvents {
  emitterId: string;
  /** The account owning the emitter; subscriptions are matched within it. */
  userId: string;
  /** Listener hops that led to the run that emitted these (0 for HTTP, timers, manual runs, hooks). */
  depth: number;
  events: EventSummary[];
  /**
   * The emitter's newest event before these, on any stream (`0-0` when it had none). A live consumer that has not
   * seen it has missed events (committed on another node, announced later than these): it reads them first.
   */
  afterId: string;
}

export interface EventRouter {
  /** Inside the committing transaction: queue webhook deliveries and listener invocations for these events. */
  routeInTransaction(trx: Transaction<Database>, committed: CommittedEvents): Promise<void>;
  /** After the commit: live fan-out (SSE) and waking whoever has new work. */
  afterCommit(committed: CommittedEvents): void;
}

/**
 * Whether an account may start another run now (the quota service). `db`: where to read usage, the transaction a
 * caller holds when it asks from inside one (on SQLite, a read outside it would wait for the transaction's end).
 */
export interface QuotaCheck {
  check(userId: string, nowMs: number, db?: Kysely<Database>): Promise<QuotaVerdict>;
}
