// Cuts the runs waiting for one step into batches bounded by count and by the size of the step data each carries to the worker.
import { LRUCache } from 'lru-cache';
import { countedUpTo } from '../lib/cache-bounds.js';
import type { HeldRun } from './workflow-batch.js';

/**
 * The step data (trigger events, finished steps' return values and exports, as JSON characters) one worker call
 * carries, at most. The call's message, the worker's copy of it and the server's inputs all hold it at once, so a
 * count alone let 100 runs of 8 MB steps make one message of 800 MB. A run larger than this alone runs alone.
 */
export const MAX_BATCH_DATA_CHARS = 16 * 1024 * 1024;

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
 */
export class StepBatches {
  private readonly added = new LRUCache<string, number>(countedUpTo(10_000));

  take(key: string, queue: HeldRun[], count: number): HeldRun[] {
    return takeBatch(queue, count, MAX_BATCH_DATA_CHARS, this.added.get(key) ?? 0);
  }

  /** A batch of queue `key` committed; `addedChars` is the most step data one of its runs got from the step. */
  ran(key: string, addedChars: number): void {
    this.added.set(key, addedChars);
  }
}
