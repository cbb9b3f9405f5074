// How a node's outbound slots are shared between accounts: no account holds them all, and free slots go first to the
// accounts holding fewest, so that one account's slow receivers cannot keep another account's deliveries waiting.
import type { AccountWork } from '../store/fair-claim.js';

/**
 * The most slots one account may hold: all but an eighth (at least one), so that another account's work starts at
 * once even while one account's receivers hang until their time-out. A queue of one slot is the exception.
 */
export function accountSlotCap(concurrency: number): number {
  return concurrency <= 1 ? concurrency : concurrency - Math.max(1, Math.floor(concurrency / 8));
}

export class AccountSlots {
  readonly cap: number;
  private readonly held = new Map<string, number>();

  constructor(concurrency: number) {
    this.cap = accountSlotCap(concurrency);
  }

  heldBy(userId: string): number {
    return this.held.get(userId) ?? 0;
  }

  /** Slots `userId` may still take, `waiting` more of its rows being held in memory already. */
  roomOf(userId: string, waiting = 0): number {
    return Math.max(0, this.cap - this.heldBy(userId) - waiting);
  }

  take(userId: string, count = 1): void {
    this.held.set(userId, this.heldBy(userId) + count);
  }

  /** Gives slots back; true when the account was at its cap, so that work it had waiting may start now. */
  give(userId: string, count = 1): boolean {
    const before = this.heldBy(userId);
    if (before <= count) this.held.delete(userId);
    else this.held.set(userId, before - count);
    return before >= this.cap;
  }

  /**
   * Shares `count` free slots among the accounts with rows due at `nowMs`, one at a time to whichever holds fewest
   * (counting `waiting`, its rows already in memory); returns how many rows to claim for each.
   */
  share(count: number, accounts: readonly AccountWork[], nowMs: number, waiting: (userId: string) => number = () => 0): Map<string, number> {
    const candidates = accounts
      .filter((account) => account.nextDueMs !== undefined && account.nextDueMs <= nowMs)
      .map((account) => ({ userId: account.userId, holds: this.heldBy(account.userId) + waiting(account.userId), given: 0 }))
      .filter((candidate) => candidate.holds < this.cap);
    const shares = new Map<string, number>();
    for (let slot = 0; slot < count; slot++) {
      let fewest: (typeof candidates)[number] | undefined;
      for (const candidate of candidates) {
        if (candidate.holds + candidate.given < this.cap && (!fewest || candidate.holds + candidate.given < fewest.holds + fewest.given)) fewest = candidate;
      }
      if (!fewest) break;
      fewest.given++;
      shares.set(fewest.userId, fewest.given);
    }
    return shares;
  }

  /** When the earliest row of an account with room falls due: an account at its cap waits for a slot, not a time. */
  nextDueMs(accounts: readonly AccountWork[], waiting: (userId: string) => number = () => 0): number | undefined {
    let earliest: number | undefined;
    for (const account of accounts) {
      if (account.nextDueMs === undefined || this.roomOf(account.userId, waiting(account.userId)) <= 0) continue;
      if (earliest === undefined || account.nextDueMs < earliest) earliest = account.nextDueMs;
    }
    return earliest;
  }
}
