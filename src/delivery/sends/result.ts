// What one attempt of a send came to, and what that means for the send: done, failed for good, or due again later.
import type { ClaimedSend, SendAttempt } from '../../store/sends.js';

/** The outcome of one attempt, as a performer reports it. */
export type SendResult =
  | { ok: true; statusCode?: number | undefined }
  | {
      ok: false;
      /** What went wrong, in the destination's terms; kept as the send's `last_error`. */
      error: string;
      /** Trying again cannot help (a refused address, a bad password, no such bucket): the send fails at once. */
      permanent: boolean;
      statusCode?: number | undefined;
      /** The destination's Retry-After, which replaces the schedule's delay. */
      retryAfterMs?: number | undefined;
    };

/** Carries out sends of one kind. */
export interface Performer {
  /** One attempt; never rejects. `signal` aborts it when the server stops. */
  perform(send: ClaimedSend, signal: AbortSignal): Promise<SendResult>;
  /** Closes connections; attempts in flight have finished. */
  close(): Promise<void>;
}

/** A permanent failure: the send is not tried again. */
export function refused(error: string, statusCode?: number): SendResult {
  return { ok: false, error, permanent: true, statusCode };
}

/**
 * The send's state after an attempt: succeeded, failed (a permanent failure, or the schedule used up), or pending
 * again after Retry-After or the schedule's delay for this attempt (`scheduleSeconds[n - 1]` after the n-th).
 */
export function afterAttempt(send: ClaimedSend, result: SendResult, scheduleSeconds: readonly number[], nowMs: number): SendAttempt {
  const attempt = send.attempt + 1;
  const statusCode = result.statusCode ?? null;
  if (result.ok) return { state: 'succeeded', attempt, nextAttemptMs: null, statusCode, error: null, finishedMs: nowMs };
  const delaySeconds = result.permanent ? undefined : scheduleSeconds[attempt - 1];
  if (delaySeconds === undefined) return { state: 'failed', attempt, nextAttemptMs: null, statusCode, error: result.error, finishedMs: nowMs };
  const delayMs = result.retryAfterMs ?? delaySeconds * 1000;
  return { state: 'pending', attempt, nextAttemptMs: nowMs + delayMs, statusCode, error: result.error, finishedMs: null };
}
