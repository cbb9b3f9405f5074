// How a node's outbound slots are shared between accounts: no account holds them all, the last few free slots are
// kept for accounts holding none, free slots go first to the accounts holding fewest, and an attempt that has
// waited long for its receiver stops taking a slot, so that slow receivers of some accounts cannot keep another
// account's deliveries waiting.
import type { Clock } from '../lib/clock.js';

/**
 * The most slots one account may hold: all but an eighth (at least one), so that another account's work starts at
 * once even while one account's receivers hang until their time-out. A queue of one slot is the exception.
 */
export function accountSlotCap(concurrency: number): number {
  return concurrency <= 1 ? concurrency : concurrency - Math.max(1, Math.floor(concurrency / 8));
}

/**
 * Stalled attempts (see `stall`) a node keeps open at most, per slot: each is an idle socket waiting for its
 * receiver, so many cost little, but not without bound.
 */
const STALLED_PER_SLOT = 32;
/** An attempt waiting this long for its receiver is stalled (see `stall`). */
const STALLED_AFTER_MS = 2_000;

export class AccountSlots {
  readonly cap: number;
  /** The last free slots, which only an account holding none may take: the slots beyond the cap. */
  private readonly reserve: number;
  /** Per account, its attempts in flight, stalled ones included: what its cap limits. */
  private readonly held = new Map<string, number>();
  /** Slots taken: attempts in flight that are not stalled. What `concurrency` limits. */
  private total = 0;
  private stalled = 0;
  private readonly stalledLimit: number;

  /** Slots taken by all accounts together (stalled attempts take none). */
  get taken(): number {
    return this.total;
  }

  constructor(private readonly concurrency: number) {
    this.cap = accountSlotCap(concurrency);
    this.reserve = concurrency - this.cap;
    this.stalledLimit = concurrency * STALLED_PER_SLOT;
  }

  /** Attempts of the account in flight, stalled ones included. */
  heldBy(userId: string): number {
    return this.held.get(userId) ?? 0;
  }

  /**
   * Slots `userId` may still take, `waiting` more of its rows being held in memory already: up to its cap, and of
   * the reserve only one, when it holds none. Several accounts with hanging receivers thus leave each newcomer one.
   */
  roomOf(userId: string, waiting = 0, alsoTaken = 0): number {
    const holds = this.heldBy(userId) + waiting;
    const free = this.concurrency - this.total - alsoTaken;
    const open = Math.min(this.cap - holds, free - this.reserve);
    return Math.max(0, holds === 0 && free > 0 ? Math.max(open, 1) : open);
  }

  take(userId: string, count = 1): void {
    this.held.set(userId, this.heldBy(userId) + count);
    this.total += count;
  }

  /** Ends `count` attempts of the account; `stalled`: they were stalled, and held no slot any more. */
  give(userId: string, count = 1, stalled = false): void {
    const before = this.heldBy(userId);
    if (before <= count) this.held.delete(userId);
    else this.held.set(userId, before - count);
    if (stalled) this.stalled -= Math.min(before, count);
    else this.total -= Math.min(before, count);
  }

  /**
   * Takes a slot for one attempt of the account and returns what gives it back (once, whatever calls it). Should
   * the attempt wait STALLED_AFTER_MS for its receiver, it stalls (see `stall`). `opened` hears each time slots
   * open to others: the stall, and the end.
   */
  takeForAttempt(userId: string, clock: Clock, opened: () => void): () => void {
    this.take(userId);
    let holding = true;
    let stalled = false;
    const timer = clock.after(STALLED_AFTER_MS, () => {
      if (!holding || !this.stall()) return;
      stalled = true;
      opened();
    });
    return () => {
      if (!holding) return;
      holding = false;
      timer.cancel();
      this.give(userId, 1, stalled);
      opened();
    };
  }

  /**
   * An attempt of the account has waited long for its receiver (one that hangs, or drops packets until the
   * time-out): it gives its slot back but still counts against the account's cap, so that such receivers of many
   * accounts cannot take every slot while a healthy account waits. False when the node holds all the stalled
   * attempts it may: the attempt keeps its slot.
   */
  private stall(): boolean {
    if (this.stalled >= this.stalledLimit) return false;
    this.total--;
    this.stalled++;
    return true;
  }

  /**
   * Shares `count` free slots among accounts wanting them (`wanting`: the most rows each could start), one at a time
   * to whichever holds fewest, counting `holding` (its rows already in memory or picked) and `alreadyTaken` slots
   * given out before; returns how many rows each may start.
   */
  share(count: number, wanting: ReadonlyMap<string, number>, holding: (userId: string) => number = () => 0, alreadyTaken = 0): Map<string, number> {
    const candidates = [...wanting].map(([userId, most]) => ({ userId, most, extra: holding(userId), given: 0 }));
    const shares = new Map<string, number>();
    let given = alreadyTaken;
    for (let slot = 0; slot < count; slot++) {
      let fewest: (typeof candidates)[number] | undefined;
      for (const candidate of candidates) {
        if (candidate.given >= candidate.most || this.roomOf(candidate.userId, candidate.extra + candidate.given, given) <= 0) continue;
        const holds = this.heldBy(candidate.userId) + candidate.extra + candidate.given;
        if (!fewest || holds < this.heldBy(fewest.userId) + fewest.extra + fewest.given) fewest = candidate;
      }
      if (!fewest) break;
      fewest.given++;
      given++;
      shares.set(fewest.userId, fewest.given);
    }
    return shares;
  }
}
