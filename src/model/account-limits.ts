// The most of each kind of resource one account may hold on this server, and the error a create past it gets.
import { ServiceError } from './errors.js';

export const LIMITED_RESOURCES = ['sources', 'workflows', 'webhooks', 'subscriptions', 'connected_accounts'] as const;
export type LimitedResource = (typeof LIMITED_RESOURCES)[number];

/** Per resource, the most one account may hold; 0 means no limit. */
export type AccountLimits = Readonly<Record<LimitedResource, number>>;

/** Generous for a person or a team, small enough that one account cannot fill the database by a loop of creates. */
export const DEFAULT_ACCOUNT_LIMITS: AccountLimits = Object.freeze({
  sources: 10_000,
  workflows: 10_000,
  webhooks: 1_000,
  subscriptions: 10_000,
  connected_accounts: 1_000,
});

/** `sources=10000,workflows=10000,…`: the form `--account-limits` takes and shows. */
export function formatAccountLimits(limits: AccountLimits): string {
  return LIMITED_RESOURCES.map((resource) => `${resource}=${limits[resource]}`).join(',');
}

/** What one of a resource is called in a message. */
const SINGULAR: Record<LimitedResource, string> = {
  sources: 'source',
  workflows: 'workflow',
  webhooks: 'webhook',
  subscriptions: 'subscription',
  connected_accounts: 'connected account',
};

export function limitReached(resource: LimitedResource, limit: number): ServiceError {
  const plural = resource.replace('_', ' ');
  return new ServiceError(
    'limit_reached',
    `this account holds ${limit.toLocaleString('en-US')} ${plural}, the most this server allows (--account-limits ${resource}=${limit}): delete a ${SINGULAR[resource]} before creating another`,
    [{ resource, limit }],
  );
}
