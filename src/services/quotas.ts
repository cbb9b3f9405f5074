// Free-plan daily quotas: whether an account may start another invocation right now.
import { LRUCache } from 'lru-cache';
import { countedUpTo } from '../lib/cache-bounds.js';
import type { Clock } from '../lib/clock.js';
import type { Kysely } from 'kysely';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import { findUserByIdOrUsername } from '../store/users.js';
import { readUsage } from '../store/usage.js';
import { dayPeriod } from '../model/periods.js';
import { secondsUntilUtcMidnight, type QuotaVerdict } from '../model/quotas.js';
import { quotaExceeded } from '../model/errors.js';
import type { PlanQuotas } from './users.js';

/** Usage is read at most once per this many milliseconds per account; enforcement may lag by that much. */
const CACHE_MS = 500;

export class QuotaService {
  private readonly cache = new LRUCache<string, { at: number; verdict: QuotaVerdict }>({ ...countedUpTo(100_000) });

  constructor(
    private readonly store: Store,
    private readonly quotas: PlanQuotas,
    private readonly clock: Clock,
  ) {}

  /** The verdict read within the last CACHE_MS of the same day, without waiting; undefined when there is none. */
  known(userId: string, nowMs = this.clock.now()): QuotaVerdict | undefined {
    const cached = this.cache.get(userId);
    return cached && nowMs - cached.at < CACHE_MS && dayPeriod(cached.at) === dayPeriod(nowMs) ? cached.verdict : undefined;
  }

  /**
   * Throws the 429 when the account may not start another invocation now. Without waiting when the verdict is
   * cached (nearly every ingress request), so that the request skips two trips through the microtask queue.
   */
  admit(userId: string): void | Promise<void> {
    const known = this.known(userId);
    if (known) return admitOrThrow(known);
    return this.check(userId).then(admitOrThrow);
  }

  /** `db`: a transaction the caller holds, to read in (see QuotaCheck). */
  async check(userId: string, nowMs = this.clock.now(), db: Kysely<Database> = this.store.db): Promise<QuotaVerdict> {
    const known = this.known(userId, nowMs);
    if (known) return known;
    const verdict = await this.evaluate(userId, nowMs, db);
    this.cache.set(userId, { at: nowMs, verdict });
    return verdict;
  }

  private async evaluate(userId: string, nowMs: number, db: Kysely<Database>): Promise<QuotaVerdict> {
    const user = await findUserByIdOrUsername(db, userId);
    if (!user || user.plan !== 'free') return { allowed: true };
    const usage = await readUsage(db, userId, dayPeriod(nowMs));
    const retryAfterSeconds = secondsUntilUtcMidnight(nowMs);
    if (usage.invocations >= this.quotas.freeDailyInvocations) {
      return { allowed: false, retryAfterSeconds, reason: `daily invocation quota of ${this.quotas.freeDailyInvocations} reached; it resets at 00:00 UTC` };
    }
    if (usage.computeMs >= this.quotas.freeDailyComputeMs) {
      return { allowed: false, retryAfterSeconds, reason: `daily compute time quota of ${this.quotas.freeDailyComputeMs} ms reached; it resets at 00:00 UTC` };
    }
    return { allowed: true };
  }
}

function admitOrThrow(verdict: QuotaVerdict): void {
  if (!verdict.allowed) throw quotaExceeded(verdict);
}
