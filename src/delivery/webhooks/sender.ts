// The webhook queue of one node: claims due deliveries with a lease, sends them through WebhookPoster, records outcomes.
import type { Metrics } from '../../metrics/metrics.js';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../../lib/clock.js';
import type { PollCadence } from '../../lib/poll-cadence.js';
import { AccountSlots } from '../account-slots.js';
import { type LeasedQueue, LeasedQueuePump } from '../leased-queue.js';
import { FairClaims } from '../fair-claims.js';
import { nextLeaseEndMs } from '../../store/lease-ends.js';
import type { SecretBox } from '../../lib/secrets.js';
import type { Store } from '../../store/database.js';
import type { TransactionGroup } from '../../store/group-commit.js';
import * as deliveries from '../../store/deliveries.js';
import type { DatabaseOutageLog } from '../../store/outage-log.js';
import { type AttemptResult, type InFlight, WebhookPoster } from './attempt.js';
import type { DeliveryQueue } from './hand-over.js';
import { DeliveryLogPruner, recordOutcome, succeeded } from './outcome.js';
import { SigningKeys } from './signing.js';

export interface WebhookSenderOptions {
  allowPrivateNetwork: boolean;
  /** Seconds before each retry; the first attempt plus one per entry. */
  retryScheduleSeconds: readonly number[];
  /** Longest an attempt may take, connection to last byte. */
  timeoutMs: number;
  /** How long a claim is held before another node may take the attempt back. */
  leaseMs: number;
  /** How long to wait before looking unasked: for rows other nodes queued unannounced or left leased. */
  cadence: PollCadence;
  /** Where failures that are a database outage are said, once for the whole outage. */
  outages: DatabaseOutageLog;
  /** Attempts in flight at once. */
  concurrency: number;
  /** Reclaim every lease at start (embedded mode: this process is the only one). */
  reclaimAtStart: boolean;
  metrics?: Metrics;
  /**
   * Tells the other nodes: `deliveries` given back unsent (the sender is stopping), which they may send at once;
   * `webhooks` deleted or retired by a 410, whose deliveries they hold in memory are not to be sent.
   */
  announce?: (kind: 'deliveries' | 'webhooks', ids?: string[]) => void;
}

/** A delivery handed over in memory is sent from there only with at least this much of its lease left after the timeout. */
const LEASE_MARGIN_MS = 5_000;
/** Longest an attempt's record waits to share another commit. */
const RECORD_DELAY_MS = 50;

export class WebhookSender implements DeliveryQueue {
  private readonly owner = `node-${randomUUID()}`;
  /** Attempts from launch until their outcome is recorded: one at a time per delivery. */
  private readonly inFlight = new Map<string, InFlight>();
  /** Deliveries leased to this sender when they were inserted, handed over after their commit, waiting for a slot; by account. */
  private readonly handed = new Map<string, deliveries.ClaimedDelivery[]>();
  private handedCount = 0;
  /**
   * The slots taken, by account: what `concurrency` limits. An attempt holds one while it waits for its receiver (not
   * while its answer is recorded: the record may wait RECORD_DELAY_MS for a shared commit, which at 500 events/s on
   * PostgreSQL kept all 32 slots taken and webhook p99 in seconds), and a handed delivery while its lease is renewed.
   * Shared so that one account's hanging receivers leave others room; an attempt waiting 2 s gives its slot back
   * while still counting against its account's cap, so that many such accounts cannot take all the slots either.
   */
  private readonly slots: AccountSlots;
  private readonly claims: FairClaims;
  private readonly signingKeys: SigningKeys;
  private readonly chores = new Set<Promise<void>>();
  private readonly poster: WebhookPoster;
  private readonly pump: LeasedQueuePump<deliveries.ClaimedDelivery>;
  private readonly pruner: DeliveryLogPruner;
  private stopped = false;

  constructor(
    private readonly store: Store,
    secrets: SecretBox,
    private readonly options: WebhookSenderOptions,
    private readonly transactions: TransactionGroup,
    private readonly logger: Logger,
    private readonly clock: Clock,
  ) {
    this.poster = new WebhookPoster(options, clock);
    this.signingKeys = new SigningKeys(secrets);
    this.pruner = new DeliveryLogPruner((webhookId, keep) => deliveries.pruneLog(store.db, webhookId, keep));
    this.slots = new AccountSlots(options.concurrency);
    this.claims = new FairClaims(store, 'webhook_deliveries', this.slots, (userId) => this.handed.get(userId)?.length ?? 0);
    const claims = this.claims;
    const queue: LeasedQueue<deliveries.ClaimedDelivery> = {
      // Handed-over deliveries that may start take their slots first.
      freeSlots: () => this.freeSlots() - this.launchableHanded(),
      claim: async (count) => {
        const nowMs = clock.now();
        return deliveries.claimDue(store.db, this.owner, nowMs, options.leaseMs, await claims.dueIds(count, nowMs));
      },
      release: (rows) => this.release(rows.map((row) => row.id)),
      // One node (SQLite) holds every lease itself and gives them back at start.
      ...(options.reclaimAtStart ? {} : { nextLeaseEndMs: (nowMs: number) => nextLeaseEndMs(store.db, 'webhook_deliveries', nowMs) }),
      nextDueMs: () => claims.nextDueMs(clock.now()),
      launch: (row) => this.launch(row),
    };
    this.pump = new LeasedQueuePump(queue, {
      table: 'webhook_deliveries',
      what: 'webhook sender',
      clock,
      cadence: options.cadence,
      outages: options.outages,
      watchMs: options.leaseMs / 3,
      logger,
    });
  }

  async start(): Promise<void> {
    if (this.options.reclaimAtStart) await deliveries.releaseAllDeliveryLeases(this.store.db);
    this.pump.start();
  }

  /** Sends what is due now; called after a commit queued deliveries, and by the fallback timer. */
  wake(): void {
    if (!this.stopped) this.pump.wake();
  }

  /**
   * New deliveries are leased to this sender up to two rounds of its slots, and no more of one account's than it may
   * start (its cap): the rest wait in the table, where claims share them fairly. Had an account's deliveries waited
   * in memory, they would take slots that freed before another account's older ones in the table. Commits routed in
   * one group all see the same count, so memory may briefly hold more; a lease running out is renewed, or the
   * attempt is left to the table.
   */
  leaseForNew(nowMs: number, userId: string, count: number): { owner: string; untilMs: number; count: number } | undefined {
    const room = this.options.concurrency * 2 - (this.slots.taken + this.handedCount);
    const accountRoom = this.slots.cap - (this.slots.heldBy(userId) + (this.handed.get(userId)?.length ?? 0));
    if (this.stopped || room <= 0 || accountRoom <= 0 || count <= 0) return undefined;
    return { owner: this.owner, untilMs: nowMs + this.options.leaseMs, count: Math.min(count, room, accountRoom) };
  }

  handOver(rows: deliveries.ClaimedDelivery[]): void {
    this.holdHanded(rows);
    if (this.stopped) this.track(this.releaseHanded());
    else this.launchHanded();
  }

  private holdHanded(rows: deliveries.ClaimedDelivery[]): void {
    for (const row of rows) {
      const queued = this.handed.get(row.user_id);
      if (queued) queued.push(row);
      else this.handed.set(row.user_id, [row]);
    }
    this.handedCount += rows.length;
  }

  /** Handed-over deliveries that may start now: those of accounts below their share of the slots. */
  private launchableHanded(): number {
    let launchable = 0;
    for (const [userId, rows] of this.handed) launchable += Math.min(rows.length, this.slots.roomOf(userId));
    return launchable;
  }

  /** The next handed-over delivery to start: the oldest of the account holding fewest slots, among those with room. */
  private takeHanded(): deliveries.ClaimedDelivery | undefined {
    let fewest: string | undefined;
    for (const userId of this.handed.keys()) {
      if (this.slots.roomOf(userId) > 0 && (fewest === undefined || this.slots.heldBy(userId) < this.slots.heldBy(fewest))) fewest = userId;
    }
    if (fewest === undefined) return undefined;
    const rows = this.handed.get(fewest)!;
    const row = rows.shift()!;
    if (!rows.length) this.handed.delete(fewest);
    this.handedCount--;
    return row;
  }

  /** Gives back deliveries handed over but not started, so that the next start (or another node) sends them at once. */
  private async releaseHanded(): Promise<void> {
    const waiting = [...this.handed.values()].flat().map((row) => row.id);
    this.handed.clear();
    this.handedCount = 0;
    await this.release(waiting).catch((error: unknown) => {
      if (!this.options.outages.absorb(error)) this.logger.warn({ err: error }, 'could not release webhook deliveries; they are sent once their leases expire');
    });
  }

  /** Gives deliveries held by this sender back to the table, unsent, and says so to whoever may send them. */
  private async release(ids: string[]): Promise<void> {
    if (!ids.length) return;
    await deliveries.releaseDeliveries(this.store.db, ids, this.owner);
    this.options.announce?.('deliveries');
  }

  /**
   * A webhook of this node was deleted, or answered 410 Gone: its deliveries waiting here for a slot are dropped (its
   * rows are gone, or failed), here and on the other nodes, rather than sent to a receiver that wants no more.
   */
  readonly retired = (webhookId: string): void => {
    this.retire([webhookId]);
    this.options.announce?.('webhooks', [webhookId]);
  };

  /** Drops the waiting deliveries of these webhooks; without ids (signals were lost) all go back to the table. */
  retire(webhookIds: readonly string[] | undefined): void {
    if (webhookIds === undefined) {
      this.track(this.releaseHanded().then(() => this.pump.wake()));
      return;
    }
    const retired = new Set(webhookIds);
    for (const [userId, rows] of this.handed) {
      const kept = rows.filter((row) => !retired.has(row.webhook_id));
      this.handedCount -= rows.length - kept.length;
      if (kept.length) this.handed.set(userId, kept);
      else this.handed.delete(userId);
    }
  }

  /** Sends handed-over deliveries while slots are free; one whose lease is running out takes its slot to be renewed first. */
  private launchHanded(): void {
    const nowMs = this.clock.now();
    const stale: deliveries.ClaimedDelivery[] = [];
    while (!this.stopped && this.handedCount && this.freeSlots() > 0) {
      const row = this.takeHanded();
      if (!row) break;
      if (row.lease_until_ms! - nowMs >= this.options.timeoutMs + LEASE_MARGIN_MS) this.launch(row);
      else {
        this.slots.take(row.user_id);
        stale.push(row);
      }
    }
    if (stale.length) this.track(this.renewAndLaunch(stale));
  }

  /**
   * Renews leases that have more than LEASE_MARGIN_MS left: no claim can have taken those (a claim needs an
   * expired lease), so sending them cannot send twice. The others are left to the table, to be claimed there.
   */
  private async renewAndLaunch(rows: deliveries.ClaimedDelivery[]): Promise<void> {
    const nowMs = this.clock.now();
    const untilMs = nowMs + this.options.leaseMs;
    let held = new Set<string>();
    try {
      const ids = rows.map((row) => row.id);
      held = new Set(await deliveries.renewDeliveryLeases(this.store.db, ids, this.owner, untilMs, nowMs + LEASE_MARGIN_MS));
    } catch (error) {
      // The leases run out and the attempts are claimed from the table again.
      if (!this.options.outages.absorb(error)) this.logger.error({ err: error }, 'webhook sender could not renew its leases');
    } finally {
      for (const row of rows) this.slots.give(row.user_id);
    }
    const renewed = rows.filter((row) => held.has(row.id)).map((row) => ({ ...row, lease_until_ms: untilMs }));
    // Those whose leases were lost are due in the table, where nothing announces them.
    if (renewed.length < rows.length) this.pump.wake();
    if (this.stopped) {
      this.holdHanded(renewed);
      return this.releaseHanded();
    }
    for (const row of renewed) this.launch(row);
    this.launchHanded();
  }

  /** Background work that stop() must wait for before the database closes. */
  private track(chore: Promise<void>): void {
    this.chores.add(chore);
    void chore.finally(() => this.chores.delete(chore));
  }

  private freeSlots(): number {
    return this.options.concurrency - this.slots.taken;
  }

  /** Stops claiming, aborts attempts in flight (they stay pending, to be sent again) and closes connections. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.pump.stop();
    await Promise.all([...this.chores]);
    await this.releaseHanded();
    for (const flight of this.inFlight.values()) flight.cancel?.(new Error('the webhook sender is stopping'));
    await Promise.all([...this.inFlight.values()].map((f) => f.done));
    await this.poster.close();
  }

  private launch(row: deliveries.ClaimedDelivery): void {
    // One attempt at a time per delivery, whichever way it reached this sender.
    if (this.inFlight.has(row.id)) return;
    const flight: InFlight = { cancel: undefined, done: Promise.resolve() };
    this.inFlight.set(row.id, flight);
    const freeSlot = this.slots.takeForAttempt(row.user_id, this.clock, () => this.slotOpened());
    flight.done = this.attempt(row, flight, freeSlot)
      .catch((error) => {
        if (!this.options.outages.absorb(error)) this.logger.error({ err: error, deliveryId: row.id }, 'webhook attempt could not be recorded');
      })
      .finally(() => {
        this.inFlight.delete(row.id);
        freeSlot();
      });
  }

  /** A slot was given back, or an account's share grew: handed-over deliveries start, and claims look again if work waits. */
  private slotOpened(): void {
    this.launchHanded();
    // Unleased deliveries wake the sender when they commit; a freed slot matters only if work was left waiting:
    // for every slot, or for an account's share (which this slot may have grown, even with other slots free).
    if (this.claims.heldBack) this.pump.wake();
    else this.pump.slotFreed();
  }

  /** Sends one attempt and records its outcome; `answered` is called once the receiver has answered (or failed to). */
  private async attempt(row: deliveries.ClaimedDelivery, flight: InFlight, answered: () => void): Promise<void> {
    const attemptedMs = this.clock.now();
    const started = performance.now();
    const result = await this.post(row, flight);
    const durationMs = performance.now() - started;
    // Its deliveries waiting here must not take the slot this one frees: the receiver wants no more.
    if (result.statusCode === 410) this.retire([row.webhook_id]);
    answered();
    if (result.stopped) {
      // Shutting down: not the receiver's fault, so the attempt does not count; it is sent again after the restart.
      await this.release([row.id]);
      return;
    }
    const outcome = { result, attemptedMs, durationMs, nowMs: this.clock.now() };
    // The receiver has its answer; the record may wait a moment for a commit that happens anyway. Lost in a crash,
    // it costs one more attempt with the same webhook-id, which receivers must accept.
    const recorded = await this.transactions.runLazily(
      (trx) => recordOutcome(trx, this.store.dialect, row, this.owner, outcome, this.options.retryScheduleSeconds),
      RECORD_DELAY_MS,
    );
    this.options.outages.reached('written');
    if (recorded) this.options.metrics?.deliveryAttempted(recorded.label);
    if (recorded?.nextAttemptMs != null) this.pump.dueAt(recorded.nextAttemptMs);
    if (recorded?.label === 'gone') this.retired(row.webhook_id);
    if (!succeeded(result)) {
      this.logger.info({ webhookId: row.webhook_id, attempt: row.attempt, status: result.statusCode, error: result.error }, 'webhook delivery failed');
    }
    await this.pruner.attempted(row.webhook_id);
  }

  private post(row: deliveries.ClaimedDelivery, flight: InFlight): Promise<AttemptResult> {
    if (row.active !== 1) return Promise.resolve({ statusCode: null, error: 'the webhook is inactive', retryAfterMs: undefined });
    if (this.stopped) return Promise.resolve({ statusCode: null, error: 'the webhook sender is stopping', retryAfterMs: undefined, stopped: true });
    let signingKey: ReturnType<SigningKeys['of']>;
    try {
      signingKey = this.signingKeys.of(row);
    } catch (error) {
      return Promise.resolve({ statusCode: null, error: `the webhook's secret could not be read: ${(error as Error).message}`, retryAfterMs: undefined });
    }
    return this.poster.post({ url: row.url, messageId: row.message_id, payload: row.payload, signingKey }, flight);
  }
}
