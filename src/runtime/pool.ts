// Keeps warm worker processes within the pool size, each bound to one account for life, and lends them out one call at a time.
import { RuntimeClosedError } from './errors.js';
import type { WorkerProcess } from './worker-process.js';

export interface PoolOptions {
  size: number;
  /** What every worker may read (the platform package): never a reason to start another worker. */
  sharedReadPaths: string[];
  /** Starts a worker for `accountId` that may read `allowRead` (and its account's code); `onExit` fires when it dies. */
  start(accountId: string, allowRead: string[], onExit: (worker: WorkerProcess) => void): Promise<WorkerProcess>;
}

interface Slot {
  accountId: string;
  allowed: ReadonlySet<string>;
  /** Unset while the process is starting. */
  worker?: WorkerProcess;
  state: 'busy' | 'idle';
  idleSince: number;
  idleTimer?: NodeJS.Timeout;
}

interface Waiter {
  accountId: string;
  needs: string[];
  resolve(slot: Slot): void;
  reject(error: unknown): void;
}

/** An idle worker is stopped after this long, to give its memory back. */
const IDLE_TTL_MS = 5 * 60_000;
/** Past this many paths an account's remembered set starts again from what the current call needs. */
const MAX_REMEMBERED_PATHS = 256;

export class WorkerPool {
  private readonly slots = new Set<Slot>();
  private readonly waiters: Waiter[] = [];
  /**
   * What each account's components have needed to read so far. A worker's read permissions are fixed at start,
   * so a new worker is given all of them, and one warm worker can serve all of the account's components.
   */
  private readonly accountPaths = new Map<string, Set<string>>();
  /** Workers still starting, so that close() can wait for them too. */
  private readonly starting = new Set<Promise<WorkerProcess | undefined>>();
  private closed = false;
  private readonly shared: ReadonlySet<string>;

  constructor(private readonly options: PoolOptions) {
    this.shared = new Set(options.sharedReadPaths);
  }

  /** How many workers are starting, running a call, or waiting for one (for metrics). */
  states(): { starting: number; busy: number; idle: number } {
    const counts = { starting: 0, busy: 0, idle: 0 };
    for (const slot of this.slots) counts[slot.worker === undefined ? 'starting' : slot.state]++;
    return counts;
  }

  /** Runs `fn` on a worker of `accountId` that may read `needs`, waiting for room when every worker is busy. */
  async use<T>(accountId: string, needs: string[], fn: (worker: WorkerProcess) => Promise<T>): Promise<T> {
    const slot = await this.acquire(accountId, needs);
    try {
      return await fn(slot.worker!);
    } finally {
      this.release(slot);
    }
  }

  /**
   * Like use, but only when that waits for no other call and stops no worker: the account has an idle worker that may
   * read `needs`, or a slot is free. Else `fn` is not run and this resolves undefined.
   */
  async useIfFree<T>(accountId: string, needs: string[], fn: (worker: WorkerProcess) => Promise<T>): Promise<T | undefined> {
    if (this.closed || this.waiters.length) return undefined;
    const own = needs.filter((p) => !this.shared.has(p));
    if (!this.idleFor(accountId, own) && this.slots.size >= this.options.size) return undefined;
    return this.use(accountId, needs, fn);
  }

  /** Workers started and not ended (busy or idle). */
  liveWorkers(): number {
    let live = 0;
    for (const slot of this.slots) if (slot.worker?.alive) live++;
    return live;
  }

  /** Kills every worker and fails every waiting call. */
  async close(): Promise<void> {
    this.closed = true;
    for (const waiter of this.waiters.splice(0)) waiter.reject(new RuntimeClosedError());
    const exits: Promise<void>[] = [];
    for (const slot of this.slots) {
      clearTimeout(slot.idleTimer);
      if (slot.worker) {
        slot.worker.kill('closed', 'the component runtime has been closed');
        exits.push(slot.worker.closed);
      }
    }
    this.slots.clear();
    for (const late of await Promise.all([...this.starting])) if (late) exits.push(late.closed);
    await Promise.all(exits);
  }

  private acquire(accountId: string, needs: string[]): Promise<Slot> {
    if (this.closed) return Promise.reject(new RuntimeClosedError());
    needs = needs.filter((p) => !this.shared.has(p));
    this.remember(accountId, needs);
    return new Promise<Slot>((resolve, reject) => {
      this.waiters.push({ accountId, needs, resolve, reject });
      this.drain();
    });
  }

  private remember(accountId: string, needs: string[]): void {
    let paths = this.accountPaths.get(accountId);
    if (!paths || paths.size + needs.length > MAX_REMEMBERED_PATHS) {
      paths = new Set();
      this.accountPaths.set(accountId, paths);
    }
    for (const p of needs) paths.add(p);
  }

  private release(slot: Slot): void {
    if (!this.slots.has(slot)) return;
    if (!slot.worker?.alive) {
      this.slots.delete(slot);
    } else if (slot.worker.spoiled) {
      this.retire(slot, 'its component code changed built-ins the next call would share');
    } else {
      slot.state = 'idle';
      slot.idleSince = Date.now();
      slot.idleTimer = setTimeout(() => this.retire(slot, 'idle for too long'), IDLE_TTL_MS);
      slot.idleTimer.unref();
    }
    this.drain();
  }

  private onExit(slot: Slot): void {
    // A busy slot is dropped when its call releases it; an idle one goes now.
    if (slot.state === 'idle') {
      clearTimeout(slot.idleTimer);
      this.slots.delete(slot);
      this.drain();
    }
  }

  private retire(slot: Slot, why: string): void {
    clearTimeout(slot.idleTimer);
    this.slots.delete(slot);
    slot.worker?.kill('evicted', `worker stopped: ${why}`);
  }

  private idleFor(accountId: string, needs: string[]): Slot | undefined {
    for (const slot of this.slots) {
      // Spoiled while idle, by a timer a call left behind: it serves no further call.
      if (slot.state === 'idle' && slot.worker?.spoiled) this.retire(slot, 'its component code changed built-ins the next call would share');
      else if (slot.state === 'idle' && slot.accountId === accountId && needs.every((p) => slot.allowed.has(p))) return slot;
    }
    return undefined;
  }

  private leastRecentlyUsedIdle(): Slot | undefined {
    let oldest: Slot | undefined;
    for (const slot of this.slots) {
      if (slot.state === 'idle' && (!oldest || slot.idleSince < oldest.idleSince)) oldest = slot;
    }
    return oldest;
  }

  /** Serves waiters in order: a warm worker of their account, else a new one, evicting an idle worker that cannot serve them. */
  private drain(): void {
    if (this.closed) return;
    for (let i = 0; i < this.waiters.length; ) {
      const waiter = this.waiters[i]!;
      const idle = this.idleFor(waiter.accountId, waiter.needs);
      if (idle) {
        this.waiters.splice(i, 1);
        clearTimeout(idle.idleTimer);
        idle.state = 'busy';
        waiter.resolve(idle);
        continue;
      }
      if (this.slots.size < this.options.size) {
        this.waiters.splice(i, 1);
        this.spawn(waiter);
        continue;
      }
      const victim = this.leastRecentlyUsedIdle();
      if (victim) {
        this.retire(victim, `room needed for account ${waiter.accountId}`);
        continue;
      }
      // No room for this waiter; a later one may still find an idle worker of its own account.
      i++;
    }
  }

  private spawn(waiter: Waiter): void {
    const allowed = new Set([...(this.accountPaths.get(waiter.accountId) ?? []), ...waiter.needs]);
    const slot: Slot = { accountId: waiter.accountId, allowed, state: 'busy', idleSince: Date.now() };
    this.slots.add(slot);
    const allowRead = [...this.shared, ...allowed];
    const started = this.options
      .start(waiter.accountId, allowRead, () => this.onExit(slot))
      .then(
        (worker) => {
          slot.worker = worker;
          if (this.closed || !this.slots.has(slot)) {
            worker.kill('closed', 'the component runtime has been closed');
            waiter.reject(new RuntimeClosedError());
          } else {
            waiter.resolve(slot);
          }
          return worker;
        },
        (error: unknown) => {
          this.slots.delete(slot);
          waiter.reject(this.closed ? new RuntimeClosedError() : error);
          this.drain();
          return undefined;
        },
      );
    this.starting.add(started);
    void started.finally(() => this.starting.delete(started));
  }
}
