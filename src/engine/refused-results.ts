// Results the database refuses (not fails to take), or keeps failing to take: their runs fail instead of being
// retried for ever.
import { codeOf } from '../model/outages.js';
import { DataStoreFullError } from '../store/data-stores.js';
import type { InvocationOutcome } from '../runtime/types.js';
import { MAX_COMMIT_ATTEMPTS } from './commit-attempts.js';

/**
 * What the database says of data it will never take, whatever its state: PostgreSQL's text holding a NUL or
 * another character its encoding lacks (22021, 22P05), a value too long for its column (22001), a row past a
 * limit (54000); SQLite's string or blob too big. Only these: another error of a class, say a counter's overflow
 * from Tributary's own SQL, must show as the bug it is, not quietly fail runs.
 */
const REFUSED_DATA_CODES = new Set(['22021', '22P05', '22001', '54000', 'SQLITE_TOOBIG']);

/**
 * True when the database refused the data written, not failed: writing the same again would be refused again. So is
 * a data store that these writes would take past its limit (DataStoreFullError).
 */
export function isRefusedData(error: unknown): boolean {
  if (error instanceof DataStoreFullError) return true;
  const code = codeOf(error);
  return code !== undefined && REFUSED_DATA_CODES.has(code);
}

/** What was written, with the outcomes as committed (all failed when the database refused the first ones). */
export interface Written<T> {
  result: T;
  outcomes: InvocationOutcome[];
}

/** Why a batch's runs were failed instead of written: the database refused their data, or failed every attempt. */
export type FailedForGood = 'refused' | 'attempts';

/**
 * Writes `outcomes` with their runs' db and data store changes. When the database refuses that data itself (a NUL in
 * text on PostgreSQL, say), the same write would be refused at every retry and hold the queue for ever: it is written
 * again with every run failed by `ResultsRefusedError` and without their changes (`keepChanges` false). So it is when
 * `lastAttempt(error)` says this failure was the last the runs get (`ResultsNotStoredError`); else the error is thrown
 * and the runs are retried.
 */
export async function writeOrFailRefused<T>(
  outcomes: InvocationOutcome[],
  write: (outcomes: InvocationOutcome[], keepChanges: boolean) => Promise<T>,
  onFailed: (error: Error, why: FailedForGood) => void,
  lastAttempt: (error: unknown) => boolean = () => false,
): Promise<Written<T>> {
  try {
    return { result: await write(outcomes, true), outcomes };
  } catch (error) {
    const why: FailedForGood | undefined = isRefusedData(error) ? 'refused' : lastAttempt(error) ? 'attempts' : undefined;
    if (!why) throw error;
    onFailed(error as Error, why);
    const failed = outcomes.map((outcome) => failedForGood(outcome, error as Error, why));
    return { result: await write(failed, false), outcomes: failed };
  }
}

/** The log line of a batch failed for good: `what` names the results ("the batch's results"). */
export function failedForGoodLog(what: string, why: FailedForGood): string {
  return why === 'refused' ? `the database refused ${what}; its runs fail` : `the database failed ${MAX_COMMIT_ATTEMPTS} times to store ${what}; its runs fail`;
}

/** A run whose results could not be stored: failed with the database's reason, its events, logs and response dropped. */
function failedForGood(outcome: InvocationOutcome, error: Error, why: FailedForGood): InvocationOutcome {
  const name = why === 'refused' ? 'ResultsRefusedError' : 'ResultsNotStoredError';
  const what = why === 'refused' ? 'the database refused to store' : `the database failed ${MAX_COMMIT_ATTEMPTS} times to store`;
  const message = `${what} what the run produced (${error.message}); nothing of it was kept`;
  return { emits: [], logs: [], error: { name, message, stack: `${name}: ${message}` }, durationMs: outcome.durationMs };
}
