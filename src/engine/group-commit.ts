// Group commit: writes requested in the same turn of the event loop share one transaction.

/**
 * Collects items from concurrent callers and hands them to `flush` together; every caller's promise settles
 * when the flush holding its items has committed (or failed). At most one flush runs at a time.
 */
export class GroupCommit<T> {
  private pending: Array<{ items: T[]; resolve: () => void; reject: (error: unknown) => void }> = [];
  private flushing = false;
  private scheduled = false;

  constructor(
    private readonly flush: (items: T[]) => Promise<void>,
    private readonly maxItems = 1000,
  ) {}

  add(items: T[]): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ items, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    // setImmediate lets every request parsed in this turn join the group.
    setImmediate(() => {
      this.scheduled = false;
      void this.run();
    });
  }

  private async run(): Promise<void> {
    if (this.flushing || !this.pending.length) return;
    this.flushing = true;
    const group: typeof this.pending = [];
    let count = 0;
    while (this.pending.length && count < this.maxItems) {
      const next = this.pending.shift()!;
      group.push(next);
      count += next.items.length;
    }
    try {
      await this.flush(group.flatMap((g) => g.items));
      for (const g of group) g.resolve();
    } catch (error) {
      for (const g of group) g.reject(error);
    } finally {
      this.flushing = false;
      if (this.pending.length) this.schedule();
    }
  }
}
