// Counts runs and compute time against an account's current period: inside the transaction that commits them, or
// alone for calls that commit nothing of their own (hooks that fail).
import type { Kysely } from 'kysely';
import { LRUCache } from 'lru-cache';
import { countedUpTo } from '../lib/cache-bounds.js';
import type { Database } from '../store/schema.js';
import { addUsage } from '../store/usage.js';
import { findUserByIdOrUsername, type UserRow } from '../store/users.js';
import type { Clock } from '../lib/clock.js';
import { billingPeriod, dayPeriod } from '../model/periods.js';

/**
 * Counts invocations and compute time against the account's current period (the day, or the paid plan's month).
 * Compute time is the worker's CPU time as the runtime measured it, never what the runs reported, in the whole
 * milliseconds a ComputeCarry gives.
 */
export async function billUsage(trx: Kysely<Database>, account: UserRow, count: number, computeMs: number, nowMs: number): Promise<void> {
  const period = account.plan === 'paid' ? billingPeriod(account.created_at, nowMs).key : dayPeriod(nowMs);
  await addUsage(trx, account.id, period, count, computeMs);
}

/**
 * Turns each batch's measured CPU time into whole milliseconds to bill, carrying what is left below a millisecond
 * over to the account's next batch: a batch of one short run takes a fraction of a millisecond, which rounding each
 * batch on its own would mostly drop (a third of the time measured was billed).
 */
export class ComputeCarry {
  private readonly carried = new LRUCache<string, number>({ ...countedUpTo(100_000) });

  /** The whole milliseconds to bill now for `cpuMs` more of the account's compute. Called once per batch. */
  take(accountId: string, cpuMs: number): number {
    const total = cpuMs + (this.carried.get(accountId) ?? 0);
    const whole = Math.floor(total);
    this.carried.set(accountId, total - whole);
    return whole;
  }
}

/**
 * Bills the CPU time of worker calls that commit nothing of their own (hooks, options(), additionalProps()) at once, in a
 * statement of its own: a call that fails, or whose change is refused, used the worker too, and free-plan compute must
 * not be had by asking again and again. No invocation is counted for them.
 */
export class ComputeBilling {
  private readonly carry = new ComputeCarry();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  async bill(accountId: string, cpuMs: number): Promise<void> {
    const computeMs = this.carry.take(accountId, cpuMs);
    if (computeMs === 0) return;
    const account = await findUserByIdOrUsername(this.db, accountId);
    if (account) await billUsage(this.db, account, 0, computeMs, this.clock.now());
  }
}
