// Time as the service reads it: the system clock in production, a clock that tests move by hand for tests of time.

/** A cancellable timer of a Clock. */
export interface ClockTimer {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the epoch, like Date.now(). */
  now(): number;
  /** Calls `callback` once `ms` have passed on this clock; the timer never keeps the process alive. */
  after(ms: number, callback: () => void): ClockTimer;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  after(ms, callback) {
    const timer = setTimeout(callback, ms);
    timer.unref();
    return { cancel: () => clearTimeout(timer) };
  },
};

/**
 * A clock that stands still until `advance` or `set` moves it; timers due by then fire in due order. Tests use it to
 * cross a quota's midnight or a retry's delay without waiting for them.
 */
export class ManualClock implements Clock {
  private timers: Array<{ at: number; callback: () => void; seq: number }> = [];
  private seq = 0;

  constructor(private current: number = Date.now()) {}

  now(): number {
    return this.current;
  }

  after(ms: number, callback: () => void): ClockTimer {
    const timer = { at: this.current + Math.max(0, ms), callback, seq: this.seq++ };
    this.timers.push(timer);
    return { cancel: () => void (this.timers = this.timers.filter((t) => t !== timer)) };
  }

  /** Moves the clock forward by `ms`, firing every timer that falls due on the way. */
  advance(ms: number): void {
    this.set(this.current + ms);
  }

  /** Moves the clock to `ms` (forward only), firing every timer that falls due on the way. */
  set(ms: number): void {
    for (;;) {
      const due = this.timers.filter((t) => t.at <= ms).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.current = Math.max(this.current, due.at);
      due.callback();
    }
    this.current = Math.max(this.current, ms);
  }
}

/** Calls `callback` every `ms` on `clock` until the returned timer is cancelled. */
export function every(clock: Clock, ms: number, callback: () => void): ClockTimer {
  let timer: ClockTimer;
  let cancelled = false;
  const tick = () => {
    if (cancelled) return;
    timer = clock.after(ms, tick);
    callback();
  };
  timer = clock.after(ms, tick);
  return {
    cancel: () => {
      cancelled = true;
      timer.cancel();
    },
  };
}

/**
 * A one-shot wake-up that keeps the earliest of the times asked for ("look again at t, unless sooner"): the work
 * loops' next look unasked, whichever of a due time, a lease's end or the poll cadence comes first.
 */
export class EarliestWake {
  private due: { at: number; timer: ClockTimer } | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly callback: () => void,
  ) {}

  /** Calls back at `atMs`, unless a call is already due by then. */
  at(atMs: number): void {
    if (this.due && this.due.at <= atMs) return;
    this.due?.timer.cancel();
    const timer = this.clock.after(Math.max(0, atMs - this.clock.now()), () => {
      this.due = undefined;
      this.callback();
    });
    this.due = { at: atMs, timer };
  }

  /** Drops the call due, so that the next at() sets it afresh (later, if it says so). */
  cancel(): void {
    this.due?.timer.cancel();
    this.due = undefined;
  }
}
