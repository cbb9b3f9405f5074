// Subscriptions and auto-subscriptions: which emitter's stream goes to which listener, checked within the account.
import type { AccountLimiter } from './account-limits.js';
import { EMITTER_GLOBS } from '../model/subscriptions.js';
import type { Transaction } from 'kysely';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import { isId, newId, nowSeconds } from '../model/ids.js';
import * as subscriptions from '../store/subscriptions.js';
import { lockAccount } from '../store/account-limits.js';
import { invalid, notFound } from '../model/errors.js';
import { quote } from '../runtime/worker/quote.js';

/** The spec's Subscription. */
export interface SubscriptionView {
  id: string;
  emitter_id: string;
  listener_id: string;
  event_name: string;
}

/** An auto-subscription: the listener and stream every source or workflow created later is subscribed with. */
export interface AutoSubscriptionView {
  id: string;
  listener_id: string;
  event_name: string;
}

/** An auto-subscription as its list shows it: when it was made tells what a cleanup may remove. */
export interface ListedAutoSubscriptionView extends AutoSubscriptionView {
  created_at: number;
}

function toView(row: subscriptions.SubscriptionRow): SubscriptionView {
  return { id: row.id, emitter_id: row.emitter_id, listener_id: row.listener_id, event_name: row.event_name };
}

/** A source or workflow being created: what its auto-subscriptions are materialised from. */
export interface NewEmitter {
  id: string;
  user_id: string;
  created_at: number;
}

export interface SubscriptionRequest {
  emitterId: string;
  listenerId: string;
  eventName: string;
}

export class SubscriptionService {
  constructor(
    private readonly store: Store,
    private readonly limiter: AccountLimiter,
  ) {}

  /** Idempotent: the same triple returns the subscription that exists. */
  async create(accountId: string, request: SubscriptionRequest): Promise<SubscriptionView> {
    // The emitter and listener stay locked until the subscription is in: a delete of either cannot leave it dangling.
    const row = await this.store.db.transaction().execute(async (trx) => {
      // The account first (it counts against the limit below), then the endpoints, as a workflow's create takes them.
      await lockAccount(trx, accountId);
      await this.checkEmitter(trx, accountId, request.emitterId);
      await this.checkListener(trx, accountId, request.listenerId);
      // After the checks: an id outside the account is a 404, and a glob a listener no more than another glob.
      if (request.emitterId === request.listenerId) {
        throw invalid(`${request.listenerId} cannot listen to itself: each event it emits would run it again, without end`);
      }
      // The same triple again is no new subscription: it is answered with the one there, whatever the limit.
      if (!(await subscriptions.hasSubscription(trx, { userId: accountId, ...request }))) await this.limiter.assertRoom(trx, accountId, 'subscriptions');
      return subscriptions.insertSubscription(trx, {
        id: newId('sub'),
        user_id: accountId,
        emitter_id: request.emitterId,
        listener_id: request.listenerId,
        event_name: request.eventName,
        created_at: nowSeconds(),
      });
    });
    return toView(row);
  }

  /** Removes the subscription with exactly this triple; 404 when none matched. */
  async delete(accountId: string, request: SubscriptionRequest): Promise<void> {
    const key = { userId: accountId, ...request };
    if ((await subscriptions.deleteSubscription(this.store.db, key)) === 0) {
      throw notFound(`subscription of ${quote(request.listenerId)} to ${quote(request.emitterId)} with event_name ${quote(request.eventName)}`);
    }
  }

  async list(accountId: string): Promise<SubscriptionView[]> {
    return (await subscriptions.listSubscriptions(this.store.db, accountId)).map(toView);
  }

  async createAuto(accountId: string, request: { listenerId: string; eventName: string }): Promise<AutoSubscriptionView> {
    const row = await this.store.db.transaction().execute(async (trx) => {
      // The account first, then the listener, as every transaction that counts against a limit takes them.
      await lockAccount(trx, accountId);
      await this.checkListener(trx, accountId, request.listenerId);
      if (!(await subscriptions.hasAutoSubscription(trx, accountId, request.listenerId, request.eventName))) {
        await this.limiter.assertRoom(trx, accountId, 'subscriptions');
      }
      return subscriptions.insertAutoSubscription(trx, {
        id: newId('sub'),
        user_id: accountId,
        listener_id: request.listenerId,
        event_name: request.eventName,
        created_at: nowSeconds(),
      });
    });
    return { id: row.id, listener_id: row.listener_id, event_name: row.event_name };
  }

  /** The account's own auto-subscriptions, newest first (not paginated, as the subscriptions' list). */
  async listAuto(accountId: string): Promise<ListedAutoSubscriptionView[]> {
    const rows = await subscriptions.listAutoSubscriptions(this.store.db, accountId, 'desc');
    return rows.map((row) => ({ id: row.id, listener_id: row.listener_id, event_name: row.event_name, created_at: row.created_at }));
  }

  async deleteAuto(accountId: string, request: { listenerId: string; eventName: string }): Promise<void> {
    if ((await subscriptions.deleteAutoSubscription(this.store.db, accountId, request.listenerId, request.eventName)) === 0) {
      throw notFound(`auto-subscription of ${quote(request.listenerId)} with event_name ${quote(request.eventName)}`);
    }
  }

  /** Subscribes a source or workflow being created to every auto-subscription of its account, inside its creation transaction. */
  async materialise(trx: Transaction<Database>, emitter: NewEmitter): Promise<void> {
    const autos = await subscriptions.listAutoSubscriptions(trx, emitter.user_id);
    // Each auto-subscription becomes a subscription of the new emitter: they count against the limit like any other.
    await this.limiter.assertRoom(trx, emitter.user_id, 'subscriptions', autos.length);
    for (const auto of autos) {
      await subscriptions.insertSubscription(trx, {
        id: newId('sub'),
        user_id: emitter.user_id,
        emitter_id: emitter.id,
        listener_id: auto.listener_id,
        event_name: auto.event_name,
        created_at: emitter.created_at,
      });
    }
  }

  /** Emitters: a source or workflow of the account (locked), or a glob. */
  private async checkEmitter(trx: Transaction<Database>, accountId: string, emitterId: string): Promise<void> {
    if ((EMITTER_GLOBS as readonly string[]).includes(emitterId)) return;
    // No id holds a `*`: a glob of another shape is a mistake in the request, not a missing emitter.
    if (emitterId.includes('*')) throw invalid(`emitter_id ${quote(emitterId)} is no glob this server knows: dc_* (all sources) or p_* (all workflows)`);
    if (isId(emitterId, 'dc') && (await subscriptions.lockOwnedEndpoint(trx, accountId, emitterId, 'sources'))) return;
    if (isId(emitterId, 'p') && (await subscriptions.lockOwnedEndpoint(trx, accountId, emitterId, 'workflows'))) return;
    throw notFound(`emitter ${quote(emitterId)}`);
  }

  /** Listeners: a source, workflow or webhook of the account (locked). */
  private async checkListener(trx: Transaction<Database>, accountId: string, listenerId: string): Promise<void> {
    if ((EMITTER_GLOBS as readonly string[]).includes(listenerId)) {
      throw invalid(`listener_id must be one source (dc_), workflow (p_) or webhook (wh_), not the glob ${quote(listenerId)}`);
    }
    if (isId(listenerId, 'dc') && (await subscriptions.lockOwnedEndpoint(trx, accountId, listenerId, 'sources'))) return;
    if (isId(listenerId, 'wh') && (await subscriptions.lockOwnedEndpoint(trx, accountId, listenerId, 'webhooks'))) return;
    if (isId(listenerId, 'p') && (await subscriptions.lockOwnedEndpoint(trx, accountId, listenerId, 'workflows'))) return;
    throw notFound(`listener ${quote(listenerId)}`);
  }
}
