// A workflow's trigger: read from a request, checked when given, and set up (timer row, source subscription) in the
// transaction that stores the workflow.
import type { Transaction } from 'kysely';
import type { Clock } from '../lib/clock.js';
import { propSealer, type SecretBox } from '../lib/secrets.js';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import type { WorkflowRow } from '../store/workflows.js';
import { findSource } from '../store/sources.js';
import { replaceTimers } from '../store/timers.js';
import { deleteSubscription, insertSubscription, lockOwnedEndpoint } from '../store/subscriptions.js';
import { isId, newId, nowSeconds } from '../model/ids.js';
import { invalid, notFound, ServiceError } from '../model/errors.js';
import { validateProps } from '../model/props.js';
import { firstDue, type TimerSchedule } from '../model/schedules.js';
import { storedTrigger, type WorkflowTrigger } from '../model/workflows.js';
import type { AccountLimiter } from './account-limits.js';
import { quote } from '../runtime/worker/quote.js';

/** A trigger as a request gives it: the defaults are filled in (see normalizeTrigger). */
export type TriggerRequest =
  | { type: 'http'; custom_response?: boolean | undefined }
  | { type: 'timer'; interval_seconds: number }
  | { type: 'timer'; cron: string; timezone?: string | undefined }
  | { type: 'source'; source_id: string; event_name?: string | undefined };

const TIMER_PROP = 'trigger';

export function normalizeTrigger(trigger: TriggerRequest | null): WorkflowTrigger | null {
  if (trigger?.type === 'http') return { type: 'http', custom_response: trigger.custom_response ?? false };
  if (trigger?.type === 'source') return { type: 'source', source_id: trigger.source_id, event_name: trigger.event_name ?? '' };
  if (trigger?.type === 'timer' && 'cron' in trigger)
    return { type: 'timer', cron: trigger.cron, ...(trigger.timezone !== undefined && { timezone: trigger.timezone }) };
  return trigger;
}

function timerSchedule(trigger: WorkflowTrigger | null): TimerSchedule | undefined {
  if (trigger?.type !== 'timer') return undefined;
  return 'cron' in trigger ? { cron: trigger.cron, ...(trigger.timezone && { timezone: trigger.timezone }) } : { intervalSeconds: trigger.interval_seconds };
}

/**
 * A timer's schedule as a timer prop's is checked; a source trigger's source must be one of the account's. A timer
 * that is the `stored` trigger's schedule sent again (a workflow file deployed again) is kept as a source's is: not
 * held to a --min-timer-interval raised since.
 */
export async function checkTrigger(
  store: Store,
  secrets: SecretBox,
  minTimerInterval: number,
  accountId: string,
  trigger: WorkflowTrigger | null,
  stored: WorkflowTrigger | null = null,
): Promise<void> {
  if (trigger?.type === 'timer') {
    const schedule = timerSchedule(trigger)!;
    const kept = timerSchedule(stored);
    try {
      validateProps(
        [{ name: TIMER_PROP, type: '$.interface.timer' }],
        { [TIMER_PROP]: schedule },
        kept ? { [TIMER_PROP]: kept } : {},
        propSealer(secrets, accountId),
        {
          minTimerIntervalSeconds: minTimerInterval,
        },
      );
    } catch (error) {
      // The check is the timer prop's, which says `intervalSeconds`; a workflow's trigger calls it `interval_seconds`.
      if (error instanceof ServiceError)
        throw invalid(
          `invalid timer trigger: ${error.message.replace(/^invalid configured_props: trigger /, '').replace(/\bintervalSeconds\b/g, 'interval_seconds')}`,
        );
      throw error;
    }
  }
  if (trigger?.type === 'source') {
    // A workflow's id here was answered "source p_… not found", as if it had been deleted: it is no source, and its
    // events reach this workflow through a subscription.
    if (trigger.source_id.startsWith('p_')) {
      throw invalid(
        `trigger.source_id names a source (dc_…), not a workflow; to run on workflow ${quote(trigger.source_id)}'s events, make no trigger and subscribe: POST /v1/subscriptions?emitter_id=${trigger.source_id}&listener_id=<this workflow>`,
      );
    }
    const source = isId(trigger.source_id, 'dc') ? await findSource(store.db, accountId, trigger.source_id) : undefined;
    if (!source) throw notFound(`source ${quote(trigger.source_id)}`);
  }
}

/** Timer rows and the source subscription the trigger needs, replacing those of the previous trigger. */
export async function applyTrigger(
  trx: Transaction<Database>,
  settings: { clock: Clock; limiter: AccountLimiter },
  row: WorkflowRow,
  previous: WorkflowTrigger | null,
): Promise<void> {
  const trigger = storedTrigger(row);
  const schedule = timerSchedule(trigger);
  const timers =
    schedule && row.active === 1
      ? [
          {
            source_id: row.id,
            prop_name: TIMER_PROP,
            user_id: row.user_id,
            schedule: JSON.stringify(schedule),
            next_due_ms: firstDue(schedule, settings.clock.now()),
          },
        ]
      : [];
  await replaceTimers(trx, row.id, timers);
  // A source deleted since the trigger was set took its subscription along: an update must not bring it back. Its row
  // is locked, as subscribing to it locks it: a delete running at the same time finishes first or removes this one.
  // Locked before the old subscription is deleted, as a source's delete takes its row before its subscriptions'.
  const sourceLive = trigger?.type === 'source' && (await lockOwnedEndpoint(trx, row.user_id, trigger.source_id, 'sources'));
  if (previous?.type === 'source') {
    await deleteSubscription(trx, { userId: row.user_id, emitterId: previous.source_id, listenerId: row.id, eventName: previous.event_name });
  }
  if (trigger?.type === 'source' && sourceLive) {
    // The trigger's subscription is one of the account's subscriptions, held to the same limit.
    await settings.limiter.assertRoom(trx, row.user_id, 'subscriptions');
    await insertSubscription(trx, {
      id: newId('sub'),
      user_id: row.user_id,
      emitter_id: trigger.source_id,
      listener_id: row.id,
      event_name: trigger.event_name,
      created_at: nowSeconds(),
    });
  }
}
