// What one call of `run`, a step or a hook collects (emits, log lines, db writes, the HTTP response) and how it is failed from outside.
import type { DataStoreWrite, EmittedEvent, HttpResponse, InvocationMethod, LogLine } from '../types.js';
import { MAX_LOG_CHARS_PER_CALL, MAX_LOG_LINE_CHARS, MAX_LOG_LINES_PER_CALL } from './limits.js';
import { ArrayPrototypePush, DateNow, SafeError, SafeMap, SafePromise, StringPrototypeSlice } from './primordials.js';

/** What a call runs: an invocation's method, or `configure` (a prop's `options()` or `additionalProps()`). */
export type CallMethod = InvocationMethod | 'configure';

export interface PendingWrite {
  op: DataStoreWrite['op'];
  value?: unknown;
  ttlSeconds?: number | null;
  /** JSON bytes of the value (0 for a delete or a ttl change). */
  bytes: number;
}

/** What one call did to one store so far: `cleared` first, then the last write of each key. */
export interface StoreChanges {
  cleared: boolean;
  writes: Map<string, PendingWrite>;
  /** JSON bytes this call wrote to the store. */
  bytes: number;
  /** JSON bytes of the whole store as this call sees it; measured at the call's first write, then kept up to date. */
  total?: number;
}

export class CallScope {
  readonly emits: EmittedEvent[] = [];
  readonly logs: LogLine[] = [];
  /** Keys written during this call; they reach the batch's db only if the call succeeds. */
  readonly dbWrites: Map<string, { value: unknown; bytes: number }> = new SafeMap();
  /** Changes to data stores by store name; like db writes, they count only if the call succeeds. */
  readonly dataStoreWrites: Map<string, StoreChanges> = new SafeMap();
  emitBytes = 0;
  response?: HttpResponse;
  /** Set once the call has ended: late effects of stray callbacks are dropped. */
  closed = false;
  /** The first error that fails the call regardless of what the component does with it. */
  failure?: unknown;
  /** Rejects the promise of the current `until` on `fail`, ending the wait for what may never settle. */
  private wake?: (reason: unknown) => void;
  /** The invoke request the call belongs to (undefined for configure calls), and whether an error after its end was sent. */
  origin?: number;
  strayReported = false;
  /** Lines of `logs` already sent ahead of the call's outcome (see LogsMessage). */
  sentLogs = 0;
  /** Characters logged so far (capped by MAX_LOG_CHARS_PER_CALL). */
  logChars = 0;
  private logsDropped = false;

  constructor(
    readonly method: CallMethod,
    readonly index: number,
  ) {}

  /**
   * Resolves when `start` calls its `resolve`, rejects with the call's failure as soon as it fails (at once if it has).
   * One promise per wait, with no `then` or `race` that component code could have replaced.
   */
  until(start: (resolve: () => void, reject: (reason: unknown) => void) => void): Promise<void> {
    return new SafePromise<void>((resolve, reject) => {
      if (this.failure !== undefined) return reject(this.failure);
      this.wake = reject;
      start(resolve, reject);
    });
  }

  /** Fails the call: an uncaught error of the component, or a breach of the contract it may have caught. */
  fail(error: unknown): void {
    if (this.closed || this.failure !== undefined) return;
    this.failure = error ?? new SafeError('the component failed with an empty error');
    this.wake?.(this.failure);
  }

  log(k: LogLine['k'], msg: string): void {
    if (this.closed || this.logsDropped) return;
    if (msg.length > MAX_LOG_LINE_CHARS) {
      msg = `${StringPrototypeSlice(msg, 0, MAX_LOG_LINE_CHARS)}… [${msg.length - MAX_LOG_LINE_CHARS} more characters cut]`;
    }
    this.logChars += msg.length;
    if (this.logChars > MAX_LOG_CHARS_PER_CALL) {
      this.logsDropped = true;
      msg = `log output of this call passed ${MAX_LOG_CHARS_PER_CALL} characters; later lines are dropped`;
      k = 'warn';
    } else if (this.logs.length >= MAX_LOG_LINES_PER_CALL) {
      // Empty lines cost no characters, but each is an event to store: a million of them broke the commit.
      this.logsDropped = true;
      msg = `log output of this call passed ${MAX_LOG_LINES_PER_CALL} lines; later lines are dropped`;
      k = 'warn';
    }
    ArrayPrototypePush(this.logs, { k, ts: DateNow(), msg });
  }
}
