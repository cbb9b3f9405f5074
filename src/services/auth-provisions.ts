// The deploy-time check of app props that name connected accounts: the deploying account's, of the prop's app.
import type { Transaction } from 'kysely';
import type { DialectName, Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import * as accounts from '../store/accounts.js';
import { isId } from '../model/ids.js';
import { notFound, ServiceError } from '../model/errors.js';
import { type PropProblem, propsInvalid } from '../model/props.js';
import type { PropDescriptor } from '../runtime/types.js';
import { appLinks } from '../engine/invocation-base.js';
import { quote } from '../runtime/worker/quote.js';

/** The 404 of a deploy whose app prop names an account not found; the prop is named too, as the 422s name it, so that a form can mark the field. */
function accountNotFound(accountId: string, prop: string, label: string): ServiceError {
  const missing = notFound(`connected account ${quote(accountId)}`);
  return new ServiceError(missing.code, missing.message, [{ prop, message: `${label}names connected account ${quote(accountId)}, which is not found` }]);
}

/**
 * Checks at deploy that each app prop naming a connected account names one of the deploying account's (404 naming
 * the id otherwise, as for any other account's resource, with the prop in `details`) and one of the prop's app (422 `props_invalid`).
 * `label` prefixes the 422's message (`steps[0] ("x"): `).
 */
export async function checkAuthProvisions(store: Store, ownerId: string, props: PropDescriptor[], stored: Record<string, unknown>, label = ''): Promise<void> {
  const links = appLinks(props, stored);
  if (!links.length) return;
  const wellFormed = links.filter((link) => isId(link.accountId, 'apn')).map((link) => link.accountId);
  const rows = new Map((await accounts.findConnectedAccounts(store.db, ownerId, wellFormed)).map((row) => [row.id, row]));
  const problems: PropProblem[] = [];
  for (const link of links) {
    const row = rows.get(link.accountId);
    if (!row) throw accountNotFound(link.accountId, link.prop, label);
    if (link.app !== undefined && row.app !== link.app) {
      problems.push({
        prop: link.prop,
        message: `names connected account ${row.id} of app ${quote(row.app)}; the prop needs an account of app ${quote(link.app)}`,
      });
    }
  }
  if (problems.length) throw propsInvalid(problems, label);
}

/**
 * Inside a deploy's transaction: the connected accounts that these configured props name (a source's, or each step's)
 * still exist, and stay until it commits. A delete of one of them then either waits and finds the deploy among the
 * account's users (409), or went first and the deploy is a 404 naming it, as at the check before.
 */
export async function holdAuthProvisions(
  trx: Transaction<Database>,
  dialect: DialectName,
  ownerId: string,
  configured: Array<Record<string, unknown>>,
  /** Per entry of `configured`, what the 404's prop message starts with (`steps[0] ("x"): `). */
  labels: string[] = [],
): Promise<void> {
  const missing = await accounts.holdConnectedAccounts(trx, dialect, ownerId, configured.flatMap(accounts.accountIdsNamed));
  if (!missing.length) return;
  const accountId = missing[0]!;
  for (const [i, props] of configured.entries()) {
    const prop = Object.keys(props).find((name) => accounts.accountIdsNamed({ [name]: props[name] }).includes(accountId));
    if (prop !== undefined) throw accountNotFound(accountId, prop, labels[i] ?? '');
  }
  throw notFound(`connected account ${quote(accountId)}`);
}
