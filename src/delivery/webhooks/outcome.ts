// What an attempt's answer means for its delivery: recorded in the log, retried on the schedule, or the webhook retired on 410.
import type { DeliveryOutcomeLabel } from '../../metrics/metrics.js';
import type { Kysely, Transaction } from 'kysely';
import type { DialectName } from '../../store/database.js';
import type { Database } from '../../store/schema.js';
import { newId } from '../../model/ids.js';
import * as deliveries from '../../store/deliveries.js';
import { deactivateWebhook, webhookIsActive } from '../../store/webhooks.js';
import type { AttemptResult } from './attempt.js';

/** Finished attempts kept per webhook in the delivery log; pruned every PRUNE_EVERY attempts. */
export const DELIVERY_LOG_SIZE = 1000;
const PRUNE_EVERY = 100;

export interface AttemptOutcome {
  result: AttemptResult;
  attemptedMs: number;
  durationMs: number;
  /** When the outcome was known; retries are scheduled from here. */
  nowMs: number;
}

/** 2xx: delivered. */
export function succeeded(result: AttemptResult): boolean {
  return result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
}

/** Retry-After when the receiver sent one, else the schedule's delay for this attempt; undefined when it was the last. */
export function retryDelayMs(attempt: number, result: AttemptResult, final: boolean, scheduleSeconds: readonly number[]): number | undefined {
  if (final || attempt > scheduleSeconds.length) return undefined;
  return result.retryAfterMs ?? scheduleSeconds[attempt - 1]! * 1000;
}

/** What recordOutcome did: the outcome's label, and when the next attempt it queued falls due (null: none). */
export interface RecordedOutcome {
  label: DeliveryOutcomeLabel;
  nextAttemptMs: number | null;
}

/**
 * Records one finished attempt held under `owner`'s lease: its log entry, the next attempt when one is due, and on
 * 410 Gone the webhook deactivated with its queue emptied. Nothing happens when the lease was lost meanwhile.
 */
export async function recordOutcome(
  trx: Kysely<Database> | Transaction<Database>,
  dialect: DialectName,
  row: deliveries.ClaimedDelivery,
  owner: string,
  outcome: AttemptOutcome,
  scheduleSeconds: readonly number[],
): Promise<RecordedOutcome | undefined> {
  const { result, nowMs } = outcome;
  const ok = succeeded(result);
  const gone = result.statusCode === 410;
  let delayMs = retryDelayMs(row.attempt, result, ok || gone || row.active !== 1, scheduleSeconds);
  // The webhook was active when this attempt was claimed; another attempt's 410 may have retired it since.
  if (delayMs !== undefined && !(await webhookIsActive(trx, row.webhook_id))) delayMs = undefined;
  const nextAttemptMs = delayMs === undefined ? null : nowMs + delayMs;
  const recorded = await deliveries.recordAttempt(trx, row.id, owner, {
    state: ok ? 'succeeded' : 'failed',
    statusCode: result.statusCode,
    error: result.error,
    durationMs: outcome.durationMs,
    attemptedMs: outcome.attemptedMs,
    nextAttemptMs,
  });
  if (!recorded) return undefined;
  if (gone) {
    // 410 Gone: the receiver asks for no more deliveries.
    await deactivateWebhook(trx, row.webhook_id, Math.floor(nowMs / 1000));
    await deliveries.failPending(trx, row.webhook_id, 'not sent: the webhook was deactivated after its URL answered 410 Gone', nowMs);
  }
  if (nextAttemptMs !== null) {
    await deliveries.insertDeliveries(trx, dialect, [
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
  return { label: ok ? 'delivered' : gone ? 'gone' : nextAttemptMs !== null ? 'retrying' : 'failed', nextAttemptMs };
}

/** Keeps each webhook's log bounded; counted in memory, so that only every PRUNE_EVERY-th attempt pays for it. */
export class DeliveryLogPruner {
  private readonly sincePrune = new Map<string, number>();

  constructor(private readonly prune: (webhookId: string, keep: number) => Promise<void>) {}

  async attempted(webhookId: string): Promise<void> {
    const count = (this.sincePrune.get(webhookId) ?? 0) + 1;
    if (count < PRUNE_EVERY) {
      this.sincePrune.set(webhookId, count);
      return;
    }
    this.sincePrune.delete(webhookId);
    await this.prune(webhookId, DELIVERY_LOG_SIZE);
  }
}
