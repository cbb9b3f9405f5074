// Results the database refuses (not fails to take): their runs fail once instead of being retried for ever.
import { codeOf } from '../model/outages.js';
import type { InvocationOutcome } from '../runtime/types.js';

/**
 * What the database says of data it will never take, whatever its state: PostgreSQL's text holding a NUL or
 * another character its encoding lacks (22021, 22P05), a value too long for its column (22001), a row past a
 * limit (54000); SQLite's string or blob too big. Only these: another error of a class, say a counter's overflow
 * from Tributary's own SQL, must show as the bug it is, not quietly fail runs.
 */
const REFUSED_DATA_CODES = new Set(['22021', '22P05', '22001', '54000', 'SQLITE_TOOBIG']);

/** True when the database refused the data written, not failed: writing the same again would be refused again. */
export function isRefusedData(error: unknown): boolean {
  const code = codeOf(error);
  return code !== undefined && REFUSED_DATA_CODES.has(code);
}

/** What was written, with the outcomes as committed (all failed when the database refused the first ones). */
export interface Written<T> {
  result: T;
  outcomes: InvocationOutcome[];
}

/**
 * Writes `outcomes` with their runs' db and data store changes. When the database refuses that data itself (a NUL in
 * text on PostgreSQL, say), the same write would be refused at every retry and hold the queue for ever: it is written
 * again with every run failed by `ResultsRefusedError` and without their changes (`keepChanges` false).
 */
export async function writeOrFailRefused<T>(
  outcomes: InvocationOutcome[],
  write: (outcomes: InvocationOutcome[], keepChanges: boolean) => Promise<T>,
  onRefused: (error: Error) => void,
): Promise<Written<T>> {
  try {
    return { result: await write(outcomes, true), outcomes };
  } catch (error) {
    if (!isRefusedData(error)) throw error;
    onRefused(error as Error);
    const failed = outcomes.map((outcome) => refusedByDatabase(outcome, error as Error));
    return { result: await write(failed, false), outcomes: failed };
  }
}

/** A run whose results the database refused: failed with the database's reason, its events, logs and response dropped. */
function refusedByDatabase(outcome: InvocationOutcome, error: Error): InvocationOutcome {
  const name = 'ResultsRefusedError';
  const message = `the database refused to store what the run produced (${error.message}); nothing of it was kept`;
  return { emits: [], logs: [], error: { name, message, stack: `${name}: ${message}` }, durationMs: outcome.durationMs };
}
