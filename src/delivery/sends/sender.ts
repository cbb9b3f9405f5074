// The outbox of one node: claims due workflow sends with a lease, carries each out, and records what came of it.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../../lib/clock.js';
import { bindings, SecretBox, UnreadableSecretError } from '../../lib/secrets.js';
import type { PollCadence } from '../../lib/poll-cadence.js';
import { AccountSlots } from '../account-slots.js';
import { type LeasedQueue, LeasedQueuePump } from '../leased-queue.js';
import { FairClaims } from '../fair-claims.js';
import { nextLeaseEndMs } from '../../store/lease-ends.js';
import type { Store } from '../../store/database.js';
import * as sends from '../../store/sends.js';
import type { DatabaseOutageLog } from '../../store/outage-log.js';
import { afterAttempt, refused, type Performer, type SendResult } from './result.js';

export interface OutboxSenderOptions {
  /** Seconds before each retry of a failed send; the first attempt plus one per entry (the webhooks' schedule). */
  retryScheduleSeconds: readonly number[];
  /** How long a claim is held before another node may take the send back: longer than any attempt. */
  leaseMs: number;
  /** How long to wait before looking unasked: for rows other nodes queued unannounced or left leased. */
  cadence: PollCadence;
  /** Where failures that are a database outage are said, once for the whole outage. */
  outages: DatabaseOutageLog;
  /** Attempts in flight at once. */
  concurrency: number;
  /** Reclaim every lease at start (embedded mode: this process is the only one). */
  reclaimAtStart: boolean;
  /** Sends were given back unmade (the sender is stopping): other nodes may make them at once. */
  onReleased?: () => void;
}

/** What carries out each kind; email and s3 only when the server has their settings. */
export interface Performers {
  http: Performer;
  email: Performer | undefined;
  s3: Performer | undefined;
}

/** The settings a kind needs, named in the error of a step that uses it on a server without them. */
const NEEDED_SETTINGS = {
  email: "the server's --smtp-url setting",
  s3: "the server's --s3-access-key-id and --s3-secret-access-key settings (and --s3-endpoint for a store other than AWS S3)",
} as const;

export class OutboxSender {
  private readonly owner = `node-${randomUUID()}`;
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Aborted by stop(): attempts in flight are cut off, and given back untried. */
  private readonly stopping = new AbortController();
  private readonly pump: LeasedQueuePump<sends.ClaimedSend>;
  /** The slots each account holds: one account's slow destinations leave others room. */
  private readonly slots: AccountSlots;
  private readonly claims: FairClaims;

  constructor(
    private readonly store: Store,
    private readonly performers: Performers,
    private readonly options: OutboxSenderOptions,
    private readonly logger: Logger,
    private readonly clock: Clock,
    /** Opens the payloads the step's commit sealed. */
    private readonly secrets: Pick<SecretBox, 'decrypt'>,
  ) {
    this.slots = new AccountSlots(options.concurrency);
    this.claims = new FairClaims(store, 'workflow_sends', this.slots);
    const claims = this.claims;
    const queue: LeasedQueue<sends.ClaimedSend> = {
      freeSlots: () => options.concurrency - this.inFlight.size,
      claim: async (count) => {
        const nowMs = clock.now();
        return sends.claimDueSends(store.db, this.owner, nowMs, options.leaseMs, await claims.dueIds(count, nowMs));
      },
      release: (rows) => this.release(rows.map((row) => row.id)),
      // One node (SQLite) holds every lease itself and gives them back at start.
      ...(options.reclaimAtStart ? {} : { nextLeaseEndMs: (nowMs: number) => nextLeaseEndMs(store.db, 'workflow_sends', nowMs) }),
      nextDueMs: () => claims.nextDueMs(clock.now()),
      launch: (row) => this.launch(row),
    };
    this.pump = new LeasedQueuePump(queue, {
      table: 'workflow_sends',
      what: 'the send outbox',
      clock,
      cadence: options.cadence,
      outages: options.outages,
      watchMs: options.leaseMs / 3,
      logger,
    });
  }

  /** Why `$.send.<kind>()` cannot be carried out here (a setting is missing), or undefined when it can. */
  unavailable(kind: string): string | undefined {
    if (kind !== 'email' && kind !== 's3') return undefined;
    return this.performers[kind] ? undefined : `$.send.${kind}() needs ${NEEDED_SETTINGS[kind]}`;
  }

  async start(): Promise<void> {
    if (this.options.reclaimAtStart) await sends.releaseAllSendLeases(this.store.db);
    this.pump.start();
  }

  /** Carries out what is due now; called after a step's commit queued sends, and by the fallback timer. */
  wake(): void {
    this.pump.wake();
  }

  /** Stops claiming, cuts off attempts in flight (they stay pending, to be made again) and closes connections. */
  async stop(): Promise<void> {
    await this.pump.stop();
    this.stopping.abort(new Error('the server is stopping'));
    await Promise.all(this.inFlight.values());
    await Promise.all([this.performers.http, this.performers.email, this.performers.s3].map((p) => p?.close()));
  }

  /** Gives sends held by this sender back to the table, unmade, and says so to whoever may make them. */
  private async release(ids: string[]): Promise<void> {
    if (!ids.length) return;
    await sends.releaseSends(this.store.db, ids, this.owner);
    this.options.onReleased?.();
  }

  private launch(row: sends.ClaimedSend): void {
    if (this.inFlight.has(row.id)) return;
    const freeSlot = this.slots.takeForAttempt(row.user_id, this.clock, () => {
      // Sends left waiting for an account's share may fit now, even with other slots free.
      if (this.claims.heldBack) this.pump.wake();
      else this.pump.slotFreed();
    });
    const done = this.attempt(row)
      .catch((error: unknown) => {
        if (!this.options.outages.absorb(error)) this.logger.error({ err: error, sendId: row.id }, 'a send attempt could not be recorded; it is made again');
      })
      .finally(() => {
        this.inFlight.delete(row.id);
        freeSlot();
      });
    this.inFlight.set(row.id, done);
  }

  private async attempt(row: sends.ClaimedSend): Promise<void> {
    const result = await this.perform(row);
    if (!result.ok && this.stopping.signal.aborted) {
      // Cut off by the shutdown: not the destination's fault, so the attempt does not count.
      await this.release([row.id]);
      return;
    }
    const next = afterAttempt(row, result, this.options.retryScheduleSeconds, this.clock.now());
    const recorded = await sends.recordSendAttempt(this.store.db, row.id, this.owner, next);
    // Another node took the lease over (this one was paused past it), or the workflow was deleted meanwhile.
    if (!recorded) this.logger.warn({ sendId: row.id }, 'the outcome of a send could not be recorded: it is no longer held by this node');
    if (!result.ok) {
      // The error is the destination's answer; the payload is the account's data and is not logged.
      this.logger.info({ sendId: row.id, kind: row.kind, attempt: next.attempt, state: next.state, error: result.error }, 'a workflow send failed');
    }
    if (recorded && next.nextAttemptMs !== null) this.pump.dueAt(next.nextAttemptMs);
  }

  private perform(row: sends.ClaimedSend): Promise<SendResult> {
    const performer = this.performers[row.kind];
    // Queued while the setting was there, and the server restarted without it.
    if (!performer) return Promise.resolve(refused(`not sent: ${this.unavailable(row.kind)}`));
    let payload = row.payload;
    // A send queued by a version that stored it in plain JSON is carried out as it is.
    if (SecretBox.isSealed(payload)) {
      try {
        payload = this.secrets.decrypt(payload, bindings.send(row.user_id, row.workflow_id));
      } catch (error) {
        if (!(error instanceof UnreadableSecretError)) throw error;
        return Promise.resolve(refused(`not sent: ${error.message}`));
      }
    }
    return performer.perform({ ...row, payload }, this.stopping.signal);
  }
}
