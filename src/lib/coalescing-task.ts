// Runs one async task at a time, and folds every request made while it runs into a single run after it.

/**
 * The loop behind "wake the dispatcher", "fire due timers" and "pump the webhook queue": each wants the latest
 * state read once more after a change, never two reads at once, and never one read per change.
 */
export class CoalescingTask {
  private running = false;
  private again = false;
  private current: Promise<void> = Promise.resolve();

  /** `task` must not throw; whatever it rejects with is lost. */
  constructor(private readonly task: () => Promise<void>) {}

  /** Starts the task now, or once more after the run in progress. */
  request(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    this.current = this.task()
      .catch(() => undefined)
      .finally(() => {
        this.running = false;
        if (this.again) {
          this.again = false;
          this.request();
        }
      });
  }

  /** Resolves when the run in progress, if any, has finished (a requested rerun may start after it). */
  settled(): Promise<void> {
    return this.current;
  }
}
