// Webhooks: account-level HTTP destinations, their signing secrets (shown once) and their delivery log.
import type { AccountLimiter } from './account-limits.js';
import { randomBytes } from 'node:crypto';
import type { Store } from '../store/database.js';
import { isId, newId, nowSeconds } from '../model/ids.js';
import * as webhooks from '../store/webhooks.js';
import { listDeliveries, type DeliveryRow } from '../store/deliveries.js';
import { retryingDeadlocks } from '../store/deadlocks.js';
import { invalid, notFound } from '../model/errors.js';
import type { Page, PageRequest } from '../model/pagination.js';
import { OutboundBlockedError, assertPublicLiteral, parseHttpUrl } from '../delivery/outbound.js';
import { bindings, type SecretBox } from '../lib/secrets.js';
import { quote } from '../runtime/worker/quote.js';
import { endpointPathPrefix } from '../model/endpoints.js';

/** The spec's Webhook; `user_id` and `secret` only in the create response. */
export interface WebhookView {
  id: string;
  user_id?: string;
  name: string | null;
  description: string | null;
  url: string;
  active: boolean;
  created_at: number;
  updated_at: number;
  secret?: string;
}

/** One attempt of the delivery log. */
export interface DeliveryView {
  id: string;
  event_id: string;
  emitter_id: string;
  attempt: number;
  state: DeliveryRow['state'];
  status_code: number | null;
  error: string | null;
  duration_ms: number | null;
  attempted_at_ms: number | null;
  next_attempt_at_ms: number | null;
  created_at: number;
}

export interface WebhookRequest {
  url: string;
  name?: string | undefined;
  description?: string | undefined;
}

/** What PATCH may change: `active` only to turn a retired webhook back on. */
export interface WebhookChanges {
  active?: true | undefined;
  name?: string | null | undefined;
  description?: string | null | undefined;
}

/** A Standard Webhooks secret: `whsec_` and the base64 of 24 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

function toView(row: webhooks.WebhookRow): WebhookView {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    url: row.url,
    active: row.active === 1,
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}

function toDeliveryView(row: DeliveryRow): DeliveryView {
  const ms = (value: number | null) => (value === null ? null : Number(value));
  return {
    id: row.id,
    event_id: row.event_id,
    emitter_id: row.emitter_id,
    attempt: row.attempt,
    state: row.state,
    status_code: row.status_code,
    error: row.error,
    duration_ms: row.duration_ms,
    attempted_at_ms: ms(row.attempted_ms),
    next_attempt_at_ms: ms(row.next_attempt_ms),
    created_at: Math.floor(Number(row.created_ms) / 1000),
  };
}

export class WebhookService {
  /** This server's endpoints: their origin and the path they start with (see isOwnEndpoint). */
  private readonly ownEndpoints: { origin: string; pathPrefix: string };

  constructor(
    private readonly store: Store,
    private readonly secrets: SecretBox,
    private readonly options: { allowPrivateNetwork: boolean; publicUrl: string; onDeleted?: (webhookId: string) => void },
    private readonly limiter: AccountLimiter,
  ) {
    this.ownEndpoints = { origin: new URL(options.publicUrl).origin, pathPrefix: endpointPathPrefix(options.publicUrl) };
  }

  /** The only response that carries the secret; it is stored sealed, for signing. */
  async create(accountId: string, request: WebhookRequest): Promise<WebhookView> {
    this.checkUrl(request.url);
    const secret = newWebhookSecret();
    const now = nowSeconds();
    const id = newId('wh');
    const row: webhooks.WebhookRow = {
      id,
      user_id: accountId,
      name: request.name ?? null,
      description: request.description ?? null,
      url: request.url,
      secret: this.secrets.encrypt(secret, bindings.webhookSecret(accountId, id)),
      active: 1,
      created_at: now,
      updated_at: now,
    };
    await this.store.db.transaction().execute(async (trx) => {
      await this.limiter.assertRoom(trx, accountId, 'webhooks');
      await webhooks.insertWebhook(trx, row);
    });
    return { ...toView(row), user_id: accountId, secret };
  }

  async list(accountId: string, page: PageRequest): Promise<Page<WebhookView>> {
    const result = await webhooks.listWebhooks(this.store.db, accountId, page);
    return { ...result, items: result.items.map(toView) };
  }

  async get(accountId: string, webhookId: string): Promise<WebhookView> {
    return toView(await this.find(accountId, webhookId));
  }

  /**
   * Changes its name or description, or turns it back on after a 410 retired it: events committed from then on are
   * delivered again (those committed while it was off got no delivery). Nothing else about it changes, its secret least.
   */
  async update(accountId: string, webhookId: string, changes: WebhookChanges): Promise<WebhookView> {
    const row = await this.find(accountId, webhookId);
    if (changes.active === undefined && changes.name === undefined && changes.description === undefined) {
      throw invalid('give at least one of active (true, to turn it back on), name and description');
    }
    const changed: webhooks.WebhookChanges = {
      ...(changes.name !== undefined && { name: changes.name }),
      ...(changes.description !== undefined && { description: changes.description }),
      ...(changes.active === true && { active: 1 }),
    };
    const updated = { ...row, ...changed, updated_at: nowSeconds() };
    await webhooks.updateWebhook(this.store.db, webhookId, { ...changed, updated_at: updated.updated_at });
    return toView(updated);
  }

  /** Removes the webhook, its pending deliveries and log, and the subscriptions naming it. */
  async delete(accountId: string, webhookId: string): Promise<void> {
    await this.find(accountId, webhookId);
    // Commits that record attempts and queue deliveries in one transaction may still cross it in another order:
    // PostgreSQL ends one of them as a deadlock, and the delete is tried again rather than answered 500.
    await retryingDeadlocks(() => this.store.db.transaction().execute((trx) => webhooks.deleteWebhookCascade(trx, webhookId)));
    this.options.onDeleted?.(webhookId);
  }

  async deliveries(accountId: string, webhookId: string, page: PageRequest): Promise<Page<DeliveryView>> {
    await this.find(accountId, webhookId);
    const result = await listDeliveries(this.store.db, webhookId, page);
    return { ...result, items: result.items.map(toDeliveryView) };
  }

  private async find(accountId: string, webhookId: string): Promise<webhooks.WebhookRow> {
    const row = isId(webhookId, 'wh') ? await webhooks.findWebhook(this.store.db, accountId, webhookId) : undefined;
    if (!row) throw notFound(`webhook ${quote(webhookId)}`);
    return row;
  }

  /**
   * Whether `url` names an endpoint of this server (`<public URL>/e/…`): a webhook there would feed a source's events
   * back to a source over HTTP, where the hop count that stops subscription loops is lost.
   */
  private isOwnEndpoint(url: URL): boolean {
    if (url.origin !== this.ownEndpoints.origin) return false;
    let path = url.pathname;
    try {
      path = decodeURI(path);
    } catch {
      // Not decodable: the router would not match it as an endpoint either.
    }
    return path.startsWith(this.ownEndpoints.pathPrefix);
  }

  /** http or https with a host (port and path allowed); a literal private address is refused up front. */
  private checkUrl(raw: string): void {
    const url = parseHttpUrl(raw, 'url');
    // Never sent (the HTTP client drops them), and shown in every list: a password there would be a secret in the clear.
    if (url.username !== '' || url.password !== '') {
      throw invalid('url must not hold a user name or password (user:password@host): they are not sent; receivers check the webhook-signature header instead');
    }
    if (url.port === '0') throw invalid(`url ${quote(raw)} names port 0, which nothing can be sent to`);
    // Kept and shown, it would say deliveries go where they do not: a request never carries its fragment.
    if (raw.includes('#')) throw invalid(`url ${quote(raw)} holds a #fragment, which a request never sends; leave it out`);
    if (this.isOwnEndpoint(url)) {
      throw invalid(
        `url ${quote(raw)} is one of this server's own HTTP endpoints: each event delivered there would run its source again, a loop no hop limit stops; subscribe the source to the emitter instead (POST /v1/subscriptions)`,
      );
    }
    try {
      assertPublicLiteral(url, this.options.allowPrivateNetwork);
    } catch (error) {
      if (error instanceof OutboundBlockedError) throw invalid(`url ${quote(raw)}: ${error.message} (see --allow-private-network)`);
      throw error;
    }
  }
}
