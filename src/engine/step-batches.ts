// Cuts the runs waiting for one step into batches bounded by count and by the size of the step data each carries to the worker.
import type { HeldRun } from './workflow-batch.js';

/**
 * The step data (trigger events, finished steps' return values and exports, as JSON characters) one worker call
 * carries, at most. The call's message, the worker's copy of it and the server's inputs all hold it at once, so a
 * count alone let 100 runs of 8 MB steps make one message of 800 MB. A run larger than this alone runs alone.
 */
export const MAX_BATCH_DATA_CHARS = 16 * 1024 * 1024;

/** Takes the next batch off the head of `queue`: at most `count` runs and `maxChars` of their data, at least one run. */
export function takeBatch(queue: HeldRun[], count: number, maxChars = MAX_BATCH_DATA_CHARS): HeldRun[] {
  let taken = 0;
  let chars = 0;
  while (taken < queue.length && taken < count) {
    const next = queue[taken]!.dataChars;
    if (taken > 0 && chars + next > maxChars) break;
    chars += next;
    taken++;
  }
  return queue.splice(0, taken);
}

/** Records a finished step's data on its run (its later steps' `steps.<name>`), with its size as JSON characters. */
export function holdStepData(held: HeldRun, name: string, data: Record<string, unknown>, chars = JSON.stringify(data).length): void {
  held.data[name] = data;
  held.dataChars += chars;
}
