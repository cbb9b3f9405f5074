// Sends a running step call's `$.export`s to the server ahead of its outcome, so that a call its time limit or a crash stops keeps them.
import { setImmediate as originalSetImmediate } from 'node:timers';
import type { Send } from './harden.js';
import { EXPORTS_AHEAD_EAGER, EXPORTS_AHEAD_MS } from './limits.js';
import { JSONStringify, MapPrototypeClear, MapPrototypeForEach, MapPrototypeSet, PerformanceNow, SafeMap } from './primordials.js';

// Taken before timer-cap.ts caps the globals: the runtime's own waits never count against components.
const setImmediate = originalSetImmediate;

/**
 * The exports of step call `index` of request `requestId` not yet sent (JSON text; undefined: the name taken back).
 * Each is written out at once, as text around the JSON it was measured on (a synchronous loop or a crash right after
 * cannot take it back), for the call's first EXPORTS_AHEAD_EAGER; after that at most once per EXPORTS_AHEAD_MS, and
 * at the call's next turn of the event loop: an export made in the last milliseconds before a stop may then be
 * missing or older. Not ordered after the outcomes held before it (unlike log lines), so that exports cost the
 * batch no early flush.
 */
export class ExportsAhead {
  private readonly pending: Map<string, string | undefined> = new SafeMap();
  /** Names in `pending`: Map's `size` getter is component code's to replace. */
  private waiting = false;
  private sent = 0;
  private sentAt = 0;
  private queued = false;

  constructor(
    private readonly requestId: number,
    private readonly index: number,
    private readonly send: Send,
    private readonly closed: () => boolean,
  ) {}

  note(name: string, json: string | undefined): void {
    MapPrototypeSet(this.pending, name, json);
    this.waiting = true;
    if (this.sent < EXPORTS_AHEAD_EAGER || PerformanceNow() - this.sentAt >= EXPORTS_AHEAD_MS) {
      this.flush();
      return;
    }
    if (this.queued) return;
    this.queued = true;
    setImmediate(() => {
      this.queued = false;
      this.flush();
    });
  }

  private flush(): void {
    if (!this.waiting || this.closed()) return;
    let values = '';
    let removed = '';
    MapPrototypeForEach(this.pending, (json, name) => {
      if (json === undefined) removed += `${removed ? ',' : ''}${JSONStringify(name)}`;
      else values += `${values ? ',' : ''}${JSONStringify(name)}:${json}`;
    });
    MapPrototypeClear(this.pending);
    this.waiting = false;
    this.send(`{"t":"exports","id":${this.requestId},"index":${this.index},"values":{${values}},"removed":[${removed}]}`);
    this.sent++;
    this.sentAt = PerformanceNow();
  }
}
