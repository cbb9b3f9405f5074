// Refuses a create that would take an account past `--account-limits`, inside the transaction that inserts.
import type { Transaction } from 'kysely';
import { type AccountLimits, type LimitedResource, limitReached } from '../model/account-limits.js';
import { countHeld, countHeldLocked } from '../store/account-limits.js';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';

export class AccountLimiter {
  constructor(
    private readonly store: Store,
    private readonly limits: AccountLimits,
  ) {}

  /**
   * Throws `limit_reached` when `adding` more of `resource` would take the account past its limit; call it in the
   * inserting transaction. Creates that add several rows at once (a source materialising auto-subscriptions) pass `adding`.
   */
  async assertRoom(trx: Transaction<Database>, userId: string, resource: LimitedResource, adding = 1): Promise<void> {
    const limit = this.limits[resource];
    if (limit > 0 && adding > 0 && (await countHeldLocked(trx, userId, resource)) + adding > limit) throw limitReached(resource, limit);
  }

  /**
   * The same check before slow work (installing a workflow's packages, a source's deploy hooks) so that a full
   * account hears it at once; the check in the transaction still decides.
   */
  async assertRoomNow(userId: string, resource: LimitedResource): Promise<void> {
    const limit = this.limits[resource];
    if (limit > 0 && (await countHeld(this.store.db, userId, resource)) >= limit) throw limitReached(resource, limit);
  }
}
