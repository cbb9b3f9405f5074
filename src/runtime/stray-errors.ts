// Gives an error a component throws after its call ended (from a timer it left behind) to the request that call was part of.
import type { StrayErrorMessage } from './protocol.js';
import type { InvocationError, InvocationMethod } from './types.js';

/** Who made a request: the source (or workflow) and what the caller names its calls by (InvocationRequest.logContext). */
export interface CallOrigin {
  sourceId: string;
  method: InvocationMethod;
  logContext?: Record<string, unknown> | undefined;
}

export type StrayErrorListener = (origin: CallOrigin, index: number, error: InvocationError) => void;

/**
 * Requests remembered, newest first: at least this many, and more while they hold few calls, so that a timer left
 * behind outlives later requests of a busy worker (one event each at 500/s: 20 s, not half a second) without large
 * batches' ids taking much memory (about 40 bytes a call).
 */
const MIN_ORIGINS = 256;
const MAX_REMEMBERED_CALLS = 10_000;

/**
 * One per worker: the worker names the request by its id, which only this side can tie to a source. At most one error
 * is taken per call, so that they come no faster than runs do; a cap per worker instead would let one source's
 * leftover timers silence every later source of the account for as long as its worker lives (a busy one never retires).
 */
export class StrayErrors {
  private readonly origins = new Map<number, { origin: CallOrigin; calls: number; reported: Set<number> }>();
  private rememberedCalls = 0;

  constructor(private readonly listener: StrayErrorListener | undefined) {}

  /** `calls`: how many calls the request makes (events, or one hook or step). */
  note(requestId: number, origin: CallOrigin, calls: number): void {
    this.origins.set(requestId, { origin, calls, reported: new Set() });
    this.rememberedCalls += calls;
    while (this.origins.size > MIN_ORIGINS && this.rememberedCalls > MAX_REMEMBERED_CALLS) {
      const [oldest, request] = this.origins.entries().next().value!;
      this.origins.delete(oldest);
      this.rememberedCalls -= request.calls;
    }
  }

  report(message: StrayErrorMessage): void {
    const request = this.origins.get(message.id);
    if (!request || !this.listener || message.index < 0 || message.index >= request.calls || request.reported.has(message.index)) return;
    request.reported.add(message.index);
    this.listener(request.origin, message.index, message.error);
  }
}
