// Cuts the runs waiting for one step into batches bounded by count and by the size of the step data each carries to the worker.
import { LRUCache } from 'lru-cache';
import { countedUpTo } from '../lib/cache-bounds.js';
import { MAX_STEP_BYTES_PER_CALL } from '../runtime/worker/limits.js';
import { BatchPacing } from './batch-pacing.js';
import type { HeldRun } from './workflow-batch.js';

/**
 * The step data (trigger events, finished steps' return values and exports, as JSON characters) one worker call
 * carries, at most. The call's message, the worker's copy of it and the server's inputs all hold it at once, so a
 * count alone let 100 runs of 8 MB steps make one message of 800 MB. A run larger than this alone runs alone.
 */
export const MAX_BATCH_DATA_CHARS = 16 * 1024 * 1024;

/**
 * Runs of a step's first batch, before what the step returns is known: each may return up to
 * MAX_STEP_BYTES_PER_CALL, held by the server until the commit, so a first batch of 100 could hold 800 MB.
 */
const FIRST_STEP_BATCH_RUNS = Math.max(1, Math.floor(MAX_BATCH_DATA_CHARS / MAX_STEP_BYTES_PER_CALL));

/**
 * Takes the next batch off the head of `queue`: at most `count` runs and `maxChars` of their data, at least one run.
 * `addedChars` is what the step is expected to add to each run (the server holds every run's result until the commit).
 */
export function takeBatch(queue: HeldRun[], count: number, maxChars = MAX_BATCH_DATA_CHARS, addedChars = 0): HeldRun[] {
  let taken = 0;
  let chars = 0;
  while (taken < queue.length && taken < count) {
    const next = queue[taken]!.dataChars + addedChars;
    if (taken > 0 && chars + next > maxChars) break;
    chars += next;
    taken++;
  }
  return queue.splice(0, taken);
}

/** Records a finished step's data on its run (its later steps' `steps.<name>`); returns its size as JSON characters. */
export function holdStepData(held: HeldRun, name: string, data: Record<string, unknown>, chars = JSON.stringify(data).length): number {
  held.data[name] = data;
  held.dataChars += chars;
  return chars;
}

/**
 * Cuts the batches of every (workflow, step) queue, counting for each run the most step data one run got from that
 * step's last batch: a step that exports megabytes fills the server with every run's result before they commit.
 * A step not seen yet (new, or since the start) runs a small first batch to learn it.
 */
export class StepBatches {
  private readonly added = new LRUCache<string, number>(countedUpTo(10_000));

  /** Per (workflow, step): fewer runs per batch when the step is slow, as a source's batches (see BatchPacing). */
  private readonly pacing = new BatchPacing(Number.MAX_SAFE_INTEGER);

  take(key: string, queue: HeldRun[], count: number): HeldRun[] {
    const added = this.added.get(key);
    const paced = Math.min(count, this.pacing.limit(key));
    if (added === undefined) return takeBatch(queue, Math.min(paced, FIRST_STEP_BATCH_RUNS));
    return takeBatch(queue, paced, MAX_BATCH_DATA_CHARS, added);
  }

  /**
   * A batch of queue `key` committed: `addedChars` is the most step data one of its runs got from the step, `runMs`
   * the time its `runs` runs took in the worker together.
   */
  ran(key: string, addedChars: number, runs: number, runMs: number): void {
    this.added.set(key, addedChars);
    this.pacing.ran(key, runs, runMs);
  }
}
