// Counts the failed commits of each run, so that results the database keeps failing to store (for a reason that is not
// an outage) fail their runs after a few attempts instead of running the code again every second for ever.
import { LRUCache } from 'lru-cache';
import { CommitOutcomeUnknownError, outageOf } from '../model/outages.js';
import { LeaseLostError, SourceChangedError, SourceDeletedError } from '../store/invocations.js';
import { WorkflowSwitchedOffError } from '../store/workflows.js';

/** Commits a run's results get; the last failure fails the runs of its batch. */
export const MAX_COMMIT_ATTEMPTS = 5;

export class CommitAttempts {
  private readonly failures = new LRUCache<string, number>({ max: 10_000 });

  /**
   * Counts a failed commit of the runs `ids`; true when it was the last attempt any of them gets. An outage, a lost
   * lease, a source (or workflow) switched off, changed or deleted, or a commit of unknown outcome does not count: waiting for the database, the other
   * node, the switch-on or the run again is the cure.
   */
  failedForGood(ids: string[], error: unknown): boolean {
    if (
      outageOf(error) ||
      error instanceof LeaseLostError ||
      error instanceof SourceChangedError ||
      error instanceof SourceDeletedError ||
      error instanceof WorkflowSwitchedOffError ||
      error instanceof CommitOutcomeUnknownError
    ) {
      return false;
    }
    let most = 0;
    for (const id of ids) {
      const failures = (this.failures.get(id) ?? 0) + 1;
      this.failures.set(id, failures);
      most = Math.max(most, failures);
    }
    return most >= MAX_COMMIT_ATTEMPTS;
  }

  /** The runs `ids` committed (or failed for good): their count starts again. */
  settled(ids: string[]): void {
    if (this.failures.size === 0) return;
    for (const id of ids) this.failures.delete(id);
  }
}
