// Sends webhook deliveries: Standard Webhooks signatures, retries on a schedule, Retry-After, 410, leases.
import { createHmac, createSecretKey, randomUUID, type KeyObject } from 'node:crypto';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { Store } from '../../store/database.js';
import type { TransactionGroup } from '../../store/group-commit.js';
import { newId, nowSeconds } from '../../model/ids.js';
import * as deliveries from '../../store/deliveries.js';
import { deactivateWebhook } from '../../store/webhooks.js';
import { OutboundBlockedError, assertPublicLiteral, guardedDispatcher } from '../outbound.js';
import type { SecretBox } from '../../lib/secrets.js';
import type { DeliveryQueue } from './hand-over.js';

export interface WebhookSenderOptions {
  allowPrivateNetwork: boolean;
  /** Seconds before each retry; the first attempt plus one per entry. */
  retryScheduleSeconds: readonly number[];
  /** Longest an attempt may take, connection to last byte. */
  timeoutMs: number;
  /** How long a claim is held before another node may take the attempt back. */
  leaseMs: number;
  /** Fallback poll, for deliveries queued by other nodes. */
  pollMs: number;
  /** Attempts in flight at once. */
  concurrency: number;
  /** Reclaim every lease at start (embedded mode: this process is the only one). */
  reclaimAtStart: boolean;
}

/** A Retry-After further away than this is not believed. */
const MAX_RETRY_AFTER_MS = 24 * 3600 * 1000;
/** Finished attempts kept per webhook in the delivery log; pruned every PRUNE_EVERY attempts. */
export const DELIVERY_LOG_SIZE = 1000;
const PRUNE_EVERY = 100;
/** A delivery handed over in memory is sent from there only with at least this much of its lease left after the timeout. */
const LEASE_MARGIN_MS = 5_000;
/** Longest an attempt's record waits to share another commit. */
const RECORD_DELAY_MS = 50;
/** Signing keys and parsed URLs kept, each keyed by the text they come from (a rotated secret is a new entry). */
const REMEMBERED_PER_KIND = 1000;
/** The part of a response body read (and thrown away) so that the connection can be reused. */
const MAX_RESPONSE_BYTES = 64 * 1024;

/** `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed by the base64 part of the `whsec_` secret. */
export function signPayload(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  return signWith(signingKey(secret), messageId, timestampSeconds, body);
}

/** The HMAC key of a `whsec_` secret: the bytes its base64 part encodes. */
function signingKey(secret: string): KeyObject {
  return createSecretKey(Buffer.from(secret.replace(/^whsec_/, ''), 'base64'));
}

function signWith(key: KeyObject, messageId: string, timestampSeconds: number, body: string): string {
  return `v1,${createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/** Retry-After as seconds or an HTTP date, in milliseconds from now; undefined when absent or unreadable. */
export function retryAfterMs(value: string | string[] | undefined, nowMs: number): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined || raw.trim() === '') return undefined;
  const ms = /^\s*\d+\s*$/.test(raw) ? Number(raw) * 1000 : Date.parse(raw) - nowMs;
  if (Number.isNaN(ms)) return undefined;
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}

/** `make(key)`, made once while the map holds it; a full map starts over rather than tracking use. */
function remembered<T>(map: Map<string, T>, key: string, make: () => T): T {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    if (map.size >= REMEMBERED_PER_KIND) map.clear();
    map.set(key, value);
  }
  return value;
}

interface SendResult {
  statusCode: number | null;
  error: string | null;
  retryAfterMs: number | undefined;
  /** stop() cut the attempt off: it does not count, and is sent again after the restart. */
  stopped?: boolean;
}

/** An attempt in flight. stop() ends it through `cancel`, which send() sets (cheaper than an AbortController per attempt). */
interface InFlight {
  cancel: ((reason: Error) => void) | undefined;
  done: Promise<void>;
}

/** A webhook URL as an attempt needs it, parsed and checked once per URL rather than per attempt. */
interface Target {
  origin: string;
  path: string;
}

export class WebhookSender implements DeliveryQueue {
  private readonly owner = `node-${randomUUID()}`;
  private readonly inFlight = new Map<string, InFlight>();
  /** Deliveries leased to this sender when they were inserted, handed over after their commit, waiting for a slot. */
  private readonly handed: deliveries.ClaimedDelivery[] = [];
  /** Slots taken by handed deliveries whose leases are being renewed before they are sent. */
  private renewing = 0;
  private readonly signingKeys = new Map<string, KeyObject>();
  private readonly targets = new Map<string, Target>();
  private readonly chores = new Set<Promise<void>>();
  private readonly agent: Dispatcher;
  private pumping = false;
  private pumpAgain = false;
  private pumped: Promise<void> = Promise.resolve();
  private readonly sincePrune = new Map<string, number>();
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  /** The last claim filled every free slot, so more may be due as soon as an attempt finishes. */
  private saturated = false;

  constructor(
    private readonly store: Store,
    private readonly secrets: SecretBox,
    private readonly options: WebhookSenderOptions,
    private readonly transactions: TransactionGroup,
    private readonly logger: Logger,
  ) {
    this.agent = guardedDispatcher(options.allowPrivateNetwork, options.timeoutMs);
  }

  async start(): Promise<void> {
    if (this.options.reclaimAtStart) await deliveries.releaseAllDeliveryLeases(this.store.db);
    this.wake();
  }

  /** Sends what is due now; called after a commit queued deliveries, and by the fallback timer. */
  wake(): void {
    if (this.stopped) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    this.pumped = this.pump().finally(() => {
      this.pumping = false;
      if (this.pumpAgain) {
        this.pumpAgain = false;
        this.wake();
      }
    });
  }

  /**
   * New deliveries are leased to this sender up to two rounds of its slots; the rest wait in the table. Commits
   * routed in one group all see the same count, so memory may briefly hold a few rounds more; a lease running
   * out is renewed, or the attempt is left to the table.
   */
  leaseForNew(nowMs: number, count: number): { owner: string; untilMs: number; count: number } | undefined {
    const room = this.options.concurrency * 2 - (this.inFlight.size + this.renewing + this.handed.length);
    if (this.stopped || room <= 0 || count <= 0) return undefined;
    return { owner: this.owner, untilMs: nowMs + this.options.leaseMs, count: Math.min(count, room) };
  }

  handOver(rows: deliveries.ClaimedDelivery[]): void {
    this.handed.push(...rows);
    if (this.stopped) this.track(this.releaseHanded());
    else this.launchHanded();
  }

  /** Gives back deliveries handed over but not started, so that the next start (or another node) sends them at once. */
  private async releaseHanded(): Promise<void> {
    const waiting = this.handed.splice(0).map((row) => row.id);
    await deliveries.releaseDeliveries(this.store.db, waiting, this.owner).catch((error: unknown) => {
      this.logger.warn({ err: error }, 'could not release webhook deliveries; they are sent once their leases expire');
    });
  }

  /** Sends handed-over deliveries while slots are free; one whose lease is running out is renewed first. */
  private launchHanded(): void {
    const nowMs = Date.now();
    const stale: deliveries.ClaimedDelivery[] = [];
    while (!this.stopped && this.handed.length && this.freeSlots() > stale.length) {
      const row = this.handed.shift()!;
      if (row.lease_until_ms! - nowMs >= this.options.timeoutMs + LEASE_MARGIN_MS) this.launch(row);
      else stale.push(row);
    }
    if (stale.length) this.track(this.renewAndLaunch(stale));
  }

  /**
   * Renews leases that have more than LEASE_MARGIN_MS left: no claim can have taken those (a claim needs an
   * expired lease), so sending them cannot send twice. The others are left to the table, to be claimed there.
   */
  private async renewAndLaunch(rows: deliveries.ClaimedDelivery[]): Promise<void> {
    this.renewing += rows.length;
    const nowMs = Date.now();
    const untilMs = nowMs + this.options.leaseMs;
    let held = new Set<string>();
    try {
      const ids = rows.map((row) => row.id);
      held = new Set(await deliveries.renewDeliveryLeases(this.store.db, ids, this.owner, untilMs, nowMs + LEASE_MARGIN_MS));
    } catch (error) {
      // The leases run out and the attempts are claimed from the table again.
      this.logger.error({ err: error }, 'webhook sender could not renew its leases');
    } finally {
      this.renewing -= rows.length;
    }
    const renewed = rows.filter((row) => held.has(row.id)).map((row) => ({ ...row, lease_until_ms: untilMs }));
    if (this.stopped) {
      this.handed.push(...renewed);
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
    return this.options.concurrency - this.inFlight.size - this.renewing;
  }

  /** Stops claiming, aborts attempts in flight (they stay pending, to be sent again) and closes connections. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.pumped;
    await Promise.all([...this.chores]);
    await this.releaseHanded();
    for (const flight of this.inFlight.values()) flight.cancel?.(new Error('the webhook sender is stopping'));
    await Promise.all([...this.inFlight.values()].map((f) => f.done));
    await this.agent.close().catch(() => undefined);
  }

  private async pump(): Promise<void> {
    let sleepMs = this.options.pollMs;
    try {
      while (!this.stopped) {
        const free = this.freeSlots() - this.handed.length;
        this.saturated = free <= 0;
        if (free <= 0) break;
        const claimed = await deliveries.claimDue(this.store.db, this.owner, Date.now(), this.options.leaseMs, free);
        this.saturated = claimed.length === free;
        if (this.stopped) {
          await deliveries.releaseDeliveries(this.store.db, claimed.map((row) => row.id), this.owner);
          return;
        }
        for (const row of claimed) this.launch(row);
        if (claimed.length < free) break;
      }
      if (this.stopped) return;
      // Every slot busy: a finishing attempt wakes the pump, and due work would only wake it again and again.
      if (!this.saturated) {
        const due = await deliveries.nextDueMs(this.store.db);
        if (due !== undefined) sleepMs = Math.min(sleepMs, Math.max(0, due - Date.now()));
      }
    } catch (error) {
      if (!this.stopped) this.logger.error({ err: error }, 'webhook sender could not read its queue');
    }
    this.arm(sleepMs);
  }

  private arm(delayMs: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.wake(), delayMs);
    this.timer.unref();
  }

  private launch(row: deliveries.ClaimedDelivery): void {
    // One attempt at a time per delivery, whichever way it reached this sender.
    if (this.inFlight.has(row.id)) return;
    const flight: InFlight = { cancel: undefined, done: Promise.resolve() };
    this.inFlight.set(row.id, flight);
    flight.done = this.attempt(row, flight)
      .catch((error) => this.logger.error({ err: error, deliveryId: row.id }, 'webhook attempt could not be recorded'))
      .finally(() => {
        this.inFlight.delete(row.id);
        this.launchHanded();
        // Unleased deliveries wake the sender when they commit; a freed slot matters only if work was left waiting.
        if (this.saturated) this.wake();
      });
  }

  private async attempt(row: deliveries.ClaimedDelivery, flight: InFlight): Promise<void> {
    const attemptedMs = Date.now();
    const started = performance.now();
    const result: SendResult =
      row.active === 1 ? await this.send(row, flight) : { statusCode: null, error: 'the webhook is inactive', retryAfterMs: undefined };
    const durationMs = performance.now() - started;
    if (result.stopped) {
      // Shutting down: not the receiver's fault, so the attempt does not count; it is sent again after the restart.
      await deliveries.releaseDeliveries(this.store.db, [row.id], this.owner);
      return;
    }
    const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
    const gone = result.statusCode === 410;
    const retryDelayMs = this.retryDelayMs(row, result, ok || gone || row.active !== 1);
    const nowMs = Date.now();
    const nextAttemptMs = retryDelayMs === undefined ? null : nowMs + retryDelayMs;
    // The receiver has its answer; the record may wait a moment for a commit that happens anyway. Lost in a crash,
    // it costs one more attempt with the same webhook-id, which receivers must accept.
    await this.transactions.runLazily(async (trx) => {
      const recorded = await deliveries.recordAttempt(trx, row.id, this.owner, {
        state: ok ? 'succeeded' : 'failed',
        statusCode: result.statusCode,
        error: result.error,
        durationMs,
        attemptedMs,
        nextAttemptMs,
      });
      if (!recorded) return;
      if (gone) {
        // 410 Gone: the receiver asks for no more deliveries; the webhook is deactivated and its queue emptied.
        await deactivateWebhook(trx, row.webhook_id, nowSeconds());
        await deliveries.failPending(trx, row.webhook_id, 'not sent: the webhook was deactivated after its URL answered 410 Gone', nowMs);
      }
      if (nextAttemptMs !== null) {
        await deliveries.insertDeliveries(trx, this.store.dialect, [
          deliveries.pendingDelivery({
            id: newId('dl'),
            message_id: row.message_id,
            webhook_id: row.webhook_id,
            user_id: row.user_id,
            emitter_id: row.emitter_id,
            event_id: row.event_id,
            payload: row.payload,
            attempt: row.attempt + 1,
            next_attempt_ms: nextAttemptMs,
            created_ms: nowMs,
          }),
        ]);
      }
    }, RECORD_DELAY_MS);
    if (!ok) this.logger.info({ webhookId: row.webhook_id, attempt: row.attempt, status: result.statusCode, error: result.error }, 'webhook delivery failed');
    await this.pruneLog(row.webhook_id);
  }

  /** Keeps each webhook's log bounded; counted in memory, so that only every PRUNE_EVERY-th attempt pays for it. */
  private async pruneLog(webhookId: string): Promise<void> {
    const count = (this.sincePrune.get(webhookId) ?? 0) + 1;
    if (count < PRUNE_EVERY) {
      this.sincePrune.set(webhookId, count);
      return;
    }
    this.sincePrune.delete(webhookId);
    await deliveries.pruneLog(this.store.db, webhookId, DELIVERY_LOG_SIZE);
  }

  /** Retry-After when the receiver sent one, else the schedule's delay for this attempt; undefined when it was the last. */
  private retryDelayMs(row: deliveries.ClaimedDelivery, result: SendResult, final: boolean): number | undefined {
    if (final || row.attempt > this.options.retryScheduleSeconds.length) return undefined;
    return result.retryAfterMs ?? this.options.retryScheduleSeconds[row.attempt - 1]! * 1000;
  }

  /**
   * One POST through the dispatcher's handler interface: `request()` wraps each response in a stream, a promise
   * and signal listeners, which cost about a third of an attempt's CPU. Never rejects.
   */
  private send(row: deliveries.ClaimedDelivery, flight: InFlight): Promise<SendResult> {
    return new Promise((resolve) => {
      let controller: Dispatcher.DispatchController | undefined;
      let cancelled: Error | undefined;
      let settled = false;
      let received = 0;
      let response: { statusCode: number; retryAfter: string | string[] | undefined } | undefined;
      const settle = (result: SendResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timeout);
        flight.cancel = undefined;
        resolve(result);
      };
      const fail = (error: unknown) => settle({ statusCode: null, error: this.describe(error), retryAfterMs: undefined });
      const answered = () => settle({ statusCode: response!.statusCode, error: null, retryAfterMs: retryAfterMs(response!.retryAfter, Date.now()) });
      // Ends the attempt now; the request is cut off at once, or as soon as it gets a connection.
      const cancel = (reason: Error) => {
        cancelled = reason;
        controller?.abort(reason);
        fail(reason);
      };
      // One timer for the whole attempt, connection to last byte.
      const timeout = setTimeout(() => cancel(new DOMException('the attempt timed out', 'TimeoutError')), this.options.timeoutMs);
      flight.cancel = (reason) => {
        settle({ statusCode: null, error: reason.message, retryAfterMs: undefined, stopped: true });
        cancel(reason);
      };
      if (this.stopped) return flight.cancel(new Error('the webhook sender is stopping'));
      try {
        const target = this.targetOf(row.url);
        const timestamp = nowSeconds();
        const headers = {
          'content-type': 'application/json',
          'user-agent': 'Tributary-Webhooks/1',
          'webhook-id': row.message_id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signWith(this.signingKeyOf(row.secret), row.message_id, timestamp, row.payload),
        };
        this.agent.dispatch(
          { origin: target.origin, path: target.path, method: 'POST', headers, body: row.payload },
          {
            onRequestStart: (started) => {
              controller = started;
              if (cancelled) started.abort(cancelled);
            },
            onResponseStart: (_controller, statusCode, responseHeaders) => {
              response = { statusCode, retryAfter: responseHeaders['retry-after'] };
            },
            // The body is read and thrown away so that the connection can be reused; a larger one closes it.
            onResponseData: (started, chunk) => {
              received += chunk.length;
              if (received <= MAX_RESPONSE_BYTES) return;
              answered();
              started.abort(new Error('response body too large to read'));
            },
            onResponseEnd: () => answered(),
            onResponseError: (_controller, error) => fail(error),
          },
        );
      } catch (error) {
        fail(error);
      }
    });
  }

  /** Where an attempt goes. Throws for a URL that is invalid or a private address literal (see assertPublicLiteral). */
  private targetOf(url: string): Target {
    return remembered(this.targets, url, () => {
      const parsed = new URL(url);
      assertPublicLiteral(parsed, this.options.allowPrivateNetwork);
      return { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
    });
  }

  /** Decrypting costs more than signing; a webhook's secret is decrypted once, not per attempt, and kept as a key only. */
  private signingKeyOf(sealed: string): KeyObject {
    return remembered(this.signingKeys, sealed, () => signingKey(this.secrets.decrypt(sealed)));
  }

  private describe(error: unknown): string {
    const err = error as Error & { code?: string; cause?: unknown };
    const cause = err.cause as (Error & { code?: string }) | undefined;
    if (err instanceof OutboundBlockedError) return err.message;
    if (cause instanceof OutboundBlockedError) return cause.message;
    if (err.name === 'TimeoutError' || err.name === 'HeadersTimeoutError' || err.name === 'BodyTimeoutError' || err.code === 'UND_ERR_CONNECT_TIMEOUT') {
      return `no response within ${this.options.timeoutMs / 1000} s`;
    }
    if (err.name === 'AbortError' && !this.stopped) return `no response within ${this.options.timeoutMs / 1000} s`;
    const detail = cause?.message ?? err.message;
    return (err.code ?? cause?.code) ? `${err.code ?? cause?.code}: ${detail}` : detail;
  }
}
