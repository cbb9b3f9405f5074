// What every call into a source's code carries, whatever it calls: the prepared bundle, decrypted props, `$auth`, its endpoint.
import type { ComponentRuntime } from '../runtime/index.js';
import type { ComponentInfo, InvocationOutcome, InvocationRequest, PropDescriptor } from '../runtime/types.js';
import type { ComponentRow } from '../store/components.js';
import type { SourceRow } from '../store/sources.js';
import { type SecretBox, UnreadableSecretError } from '../lib/secrets.js';
import { runtimeProps } from '../model/props.js';
import { endpointUrl } from '../model/endpoints.js';

export type InvocationBase = Omit<InvocationRequest, 'method' | 'events' | 'db'>;

export interface InvocationBaseSettings {
  /** Endpoint URLs are built on it. */
  publicUrl: string;
  runTimeoutSeconds: number;
}

/** An app prop whose configured value names a connected account (`{ authProvisionId }`). */
export interface AppLink {
  prop: string;
  /** The app slug the prop declares, when it declares one. */
  app: string | undefined;
  accountId: string;
}

/** `$auth` per app prop name, and how long it may be used as it is. */
export interface ResolvedAuths {
  auths: Record<string, Record<string, unknown>>;
  /** Epoch ms from which they must be resolved again (an OAuth token is about to expire); Infinity for never. */
  validUntilMs: number;
  /** True when one of the accounts is OAuth with what a refresh needs: a 401 is then worth a refresh and a retry. */
  refreshable: boolean;
}

/**
 * The connected accounts' credentials, implemented above engine/ (services/account-credentials.ts): decrypted, an
 * expired OAuth token refreshed first (or every refreshable one with `forceRefresh`, after a 401).
 */
export interface CredentialSource {
  resolve(ownerId: string, links: AppLink[], options?: { forceRefresh?: boolean }): Promise<ResolvedAuths>;
}

/** Why credentials could not be given to a run (a failed refresh, a deleted account); the run fails with it. */
export class CredentialError extends Error {
  override name = 'CredentialError';
  constructor(
    /** The `name` of the run's error: `OAuthRefreshError`, `ConnectedAccountError`. */
    readonly errorName: string,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The values the component sees as `this.<prop>`, secrets opened; a secret this server's key cannot open fails the
 * runs (CredentialError) instead of being retried for ever.
 */
export function openedProps(props: PropDescriptor[], stored: Record<string, unknown>, secrets: SecretBox, accountId: string): Record<string, unknown> {
  try {
    return runtimeProps(props, stored, secrets, accountId);
  } catch (error) {
    if (error instanceof UnreadableSecretError) throw new CredentialError('SecretError', 'secret_unreadable', error.message);
    throw error;
  }
}

/** The failed outcome of a run that could not be given its credentials. */
export function credentialFailure(error: CredentialError): InvocationOutcome {
  const { errorName: name, message, code } = error;
  return { emits: [], logs: [], error: { name, message, stack: `${name}: ${message}`, code }, durationMs: 0 };
}

/** True when a run failed on an HTTP 401 (axios, @pipedream/platform's axios, or a component's own error saying so). */
export function isUnauthorized(outcome: InvocationOutcome): boolean {
  const error = outcome.error;
  if (!error) return false;
  return error.code === '401' || /\bstatus(?: code)?:? 401\b|\b401 unauthori[sz]ed\b/i.test(`${error.name} ${error.message}`);
}

/** The app props of `stored` (configured props) that name a connected account. */
export function appLinks(props: PropDescriptor[], stored: Record<string, unknown>): AppLink[] {
  const links: AppLink[] = [];
  for (const prop of props) {
    if (prop.type !== 'app') continue;
    const value = stored[prop.name] as { authProvisionId?: unknown } | undefined;
    if (typeof value?.authProvisionId === 'string') links.push({ prop: prop.name, app: prop.app, accountId: value.authProvisionId });
  }
  return links;
}

/** `$auth` of every app prop: the connected account's credentials, or `{}` for an app prop that names none. */
export async function resolveAuths(
  credentials: CredentialSource,
  ownerId: string,
  props: PropDescriptor[],
  stored: Record<string, unknown>,
  forceRefresh = false,
): Promise<ResolvedAuths> {
  const apps = props.filter((p) => p.type === 'app');
  const empty = Object.fromEntries(apps.map((p) => [p.name, {}]));
  const links = appLinks(apps, stored);
  // Most components have no connected account: no look-up at all.
  if (!links.length) return { auths: empty, validUntilMs: Number.POSITIVE_INFINITY, refreshable: false };
  const resolved = await credentials.resolve(ownerId, links, { forceRefresh });
  return { ...resolved, auths: { ...empty, ...resolved.auths } };
}

/** A base with its `$auth`, and until when that `$auth` holds. */
export interface AuthorisedBase {
  base: InvocationBase;
  validUntilMs: number;
  refreshable: boolean;
}

/** Builds invocation bases for the dispatcher's runs and the source service's hooks alike. */
export class InvocationBases {
  constructor(
    private readonly runtime: ComponentRuntime,
    private readonly secrets: SecretBox,
    private readonly credentials: CredentialSource,
    private readonly settings: InvocationBaseSettings,
  ) {}

  endpointUrl(endpointId: string | null): string | undefined {
    return endpointId ? endpointUrl(this.settings.publicUrl, endpointId) : undefined;
  }

  /** Everything the runtime needs to call code of this source, props decrypted; throws CredentialError. */
  async of(source: SourceRow, component: ComponentRow, info: ComponentInfo): Promise<InvocationBase> {
    return (await this.authorised(source, component, info)).base;
  }

  /** As `of`, with how long its `$auth` holds (the batch runner keeps bases between batches). */
  async authorised(source: SourceRow, component: ComponentRow, info: ComponentInfo): Promise<AuthorisedBase> {
    const prepared = await this.runtime.prepare(component.code);
    const http = info.props.find((p) => p.type === '$.interface.http');
    const stored = JSON.parse(source.configured_props) as Record<string, unknown>;
    const { auths, validUntilMs, refreshable } = await resolveAuths(this.credentials, source.user_id, info.props, stored);
    const base: InvocationBase = {
      accountId: source.user_id,
      sourceId: source.id,
      component: prepared,
      props: openedProps(info.props, stored, this.secrets, source.user_id),
      auths,
      httpEndpoint: this.endpointUrl(source.endpoint_id),
      customResponse: http?.customResponse === true,
      timeoutMs: this.settings.runTimeoutSeconds * 1000,
    };
    return { base, validUntilMs, refreshable };
  }

  /** The same base with its `$auth` resolved again: expired tokens refreshed, or every refreshable one (`forceRefresh`). */
  async reauthorised(previous: AuthorisedBase, source: SourceRow, info: ComponentInfo, forceRefresh = false): Promise<AuthorisedBase> {
    const stored = JSON.parse(source.configured_props) as Record<string, unknown>;
    const { auths, validUntilMs, refreshable } = await resolveAuths(this.credentials, source.user_id, info.props, stored, forceRefresh);
    return { base: { ...previous.base, auths }, validUntilMs, refreshable };
  }
}
