// Routes committed events by subscription: webhook deliveries and listener runs inside the commit, live fan-out after.
import type { Metrics } from '../metrics/metrics.js';
import type { Transaction } from 'kysely';
import type { Clock } from '../lib/clock.js';
import type { Database } from '../store/schema.js';
import type { DialectName } from '../store/database.js';
import { newId } from '../model/ids.js';
import { activeListenerSources, subscriptionsOf, type SubscriptionRow } from '../store/subscriptions.js';
import { activeWebhooks } from '../store/webhooks.js';
import { queuedListenerRuns } from '../store/invocations.js';
import { insertDeliveries, pendingDelivery, type ClaimedDelivery } from '../store/deliveries.js';
import { appendEvents } from './append-events.js';
import type { EventSummary } from '../model/events.js';
import { globOf, streamMatches } from '../model/subscriptions.js';
import { queueInvocations, type NewInvocation } from './invocations.js';
import { errorEvent } from './error-events.js';
import { queueRuns, type NewRun } from './workflow-runs.js';
import { activeWorkflowIds } from '../store/workflows.js';
import type { DeliveryQueue } from '../delivery/webhooks/hand-over.js';
import type { CommittedEvents, EventRouter, QuotaCheck } from './routing.js';
import type { EventBus } from '../delivery/bus.js';

/** Listener hops an event may travel; a run that deep does not trigger further listeners (a subscription loop). */
export const MAX_LISTENER_DEPTH = 8;

/**
 * Listener runs one source may have waiting. The hop limit bounds a loop's depth, not its breadth: sources that
 * emit many events each and listen to one another would queue runs by the million before the eighth hop. A run
 * emits at most 10,000 events, so one run's events always fit a listener that has none waiting.
 */
export const MAX_QUEUED_LISTENER_RUNS = 10_000;

export interface DeliveryRouterOptions {
  dialect: DialectName;
  retention: number;
  bus: EventBus;
  deliveries: DeliveryQueue;
  /** After the commit: listener runs were queued for these sources (without ids: look for work by scanning the queue). */
  runsQueued(sourceIds?: string[]): void;
  /** After the commit: runs of listening workflows were queued. */
  workflowRunsQueued(runIds: string[]): void;
  /** Queue and delivery times are read from it. */
  clock: Clock;
  /** Counts what each commit stored. */
  metrics?: Metrics;
  /** Free-plan quotas: listener runs past them are not queued (a QuotaExceededError on the emitter's `$errors`). */
  quotas?: QuotaCheck;
  /** MAX_QUEUED_LISTENER_RUNS by default; tests lower it. */
  maxQueuedListenerRuns?: number | undefined;
}

/** What routing one commit did, remembered until its afterCommit. */
interface Routed {
  /** `$errors` events this routing added (subscription loops cut), to fan out with the commit's own. */
  extra: EventSummary[];
  /** Listener sources that got runs queued. */
  queuedRuns: string[];
  /** Workflow runs queued for listening workflows. */
  queuedWorkflowRuns: string[];
  /** Deliveries inserted with a lease for the sender, to hand over after the commit. */
  leased: ClaimedDelivery[];
  /** Deliveries were inserted without a lease, for the sender to claim. */
  unleased: boolean;
}

export class DeliveryRouter implements EventRouter {
  private readonly routed = new WeakMap<CommittedEvents, Routed>();

  /** Listener runs one source may have waiting. */
  private readonly maxQueuedListenerRuns: number;

  constructor(private readonly options: DeliveryRouterOptions) {
    this.maxQueuedListenerRuns = options.maxQueuedListenerRuns ?? MAX_QUEUED_LISTENER_RUNS;
  }

  async routeInTransaction(trx: Transaction<Database>, committed: CommittedEvents): Promise<void> {
    const routed: Routed = { extra: [], queuedRuns: [], queuedWorkflowRuns: [], leased: [], unleased: false };
    this.routed.set(committed, routed);
    await this.route(trx, committed, routed);
    // In a cluster, the other nodes' live streams learn of the events when (and only if) this commits.
    const stored = routed.extra.length ? [...committed.events, ...routed.extra] : committed.events;
    await this.options.bus.announceInTransaction?.(trx, committed.emitterId, stored, committed.afterId);
  }

  private async route(trx: Transaction<Database>, committed: CommittedEvents, routed: Routed): Promise<void> {
    const glob = globOf(committed.emitterId);
    // Everything here runs on `trx`: on SQLite the store has one connection, which the transaction holds.
    const subscriptions = await subscriptionsOf(trx, committed.userId, glob ? [committed.emitterId, glob] : [committed.emitterId]);
    if (!subscriptions.length) return;
    await this.queueDeliveries(trx, committed, committed.events, subscriptions, routed);

    const sourceRuns = listenersByEvent(committed.events, subscriptions, 'dc_');
    const workflowRuns = listenersByEvent(committed.events, subscriptions, 'p_');
    if (!sourceRuns.length && !workflowRuns.length) return;
    const named = (runs: typeof sourceRuns) => [...new Set(runs.flatMap((r) => r.listeners))];
    const listeners = new Set([
      ...(sourceRuns.length ? (await activeListenerSources(trx, committed.userId, named(sourceRuns))).map((s) => s.id) : []),
      ...(workflowRuns.length ? await activeWorkflowIds(trx, committed.userId, named(workflowRuns)) : []),
    ]);
    // Never its own listener (a glob such as `dc_*` names the emitter too): each run would queue the next, without end.
    listeners.delete(committed.emitterId);
    const depth = committed.depth + 1;
    const nowMs = this.options.clock.now();
    // Past the hop limit (a loop), or past a free plan's daily quota: the runs are not queued, the emitter says why.
    const refusal =
      depth > MAX_LISTENER_DEPTH
        ? { name: 'SubscriptionLoopError', code: 'subscription_loop', reason: loopReason(committed.depth) }
        : await this.quotaRefusal(trx, committed.userId, listeners, nowMs);
    if (refusal) {
      const cut = [...sourceRuns, ...workflowRuns].filter((r) => r.listeners.some((l) => listeners.has(l)));
      if (cut.length) routed.extra = await this.reportNotDelivered(trx, committed, cut, listeners, refusal);
      if (routed.extra.length) await this.queueDeliveries(trx, committed, routed.extra, subscriptions, routed);
      return;
    }
    const wanted: NewInvocation[] = sourceRuns.flatMap(({ event, listeners: ids }) =>
      ids.filter((id) => listeners.has(id)).map((sourceId) => ({ sourceId, userId: committed.userId, trigger: 'listener' as const, event, depth })),
    );
    const { items, overflow } = await this.withinListenerBacklog(trx, wanted);
    if (overflow.length) {
      routed.extra = await this.reportOverflow(trx, committed, overflow);
      await this.queueDeliveries(trx, committed, routed.extra, subscriptions, routed);
    }
    if (items.length) {
      await queueInvocations(trx, this.options.dialect, items, nowMs);
      routed.queuedRuns = [...new Set(items.map((i) => i.sourceId))];
    }
    // A workflow's trigger event is what was emitted (for an error, `{ error, original_event, original_context }`).
    const newRuns: NewRun[] = workflowRuns.flatMap(({ event, listeners: ids }) =>
      ids
        .filter((id) => listeners.has(id))
        .map((workflowId) => ({ workflowId, userId: committed.userId, trigger: 'event' as const, event: event.event, depth })),
    );
    if (newRuns.length) routed.queuedWorkflowRuns = (await queueRuns(trx, this.options.dialect, newRuns, nowMs)).map((r) => r.id);
  }

  afterCommit(committed: CommittedEvents): void {
    const routed = this.routed.get(committed);
    this.routed.delete(committed);
    if (!routed && !committed.events.length) return;
    const events = routed?.extra.length ? [...committed.events, ...routed.extra] : committed.events;
    this.options.metrics?.eventsCommitted(events.length);
    this.options.bus.publish(committed.emitterId, events, committed.afterId);
    // Without a record (a caller that copied the commit), wake both: a wake with nothing to do is one query.
    if (!routed) this.options.runsQueued();
    else if (routed.queuedRuns.length) this.options.runsQueued(routed.queuedRuns);
    if (routed?.queuedWorkflowRuns.length) this.options.workflowRunsQueued(routed.queuedWorkflowRuns);
    if (routed?.leased.length) this.options.deliveries.handOver(routed.leased);
    if (!routed || routed.unleased) this.options.deliveries.wake();
  }

  /** One pending delivery per event and active webhook listening to its stream, recorded in `routed`. */
  private async queueDeliveries(
    trx: Transaction<Database>,
    committed: CommittedEvents,
    events: EventSummary[],
    subscriptions: SubscriptionRow[],
    routed: Routed,
  ): Promise<void> {
    const matches = listenersByEvent(events, subscriptions, 'wh_');
    if (!matches.length) return;
    const webhooks = new Map((await activeWebhooks(trx, committed.userId, [...new Set(matches.flatMap((m) => m.listeners))])).map((w) => [w.id, w]));
    const nowMs = this.options.clock.now();
    const rows: ClaimedDelivery[] = [];
    for (const { event, listeners } of matches) {
      const payload = JSON.stringify(event);
      for (const webhookId of listeners) {
        const webhook = webhooks.get(webhookId);
        if (!webhook) continue;
        const id = newId('dl');
        const delivery = pendingDelivery({
          id,
          message_id: id,
          webhook_id: webhookId,
          user_id: committed.userId,
          emitter_id: committed.emitterId,
          event_id: event.id,
          payload,
          attempt: 1,
          next_attempt_ms: nowMs,
          created_ms: nowMs,
        });
        rows.push({ ...delivery, url: webhook.url, secret: webhook.secret, active: webhook.active });
      }
    }
    if (!rows.length) return;
    // The first ones the sender has room for are leased to it, to be handed over; the rest it claims.
    const lease = this.options.deliveries.leaseForNew(nowMs, committed.userId, rows.length);
    const leased = rows.slice(0, lease?.count ?? 0);
    for (const row of leased) {
      row.lease_owner = lease!.owner;
      row.lease_until_ms = lease!.untilMs;
    }
    await insertDeliveries(trx, this.options.dialect, rows);
    routed.leased.push(...leased);
    if (rows.length > leased.length) routed.unleased = true;
  }

  /** The runs that fit their listener's backlog (MAX_QUEUED_LISTENER_RUNS), in order, and those that do not. */
  private async withinListenerBacklog(trx: Transaction<Database>, wanted: NewInvocation[]): Promise<{ items: NewInvocation[]; overflow: NewInvocation[] }> {
    if (!wanted.length) return { items: wanted, overflow: [] };
    const waiting = await queuedListenerRuns(trx, [...new Set(wanted.map((item) => item.sourceId))]);
    const items: NewInvocation[] = [];
    const overflow: NewInvocation[] = [];
    for (const item of wanted) {
      const count = waiting.get(item.sourceId) ?? 0;
      if (count >= this.maxQueuedListenerRuns) overflow.push(item);
      else {
        waiting.set(item.sourceId, count + 1);
        items.push(item);
      }
    }
    return { items, overflow };
  }

  /**
   * Records on the emitter's `$errors` stream which listener runs were not queued, their listeners' backlog full.
   * Worded and counted as the loop and quota reports are: events (each once, however many listeners missed it),
   * then the listeners that missed them; one count of runs would tell the same event twice over two listeners.
   */
  private async reportOverflow(trx: Transaction<Database>, committed: CommittedEvents, overflow: NewInvocation[]): Promise<EventSummary[]> {
    const byEvent = new Map<string, { event: EventSummary; listeners: string[] }>();
    for (const item of overflow) {
      const event = item.event as EventSummary;
      const entry = byEvent.get(event.id) ?? { event, listeners: [] };
      entry.listeners.push(item.sourceId);
      byEvent.set(event.id, entry);
    }
    const full = new Set(overflow.map((item) => item.sourceId));
    const waiting = `${this.maxQueuedListenerRuns} listener runs are waiting ${full.size > 1 ? 'on each' : 'there'} already`;
    const reason = `${waiting}, the most allowed (do subscriptions form a loop?)`;
    return this.reportNotDelivered(trx, committed, [...byEvent.values()], full, { name: 'SubscriptionOverflowError', code: 'subscription_overflow', reason });
  }

  /** One `$errors` event on the emitter, appended right after the commit's own events (one run of ids). */
  private async reportCut(
    trx: Transaction<Database>,
    committed: CommittedEvents,
    first: EventSummary,
    error: { name: string; message: string; code: string },
  ): Promise<EventSummary[]> {
    const nowMs = this.options.clock.now();
    const report = errorEvent(committed.emitterId, error, { invocationId: first.id, trigger: 'listener', event: first }, nowMs);
    return (await appendEvents(trx, committed.emitterId, [report], { dialect: this.options.dialect, retention: this.options.retention, nowMs })).events;
  }

  /** Why the listener runs of this commit may not start: the account's free-plan quota is used up; else undefined. */
  private async quotaRefusal(trx: Transaction<Database>, userId: string, listeners: Set<string>, nowMs: number): Promise<NotDelivered | undefined> {
    if (!listeners.size || !this.options.quotas) return undefined;
    const verdict = await this.options.quotas.check(userId, nowMs, trx);
    return verdict.allowed ? undefined : { name: 'QuotaExceededError', code: 'quota_exceeded', reason: verdict.reason ?? 'the daily quota is used up' };
  }

  /**
   * Records on the emitter's `$errors` stream that events were not handed to its listeners, and why. The report
   * itself goes to webhooks and live streams only, never to listeners, so that reporting a loop cannot start another.
   */
  private async reportNotDelivered(
    trx: Transaction<Database>,
    committed: CommittedEvents,
    cut: Array<{ event: EventSummary; listeners: string[] }>,
    active: Set<string>,
    why: NotDelivered,
  ): Promise<EventSummary[]> {
    const listeners = [...new Set(cut.flatMap((c) => c.listeners.filter((l) => active.has(l))))];
    // An event cut on its way to both listener sources and workflows comes once for each kind.
    const events = new Set(cut.map((c) => c.event.id)).size;
    const message = `${events} event(s) of ${committed.emitterId} were not delivered to ${listeners.join(', ')}: ${why.reason}`;
    return this.reportCut(trx, committed, cut[0]!.event, { name: why.name, message, code: why.code });
  }
}

/** Why listener runs were not queued, as the emitter's `$errors` event names it. */
interface NotDelivered {
  name: string;
  code: string;
  reason: string;
}

function loopReason(depth: number): string {
  return `they have passed through ${depth} listener hops, the most allowed is ${MAX_LISTENER_DEPTH} (do subscriptions form a loop?)`;
}

/** For each event, the distinct listeners with `prefix` whose subscriptions select its stream, in event order. */
function listenersByEvent(events: EventSummary[], subscriptions: SubscriptionRow[], prefix: string): Array<{ event: EventSummary; listeners: string[] }> {
  const relevant = subscriptions.filter((s) => s.listener_id.startsWith(prefix));
  if (!relevant.length) return [];
  const out: Array<{ event: EventSummary; listeners: string[] }> = [];
  for (const event of events) {
    const listeners = [...new Set(relevant.filter((s) => streamMatches(s.event_name, event.metadata.name)).map((s) => s.listener_id))];
    if (listeners.length) out.push({ event, listeners });
  }
  return out;
}
