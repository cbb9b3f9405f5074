// Serialises work on one source inside this process: runs and hooks of a source take turns, in arrival order.

export class SourceLocks {
  private readonly tails = new Map<string, Promise<unknown>>();
  /** Pieces of work queued behind the one holding each source, not yet started. */
  private readonly waiting = new Map<string, number>();

  /** Runs `work` once every earlier piece of work on this source has finished. */
  exclusive<T>(sourceId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(sourceId);
    let run = work;
    if (previous) {
      this.waiting.set(sourceId, (this.waiting.get(sourceId) ?? 0) + 1);
      run = () => {
        const left = (this.waiting.get(sourceId) ?? 1) - 1;
        if (left > 0) this.waiting.set(sourceId, left);
        else this.waiting.delete(sourceId);
        return work();
      };
    }
    const result = (previous ?? Promise.resolve()).then(run, run);
    const tail = result.catch(() => undefined);
    this.tails.set(sourceId, tail);
    void tail.then(() => {
      if (this.tails.get(sourceId) === tail) this.tails.delete(sourceId);
    });
    return result;
  }

  /**
   * Whether other work waits for the source: a drain that could go on for as long as requests keep coming lets an
   * update, a switch-off or a delete through between two batches instead of holding it until the queue is empty.
   */
  hasWaiting(sourceId: string): boolean {
    return this.waiting.has(sourceId);
  }
}
