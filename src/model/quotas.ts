// Quota verdicts: whether an account may start another invocation, and when its counters reset.

/** Whether an account may start another invocation now; the ingress answers 429 and timers record `$errors` when not. */
export interface QuotaVerdict {
  allowed: boolean;
  /** Why not, for the 429 body or the `$errors` event. */
  reason?: string;
  /** Seconds until the counters reset (00:00 UTC). */
  retryAfterSeconds?: number;
}

export function secondsUntilUtcMidnight(nowMs: number): number {
  const next = new Date(nowMs);
  next.setUTCHours(24, 0, 0, 0);
  return Math.max(1, Math.ceil((next.getTime() - nowMs) / 1000));
}
