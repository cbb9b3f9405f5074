// The deploy-time check that a `data_store` prop names its store by name, not by the `ds_` id the API lists it by.
import type { Store } from '../store/database.js';
import { findDataStore, namedByIdMessage } from '../store/data-stores.js';
import { isId } from '../model/ids.js';
import { dataStoreName, type PropProblem, propsInvalid } from '../model/props.js';
import type { PropDescriptor } from '../runtime/types.js';

/**
 * A prop's value is the name of the store its runs use, made on the first write: given the id of one of the
 * account's stores (as GET /v1/data_stores shows it), a run would make and write a new store named after that id,
 * which the API's `{name or id}` routes then resolve to the other store. So the id of an own store is a 422 naming
 * the store's name; the id of no store of the account (or of another account's) stays a name, and tells nothing.
 * `label` prefixes the message (`steps[0] ("x"): `).
 */
export async function checkDataStoreNames(store: Store, ownerId: string, props: PropDescriptor[], stored: Record<string, unknown>, label = ''): Promise<void> {
  const problems: PropProblem[] = [];
  for (const prop of props) {
    if (prop.type !== 'data_store' || !Object.hasOwn(stored, prop.name)) continue;
    const name = dataStoreName(stored[prop.name]);
    if (name === undefined || !isId(name, 'ds')) continue;
    const row = await findDataStore(store.db, ownerId, name, true);
    if (!row) continue;
    problems.push({
      prop: prop.name,
      message: namedByIdMessage(name, row.name),
    });
  }
  if (problems.length) throw propsInvalid(problems, label);
}
