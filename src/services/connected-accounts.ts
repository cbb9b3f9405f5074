// Connected accounts (an extension): apps' credentials, sealed at rest and never shown, that app props name by id.
import type { AccountLimiter } from './account-limits.js';
import type { Store } from '../store/database.js';
import * as accounts from '../store/accounts.js';
import { isId, newId, nowSeconds } from '../model/ids.js';
import { invalid, notFound, ServiceError } from '../model/errors.js';
import type { Page, PageRequest } from '../model/pagination.js';
import type { PropDescriptor } from '../runtime/types.js';
import { resolveAuths } from '../engine/invocation-base.js';
import { checkAuthProvisions } from './auth-provisions.js';
import { type AccountCredentials, type Credentials, expiresAtMs } from './account-credentials.js';
import type { SourceService } from './sources.js';
import type { WorkflowService } from './workflows.js';
import { quote } from '../runtime/worker/quote.js';

/** What the API shows of a connected account: never a credential value, only the fields' names. */
export interface ConnectedAccountView {
  id: string;
  app: string;
  name: string;
  fields: string[];
  healthy: boolean;
  created_at: number;
  updated_at: number;
}

export interface ConnectedAccountRequest {
  app: string;
  name: string;
  credentials: Record<string, unknown>;
}

export interface ConnectedAccountChange {
  name?: string | undefined;
  credentials?: Record<string, unknown> | undefined;
}

export const APP_SLUG = '^[a-z0-9_]{1,64}$';
export const CREDENTIAL_FIELD = '^[A-Za-z0-9_.-]{1,64}$';
export const MAX_CREDENTIAL_FIELDS = 64;
export const MAX_CREDENTIAL_BYTES = 16 * 1024;
const APP_SLUG_RE = new RegExp(APP_SLUG);
const CREDENTIAL_FIELD_RE = new RegExp(CREDENTIAL_FIELD);

/**
 * The 400 of a value of a POST or PUT /accounts body that its schema let through: `<field> <reason>` as the message and,
 * as a schema's refusal has, a detail naming the field (`credentials.expires_at`), so that a client marks that field
 * without reading the message.
 */
function refused(field: string, reason: string): ServiceError {
  return invalid(`${field} ${reason}`, [{ in: 'body', field, message: reason }]);
}

/**
 * A flat object of strings, numbers and booleans, within the limits, with a usable `expires_at` and token URL.
 * Messages name fields, never values: a value in an error body or a log line would be a leaked secret.
 */
export function checkCredentials(given: unknown): Credentials {
  if (typeof given !== 'object' || given === null || Array.isArray(given)) throw refused('credentials', 'must be an object of fields');
  const entries = Object.entries(given);
  if (!entries.length) throw refused('credentials', 'must hold at least one field');
  if (entries.length > MAX_CREDENTIAL_FIELDS) throw refused('credentials', `may hold at most ${MAX_CREDENTIAL_FIELDS} fields, not ${entries.length}`);
  for (const [name, value] of entries) {
    if (!CREDENTIAL_FIELD_RE.test(name) || name === '__proto__') throw refused('credentials', 'field names are 1 to 64 of A-Z a-z 0-9 _ . -');
    const scalar = typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
    if (!scalar) throw refused(`credentials.${name}`, 'must be a string, a number or a boolean');
  }
  const bytes = Buffer.byteLength(JSON.stringify(given));
  if (bytes > MAX_CREDENTIAL_BYTES) throw refused('credentials', `may take at most ${MAX_CREDENTIAL_BYTES} bytes of JSON, not ${bytes}`);
  const credentials = given as Credentials;
  if (credentials.expires_at !== undefined && expiresAtMs(credentials) === undefined) {
    throw refused('credentials.expires_at', 'must be epoch seconds or an ISO 8601 date');
  }
  if (credentials.oauth_token_url !== undefined && !isHttpUrl(credentials.oauth_token_url)) {
    throw refused('credentials.oauth_token_url', 'must be an http or https URL');
  }
  // Anything else was read as basic: a typo ("Body", "post") sent the client secret the way the server refuses.
  if (credentials.oauth_client_auth !== undefined && credentials.oauth_client_auth !== 'basic' && credentials.oauth_client_auth !== 'body') {
    throw refused('credentials.oauth_client_auth', 'must be "basic" or "body"');
  }
  return credentials;
}

function isHttpUrl(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

function checkName(name: string): string {
  if (name.trim() === '') throw refused('name', 'must be a non-empty string');
  return name;
}

function toView(row: accounts.ConnectedAccountRow): ConnectedAccountView {
  return {
    id: row.id,
    app: row.app,
    name: row.name,
    fields: JSON.parse(row.fields) as string[],
    healthy: row.healthy === 1,
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}

/** How many names a 409 message lists before "and N more" (its details list them all). */
const NAMED_IN_MESSAGE = 10;

export class ConnectedAccountService {
  constructor(
    private readonly store: Store,
    private readonly credentials: AccountCredentials,
    private readonly sources: SourceService,
    private readonly workflows: WorkflowService,
    private readonly limiter: AccountLimiter,
  ) {}

  async create(ownerId: string, request: ConnectedAccountRequest): Promise<ConnectedAccountView> {
    if (!APP_SLUG_RE.test(request.app)) throw refused('app', 'must be an app name slug: 1 to 64 of a-z 0-9 _');
    const credentials = checkCredentials(request.credentials);
    const now = nowSeconds();
    const id = newId('apn');
    const row: accounts.ConnectedAccountRow = {
      id,
      user_id: ownerId,
      app: request.app,
      name: checkName(request.name),
      credentials: this.credentials.seal(ownerId, id, credentials),
      fields: JSON.stringify(Object.keys(credentials)),
      healthy: 1,
      created_at: now,
      updated_at: now,
    };
    await this.store.db.transaction().execute(async (trx) => {
      await this.limiter.assertRoom(trx, ownerId, 'connected_accounts');
      await accounts.insertConnectedAccount(trx, row);
    });
    return toView(row);
  }

  async list(ownerId: string, page: PageRequest): Promise<Page<ConnectedAccountView>> {
    const result = await accounts.listConnectedAccounts(this.store.db, ownerId, page);
    return { ...result, items: result.items.map(toView) };
  }

  async get(ownerId: string, id: string): Promise<ConnectedAccountView> {
    return toView(await this.find(ownerId, id));
  }

  /**
   * Renames, or replaces the credentials (a rotation: the account is healthy again, and the next run sees them).
   * Only the given columns are written, so concurrent changes of the other ones stay; 404 when a delete came first.
   */
  async update(ownerId: string, id: string, change: ConnectedAccountChange): Promise<ConnectedAccountView> {
    const stored = await this.find(ownerId, id);
    if (change.name === undefined && change.credentials === undefined)
      throw invalid('give name, credentials or both: nothing else of a connected account changes');
    const columns: Parameters<typeof accounts.updateConnectedAccount>[3] = { updated_at: nowSeconds() };
    if (change.name !== undefined) columns.name = checkName(change.name);
    const credentials = change.credentials === undefined ? undefined : checkCredentials(change.credentials);
    // updated_at says when the account last changed: sending its name or (healthy) credentials again leaves it.
    if ((columns.name ?? stored.name) === stored.name && (!credentials || this.sameCredentials(stored, credentials))) delete columns.updated_at;
    if (credentials) {
      columns.credentials = this.credentials.seal(ownerId, id, credentials);
      columns.fields = JSON.stringify(Object.keys(credentials));
      columns.healthy = 1;
    }
    const row = await this.store.db
      .transaction()
      .execute(async (trx) =>
        (await accounts.updateConnectedAccount(trx, ownerId, id, columns)) ? accounts.findConnectedAccount(trx, ownerId, id) : undefined,
      );
    if (!row) throw notFound(`connected account ${quote(id)}`);
    if (change.credentials !== undefined) await this.credentials.changed(ownerId, id);
    return toView(row);
  }

  /**
   * Refused (409) while sources or workflows name the account, unless `force`: active ones are then deactivated
   * first, as a PATCH `{ active: false }` would (their deactivate() hooks still see the credentials), and kept. The
   * users are read again with the account locked, in the transaction that deletes it: a deploy naming it meanwhile
   * (which holds it while it commits) is found there, and an active one refuses the delete even with `force`.
   */
  async delete(ownerId: string, id: string, force: boolean): Promise<void> {
    await this.find(ownerId, id);
    if (force) {
      for (const source of await accounts.sourcesNaming(this.store.db, ownerId, id))
        if (source.active) await this.sources.update(ownerId, source.id, { active: false }, 'patch');
      for (const workflow of await accounts.workflowsNaming(this.store.db, ownerId, id))
        if (workflow.active) await this.workflows.update(ownerId, workflow.id, { active: false });
    }
    await this.store.db.transaction().execute(async (trx) => {
      if (!(await accounts.lockConnectedAccount(trx, this.store.dialect, ownerId, id))) throw notFound(`connected account ${quote(id)}`);
      const sources = await accounts.sourcesNaming(trx, ownerId, id);
      const workflows = await accounts.workflowsNaming(trx, ownerId, id);
      const named = [...sources.map((s) => ({ type: 'source' as const, ...s })), ...workflows.map((w) => ({ type: 'workflow' as const, ...w }))];
      const blocking = force ? named.filter((u) => u.active) : named;
      if (blocking.length) {
        const shown = blocking.slice(0, NAMED_IN_MESSAGE).map((u) => `${u.type} ${quote(u.name)} (${u.id})`);
        if (blocking.length > NAMED_IN_MESSAGE) shown.push(`${blocking.length - NAMED_IN_MESSAGE} more`);
        throw new ServiceError(
          'conflict',
          `connected account ${quote(id)} is used by ${shown.join(', ')}; delete with force=true to deactivate them and delete it`,
          blocking,
        );
      }
      await accounts.deleteConnectedAccount(trx, ownerId, id);
    });
    await this.credentials.changed(ownerId, id);
  }

  /**
   * `$auth` of each app prop for these configured values, as a run gets it (tokens refreshed when expired), for
   * `options()` and `additionalProps()`: an id the owner has no account of is refused as at deploy.
   */
  async authsFor(ownerId: string, props: PropDescriptor[], configured: Record<string, unknown>): Promise<Record<string, Record<string, unknown>>> {
    await checkAuthProvisions(this.store, ownerId, props, configured);
    return (await resolveAuths(this.credentials, ownerId, props, configured)).auths;
  }

  /** Whether `credentials` are what a healthy account holds, in the same order (`fields` shows it); an unreadable seal differs. */
  private sameCredentials(row: accounts.ConnectedAccountRow, credentials: Record<string, unknown>): boolean {
    if (row.healthy !== 1) return false;
    try {
      return JSON.stringify(this.credentials.open(row)) === JSON.stringify(credentials);
    } catch {
      return false;
    }
  }

  private async find(ownerId: string, id: string): Promise<accounts.ConnectedAccountRow> {
    const row = isId(id, 'apn') ? await accounts.findConnectedAccount(this.store.db, ownerId, id) : undefined;
    if (!row) throw notFound(`connected account ${quote(id)}`);
    return row;
  }
}
