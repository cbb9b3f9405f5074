// Which due rows of an outbound queue a node claims next: shared between accounts by AccountSlots, and found
// without reading one account's whole backlog to reach another account's rows.
import type { Store } from '../store/database.js';
import { type AccountQueueTable, accountsWithWork, type DueRow, dueRowsByAccount, earliestDue, nextFutureDueMs } from '../store/account-queues.js';
import type { AccountSlots } from './account-slots.js';

/** The first look reads this many due rows per free slot (and 16 at least): a few busy accounts rarely hide others. */
const ROWS_PER_SLOT = 4;
const MIN_FIRST_LOOK = 16;
/** Accounts one look-up past the first look reads (about 4 ms on SQLite); the next goes on from there. */
const ACCOUNTS_PER_LOOK = 1000;
/**
 * The time between two look-ups: a claim runs for each freed slot, and a look-up on each would cost every delivery
 * several queries; rows the first look hid wait this long at most (and a pass over many accounts, a few of these).
 */
const LOOK_UP_EVERY_MS = 250;

export class FairClaims {
  /** The last account the look past the earliest rows reached: the next one starts after it. */
  private scannedUpTo: string | undefined;
  /** When the next look-up of accounts may be made. */
  private nextLookUpMs = 0;
  /** The last claim may have left due rows unseen (the first look was full, and accounts were not all looked up). */
  private unseen = false;
  /** When the last claim looked: rows due by then that it left are held back by their accounts' shares. */
  private lastLookMs: number | undefined;
  /**
   * The last claim left due rows because their accounts had no room then: a slot freed since may make room, and
   * should claim again. (Slots free while a claim runs, so a share judged at its start may be small by its end.)
   */
  heldBack = false;

  constructor(
    private readonly store: Store,
    private readonly table: AccountQueueTable,
    private readonly slots: AccountSlots,
    /** Rows of an account held in memory, waiting for its slots: they count as held. */
    private readonly waiting: (userId: string) => number = () => 0,
  ) {}

  /**
   * The ids of at most `count` due rows to claim now, shared between accounts. The earliest due rows come first;
   * when those are too few for the free slots and more are due, accounts are looked up one by one (a bounded number
   * at a time, every LOOK_UP_EVERY_MS at most) for rows the earliest ones hid: one account's long backlog never keeps
   * another's rows waiting for long.
   */
  async dueIds(count: number, nowMs: number): Promise<string[]> {
    const { db } = this.store;
    const windowSize = Math.max(MIN_FIRST_LOOK, count * ROWS_PER_SLOT);
    const earliest = byAccount(await earliestDue(db, this.table, nowMs, windowSize));
    const picked = new Map<string, string[]>();
    const wanted = new Map([...earliest].map(([userId, ids]) => [userId, ids.length]));
    for (const [userId, share] of this.slots.share(count, wanted, this.waiting)) picked.set(userId, earliest.get(userId)!.slice(0, share));
    const pickedCount = countOf(picked);
    this.lastLookMs = nowMs;
    this.heldBack = pickedCount < countOf(earliest);
    this.unseen = pickedCount < count && countOf(earliest) === windowSize;
    if (this.unseen && nowMs >= this.nextLookUpMs) {
      this.nextLookUpMs = nowMs + LOOK_UP_EVERY_MS;
      const { accounts, complete } = await accountsWithWork(db, this.table, nowMs, this.scannedUpTo, ACCOUNTS_PER_LOOK);
      // A pass over the accounts may take several look-ups; once it has reached the last, nothing is unseen.
      this.scannedUpTo = complete ? undefined : accounts.at(-1)?.userId;
      this.unseen = !complete;
      const due = accounts.filter((account) => account.nextDueMs !== undefined && account.nextDueMs <= nowMs);
      const holding = (userId: string) => this.waiting(userId) + (picked.get(userId)?.length ?? 0);
      const shares = this.slots.share(count - pickedCount, new Map(due.map((account) => [account.userId, count])), holding, pickedCount);
      if (due.some((account) => !shares.has(account.userId))) this.heldBack = true;
      // An account's earliest rows may be the ones picked already (not leased yet): ask for those too, and skip them.
      const asked = new Map([...shares].map(([userId, share]) => [userId, share + (picked.get(userId)?.length ?? 0)]));
      const found = byAccount(await dueRowsByAccount(db, this.table, asked, nowMs));
      for (const [userId, share] of shares) {
        const already = new Set(picked.get(userId));
        const more = (found.get(userId) ?? []).filter((id) => !already.has(id)).slice(0, share);
        picked.set(userId, [...already, ...more]);
      }
    }
    return [...picked.values()].flat();
  }

  /**
   * When to claim again unasked: when the next row falls due after the last claim looked (a row that fell due since
   * is due now, and claimed at once), or sooner when rows may be unseen and the next look-up is allowed.
   */
  async nextDueMs(nowMs: number): Promise<number | undefined> {
    const next = await nextFutureDueMs(this.store.db, this.table, this.lastLookMs ?? nowMs);
    if (!this.unseen) return next;
    return next === undefined ? this.nextLookUpMs : Math.min(next, this.nextLookUpMs);
  }
}

function byAccount(rows: readonly DueRow[]): Map<string, string[]> {
  const ids = new Map<string, string[]>();
  for (const row of rows) {
    const list = ids.get(row.user_id);
    if (list) list.push(row.id);
    else ids.set(row.user_id, [row.id]);
  }
  return ids;
}

function countOf(idsByAccount: ReadonlyMap<string, readonly string[]>): number {
  let count = 0;
  for (const ids of idsByAccount.values()) count += ids.length;
  return count;
}
