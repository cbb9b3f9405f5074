// The loop of a leased work queue (webhook deliveries, workflow sends): claim due rows into free slots, launch them,
// sleep until the next due time or a wake-up.
import type { Logger } from 'pino';
import type { Clock, ClockTimer } from '../lib/clock.js';
import { CoalescingTask } from '../lib/coalescing-task.js';

/** What the pump needs of a queue; rows are claimed with a lease the queue's owner holds. */
export interface LeasedQueue<Row> {
  /** Slots free for new attempts now. */
  freeSlots(): number;
  /** Claims at most `count` due rows. */
  claim(count: number): Promise<Row[]>;
  /** Gives back rows claimed while the pump was stopping. */
  release(rows: Row[]): Promise<void>;
  /** When the next row falls due, if any. */
  nextDueMs(): Promise<number | undefined>;
  /** Starts an attempt of a claimed row (it calls `slotFreed` when it ends). */
  launch(row: Row): void;
}

export class LeasedQueuePump<Row> {
  private readonly pumping = new CoalescingTask(() => this.pump());
  private timer: ClockTimer | undefined;
  private stopped = false;
  /** The last claim filled every free slot, so more may be due as soon as an attempt finishes. */
  private saturated = false;

  constructor(
    private readonly queue: LeasedQueue<Row>,
    private readonly clock: Clock,
    /** Fallback poll, for rows queued by other nodes and leases that ran out. */
    private readonly pollMs: number,
    private readonly logger: Logger,
    /** Names the queue in the log line of a failed read. */
    private readonly what: string,
  ) {}

  /** Claims what is due now (after a commit queued rows, after a retry came due, by the fallback timer). */
  wake(): void {
    if (!this.stopped) this.pumping.request();
  }

  /** An attempt ended: its slot matters only if work was left waiting for one. */
  slotFreed(): void {
    if (this.saturated) this.wake();
  }

  /** Stops claiming; resolves once a claim in progress has launched or given back its rows. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    await this.pumping.settled();
  }

  private async pump(): Promise<void> {
    let sleepMs = this.pollMs;
    try {
      while (!this.stopped) {
        const free = this.queue.freeSlots();
        this.saturated = free <= 0;
        if (free <= 0) break;
        const claimed = await this.queue.claim(free);
        this.saturated = claimed.length === free;
        if (this.stopped) {
          await this.queue.release(claimed);
          return;
        }
        for (const row of claimed) this.queue.launch(row);
        if (claimed.length < free) break;
      }
      if (this.stopped) return;
      // Every slot busy: a finishing attempt wakes the pump, and due work would only wake it again and again.
      if (!this.saturated) {
        const due = await this.queue.nextDueMs();
        if (due !== undefined) sleepMs = Math.min(sleepMs, Math.max(0, due - this.clock.now()));
      }
    } catch (error) {
      if (!this.stopped) this.logger.error({ err: error }, `${this.what} could not read its queue`);
    }
    if (this.stopped) return;
    this.timer?.cancel();
    this.timer = this.clock.after(sleepMs, () => this.wake());
  }
}
