// Serialises work on one source inside this process: runs and hooks of a source take turns, in arrival order.

export class SourceLocks {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Runs `work` once every earlier piece of work on this source has finished. */
  exclusive<T>(sourceId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(sourceId) ?? Promise.resolve();
    const result = previous.then(work, work);
    const tail = result.catch(() => undefined);
    this.tails.set(sourceId, tail);
    void tail.then(() => {
      if (this.tails.get(sourceId) === tail) this.tails.delete(sourceId);
    });
    return result;
  }

  isBusy(sourceId: string): boolean {
    return this.tails.has(sourceId);
  }
}
