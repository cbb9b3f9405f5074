// How many of a source's queued invocations one batch takes: as many as the batch size allows, unless its runs are slow.
import { LRUCache } from 'lru-cache';
import { countedUpTo } from '../lib/cache-bounds.js';

/**
 * About how long one batch of a source may run. A batch's events commit together at its end, and an update, a
 * switch-off or a delete of the source waits for it: 200 runs of a second each held both for minutes.
 */
export const BATCH_TARGET_MS = 1000;
/** A source whose run time is not known yet (new, or since the start) takes at most this many in its first batch. */
export const FIRST_BATCH_RUNS = 16;

export class BatchPacing {
  /** Per source, the last batch's time per run, in milliseconds. */
  private readonly msPerRun = new LRUCache<string, number>(countedUpTo(10_000));

  constructor(private readonly batchSize: number) {}

  /** The most invocations the source's next batch takes. */
  limit(sourceId: string): number {
    const ms = this.msPerRun.get(sourceId);
    if (ms === undefined) return Math.min(this.batchSize, FIRST_BATCH_RUNS);
    return Math.max(1, Math.min(this.batchSize, Math.floor(BATCH_TARGET_MS / Math.max(ms, 0.001))));
  }

  /** A batch of `runs` invocations ran in `ms` milliseconds of wall time. */
  ran(sourceId: string, runs: number, ms: number): void {
    if (runs > 0) this.msPerRun.set(sourceId, ms / runs);
  }
}
