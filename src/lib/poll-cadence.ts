// How long a node's work loops wait before they look at the database unasked: every second while signals from
// the other nodes may be missed, and only as a slow lease watch while every change is announced.

/** A loop's wait when it was not woken: `watchMs` while signals arrive, the short fallback while they may not. */
export class PollCadence {
  private readonly listeners = new Set<() => void>();

  constructor(
    /** The wait while signals may be missed (a cluster node whose LISTEN connection is down, or not up yet). */
    readonly fallbackMs: number,
    /** Whether every change that concerns the loops is announced to them now. */
    private signalled: boolean,
    /** Told of each look a loop takes unasked, by queue (the metrics count them). */
    private readonly onLook: (queue: string) => void = () => {},
  ) {}

  /** Whether every change that concerns the loops is announced to them now. */
  get isSignalled(): boolean {
    return this.signalled;
  }

  /** A loop's own timer fired: it looks at `queue` unasked now. */
  lookingUnasked(queue: string): void {
    this.onLook(queue);
  }

  /**
   * The wait before a loop looks again by itself. `watchMs` is how late it may notice what no signal can announce:
   * a lease that ran out because its node died, a row written while the signal connection was down.
   */
  waitMs(watchMs: number): number {
    return this.signalled ? Math.max(watchMs, this.fallbackMs) : this.fallbackMs;
  }

  /** The signal connection came or went; loops re-arm their timers (and look once, for what was missed). */
  setSignalled(signalled: boolean): void {
    if (signalled === this.signalled) return;
    this.signalled = signalled;
    for (const listener of this.listeners) listener();
  }

  /** `listener` runs whenever the wait changes. */
  onChange(listener: () => void): void {
    this.listeners.add(listener);
  }
}
