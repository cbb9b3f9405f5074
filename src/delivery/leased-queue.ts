// The loop of a leased work queue (webhook deliveries, workflow sends): claim due rows into free slots, launch them,
// sleep until the next due time or a wake-up.
import type { Logger } from 'pino';
import { type Clock, type ClockTimer, EarliestWake } from '../lib/clock.js';
import { CoalescingTask } from '../lib/coalescing-task.js';
import type { PollCadence } from '../lib/poll-cadence.js';
import type { LeasedTable } from '../store/lease-ends.js';
import type { DatabaseOutageLog } from '../store/outage-log.js';

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
  /** In a cluster: when the first lease live at `nowMs` ends (a node that died holding it never says so). */
  nextLeaseEndMs?(nowMs: number): Promise<number | undefined>;
  /** Starts an attempt of a claimed row (it calls `slotFreed` when it ends). */
  launch(row: Row): void;
}

export interface LeasedQueuePumpOptions {
  /** The queue's table: names it in the count of looks unasked. */
  table: LeasedTable;
  /** Names the queue in the log line of a failed read. */
  what: string;
  /** Where a failed read that is a database outage is said, once for the whole outage. */
  outages: DatabaseOutageLog;
  clock: Clock;
  /** How long to wait before looking unasked: for rows queued unannounced and leases that ran out. */
  cadence: PollCadence;
  /** The wait while signals arrive: how late a lease that ran out may be noticed before its end is known. */
  watchMs: number;
  logger: Logger;
}

export class LeasedQueuePump<Row> {
  private readonly pumping = new CoalescingTask(() => this.pump());
  private timer: ClockTimer | undefined;
  /** Times this node queued rows for (its own retries): no signal announces them, and the lease watch is too slow. */
  private readonly queuedFor: EarliestWake;
  /** The pump was woken by its own timer, not by news of work: it also looks for leases that ended unannounced. */
  private timerWoke = false;
  /** When the first lease held elsewhere ends, as last looked up. */
  private leaseEndAt: number | undefined;
  /** Until start(), and on a node that does no work (`api`), wake-ups are ignored. */
  private started = false;
  private stopped = false;
  /** The last claim filled every free slot, so more may be due as soon as an attempt finishes. */
  private saturated = false;

  constructor(
    private readonly queue: LeasedQueue<Row>,
    private readonly options: LeasedQueuePumpOptions,
  ) {
    this.queuedFor = new EarliestWake(options.clock, () => this.wake());
    // Signals lost or back: look at once (for what was missed), then at the new cadence.
    options.cadence.onChange(() => this.wake());
  }

  /** Claims what is due now (after a commit queued rows, after a retry came due, by the fallback timer). */
  wake(): void {
    if (this.started && !this.stopped) this.pumping.request();
  }

  /** This node queued a row due at `atMs` (a retry): claims then, without reading the queue now. */
  dueAt(atMs: number): void {
    if (this.started && !this.stopped) this.queuedFor.at(atMs);
  }

  /** Claims from now on, starting with what is due now. */
  start(): void {
    this.started = true;
    this.wake();
  }

  /** An attempt ended: its slot matters only if work was left waiting for one. */
  slotFreed(): void {
    if (this.saturated) this.wake();
  }

  /** Stops claiming; resolves once a claim in progress has launched or given back its rows. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    this.queuedFor.cancel();
    await this.pumping.settled();
  }

  private async pump(): Promise<void> {
    let sleepMs = this.options.cadence.waitMs(this.options.watchMs);
    const unasked = this.timerWoke;
    this.timerWoke = false;
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
        this.options.outages.reached('read');
        for (const row of claimed) this.queue.launch(row);
        if (claimed.length < free) break;
      }
      if (this.stopped) return;
      // Every slot busy: a finishing attempt wakes the pump, and due work would only wake it again and again.
      if (!this.saturated) {
        const due = await this.queue.nextDueMs();
        if (due !== undefined) sleepMs = Math.min(sleepMs, Math.max(0, due - this.options.clock.now()));
      }
      // One query per look unasked, not per pump: the leases it finds last until then at least.
      if (unasked && this.queue.nextLeaseEndMs) this.leaseEndAt = await this.queue.nextLeaseEndMs(this.options.clock.now());
      if (this.leaseEndAt !== undefined) {
        if (this.leaseEndAt < this.options.clock.now()) this.leaseEndAt = undefined;
        else sleepMs = Math.min(sleepMs, this.leaseEndAt - this.options.clock.now() + 1);
      }
    } catch (error) {
      if (!this.stopped && !this.options.outages.absorb(error)) this.options.logger.error({ err: error }, `${this.options.what} could not read its queue`);
      sleepMs = this.options.cadence.fallbackMs;
    }
    if (this.stopped) return;
    this.timer?.cancel();
    this.timer = this.options.clock.after(sleepMs, () => {
      this.timerWoke = true;
      this.options.cadence.lookingUnasked(this.options.table);
      this.wake();
    });
  }
}
