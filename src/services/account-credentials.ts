// The connected accounts' credentials for runs and hooks: opened from their seal, OAuth tokens refreshed as they expire.
import type { Logger } from 'pino';
import type { Clock } from '../lib/clock.js';
import { bindings, type SecretBox, UnreadableSecretError } from '../lib/secrets.js';
import type { Store } from '../store/database.js';
import * as accounts from '../store/accounts.js';
import { type AppLink, CredentialError, type CredentialSource, type ResolvedAuths } from '../engine/invocation-base.js';
import { RefreshFailure, refreshAccessToken, type RefreshGrant } from './oauth-refresh.js';

/** A connected account's credential fields: a flat object, as `$auth` gives it to component code. */
export type Credentials = Record<string, string | number | boolean>;

/** A token is refreshed this long before it expires, so that it does not expire while a run uses it. */
const EXPIRY_MARGIN_MS = 30_000;
const REFRESH_TIMEOUT_MS = 10_000;

/** `expires_at` in epoch milliseconds: given as epoch seconds (a number or digits) or an ISO 8601 date. */
export function expiresAtMs(credentials: Credentials): number | undefined {
  const value = credentials.expires_at;
  if (typeof value === 'number') return Number.isFinite(value) ? value * 1000 : undefined;
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Number(value) * 1000;
  const parsed = Date.parse(value);
  return Number.isNaN(parsed) ? undefined : parsed;
}

/** What a refresh of this account needs, or undefined when it is not a refreshable OAuth account. */
export function refreshGrant(credentials: Credentials): RefreshGrant | undefined {
  const { oauth_refresh_token: refreshToken, oauth_token_url: tokenUrl } = credentials;
  if (typeof refreshToken !== 'string' || refreshToken === '' || typeof tokenUrl !== 'string') return undefined;
  const text = (value: unknown) => (value === undefined ? undefined : String(value));
  return {
    tokenUrl,
    refreshToken,
    clientId: text(credentials.oauth_client_id),
    clientSecret: text(credentials.oauth_client_secret),
    clientAuth: credentials.oauth_client_auth === 'body' ? 'body' : 'basic',
  };
}

/** Told the id of each source whose cached `$auth` went stale (an account it names changed). */
export type StaleSourceListener = (sourceId: string) => void;

export class AccountCredentials implements CredentialSource {
  private readonly listeners: StaleSourceListener[] = [];
  /** Refreshes in flight, by account id: runs that find the same expired token share one refresh. */
  private readonly refreshing = new Map<string, Promise<Credentials>>();

  constructor(
    private readonly store: Store,
    private readonly secrets: SecretBox,
    private readonly clock: Clock,
    private readonly options: { allowPrivateNetwork: boolean },
    private readonly logger: Logger,
  ) {}

  onStaleSource(listener: StaleSourceListener): void {
    this.listeners.push(listener);
  }

  /** `credentials` sealed for connected account `id` of account `ownerId`. */
  seal(ownerId: string, id: string, credentials: Credentials): string {
    return this.secrets.encrypt(JSON.stringify(credentials), bindings.connectedAccount(ownerId, id));
  }

  open(row: accounts.ConnectedAccountRow): Credentials {
    try {
      return JSON.parse(this.secrets.decrypt(row.credentials, bindings.connectedAccount(row.user_id, row.id))) as Credentials;
    } catch (error) {
      if (!(error instanceof UnreadableSecretError)) throw error;
      const message = `the credentials of connected account ${row.id} cannot be opened: ${error.message}; connect the app again`;
      throw new CredentialError('ConnectedAccountError', 'credentials_unreadable', message);
    }
  }

  /** The account's credentials changed or it went: sources that name it drop what they cached before their next run. */
  async changed(ownerId: string, accountId: string): Promise<void> {
    if (!this.listeners.length) return;
    for (const source of await accounts.sourcesNaming(this.store.db, ownerId, accountId)) {
      for (const listener of this.listeners) listener(source.id);
    }
  }

  async resolve(ownerId: string, links: AppLink[], options: { forceRefresh?: boolean } = {}): Promise<ResolvedAuths> {
    const ids = [...new Set(links.map((link) => link.accountId))];
    const rows = new Map((await accounts.findConnectedAccounts(this.store.db, ownerId, ids)).map((row) => [row.id, row]));
    const opened = new Map<string, Credentials>();
    let validUntilMs = Number.POSITIVE_INFINITY;
    let refreshable = false;
    for (const id of ids) {
      const row = rows.get(id);
      if (!row) {
        throw new CredentialError(
          'ConnectedAccountError',
          'account_missing',
          `connected account ${id} does not exist (it was deleted); connect the app again and configure the props that name it`,
        );
      }
      let credentials: Credentials;
      try {
        credentials = this.open(row);
      } catch (error) {
        // Credentials no key here opens are as unusable as a failed refresh: the account says so until replaced.
        if (error instanceof CredentialError) await accounts.updateCredentialsIf(this.store.db, row.id, row.credentials, { healthy: 0 });
        throw error;
      }
      if (refreshGrant(credentials)) {
        refreshable = true;
        const expires = expiresAtMs(credentials);
        if (options.forceRefresh || (expires !== undefined && this.clock.now() >= expires - EXPIRY_MARGIN_MS)) {
          credentials = await this.refresh(row, credentials);
        }
        const renewed = expiresAtMs(credentials);
        if (renewed !== undefined) validUntilMs = Math.min(validUntilMs, renewed - EXPIRY_MARGIN_MS);
      }
      opened.set(id, credentials);
    }
    // A copy per prop: two props naming one account must not share an object a component could change.
    return { auths: Object.fromEntries(links.map((link) => [link.prop, { ...opened.get(link.accountId)! }])), validUntilMs, refreshable };
  }

  /** The account's credentials as now stored, read again. */
  private async current(row: accounts.ConnectedAccountRow): Promise<Credentials> {
    const now = await accounts.findConnectedAccount(this.store.db, row.user_id, row.id);
    if (!now) throw new CredentialError('ConnectedAccountError', 'account_missing', `connected account ${row.id} was deleted while its token was refreshed`);
    return this.open(now);
  }

  private refresh(row: accounts.ConnectedAccountRow, credentials: Credentials): Promise<Credentials> {
    const pending = this.refreshing.get(row.id);
    if (pending) return pending;
    const refresh = this.refreshOnce(row, credentials).finally(() => this.refreshing.delete(row.id));
    this.refreshing.set(row.id, refresh);
    return refresh;
  }

  /** One refresh_token grant; stores the new tokens, or marks the account unhealthy and throws a CredentialError. */
  private async refreshOnce(row: accounts.ConnectedAccountRow, credentials: Credentials): Promise<Credentials> {
    const grant = refreshGrant(credentials)!;
    try {
      const tokens = await refreshAccessToken(grant, {
        allowPrivateNetwork: this.options.allowPrivateNetwork,
        timeoutMs: REFRESH_TIMEOUT_MS,
        nowMs: this.clock.now(),
      });
      const next: Credentials = { ...credentials, oauth_access_token: tokens.accessToken };
      if (tokens.refreshToken !== undefined) next.oauth_refresh_token = tokens.refreshToken;
      if (tokens.expiresAt !== undefined) next.expires_at = tokens.expiresAt;
      else delete next.expires_at;
      const changes = { credentials: this.seal(row.user_id, row.id, next), fields: JSON.stringify(Object.keys(next)), healthy: 1 };
      // Credentials replaced (PUT) while the grant was on its way win: the run takes them instead.
      if (!(await accounts.updateCredentialsIf(this.store.db, row.id, row.credentials, changes))) return this.current(row);
      await this.changed(row.user_id, row.id);
      return next;
    } catch (error) {
      if (!(error instanceof RefreshFailure)) throw error;
      // Only the credentials that failed to refresh are unhealthy, not ones a PUT put there meanwhile.
      await accounts.updateCredentialsIf(this.store.db, row.id, row.credentials, { healthy: 0 });
      this.logger.warn({ connectedAccountId: row.id, reason: error.message }, 'OAuth token refresh failed');
      throw new CredentialError('OAuthRefreshError', 'oauth_refresh_failed', `could not refresh the OAuth token of account ${row.id}: ${error.message}`);
    }
  }
}
