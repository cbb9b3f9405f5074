// What a start of Tributary may be given besides its configuration: the CLI's choices, and limits tests shorten.
import type { Logger } from 'pino';
import type { Clock } from '../lib/clock.js';

export interface StartOptions {
  logger?: Logger;
  /** Whether `publicUrl` was configured explicitly (else it follows the port actually bound). */
  publicUrlGiven?: boolean;
  /** Create an account when the database has none (the `serve` command does; tests create their own). */
  createInitialAccount?: boolean;
  /** Where leases, timers, quotas and retries read the time (tests pass a ManualClock); the system clock by default. */
  clock?: Clock;
  /** How long a node serves an endpoint from its cache when no signal evicts it (5 s by default). */
  endpointCacheTtlMs?: number;
  /** PostgreSQL: how long a statement may go unanswered before it counts as an outage (QUERY_TIMEOUT_MS by default). */
  queryTimeoutMs?: number;
  /** PostgreSQL: how often a LISTEN connection is asked whether it still answers (LISTEN_CHECK_MS by default). */
  listenCheckMs?: number;
  /** How long a client may take to send a whole request (REQUEST_TIMEOUT_MS by default). */
  requestTimeoutMs?: number;
  /** Once a stop has begun, how long an idle keep-alive connection stays open (DRAIN_WINDOW_MS by default). */
  drainWindowMs?: number;
  /** Listener runs one source may have waiting (MAX_QUEUED_LISTENER_RUNS by default). */
  maxQueuedListenerRuns?: number;
  /** Live streams one account may hold open on this node (MAX_STREAMS_PER_ACCOUNT by default). */
  maxStreamsPerAccount?: number;
}
