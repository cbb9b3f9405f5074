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

/** Requests remembered, newest: a timer left behind seldom outlives this many later requests of its worker. */
const MAX_ORIGINS = 256;

/**
 * One per worker: the worker names the request by its id, which only this side can tie to a source. At most one error
 * is taken per call, so that they come no faster than runs do; a cap per worker instead would let one source's
 * leftover timers silence every later source of the account for as long as its worker lives (a busy one never retires).
 */
export class StrayErrors {
  private readonly origins = new Map<number, { origin: CallOrigin; calls: number; reported: Set<number> }>();

  constructor(private readonly listener: StrayErrorListener | undefined) {}

  /** `calls`: how many calls the request makes (events, or one hook or step). */
  note(requestId: number, origin: CallOrigin, calls: number): void {
    this.origins.set(requestId, { origin, calls, reported: new Set() });
    if (this.origins.size > MAX_ORIGINS) this.origins.delete(this.origins.keys().next().value!);
  }

  report(message: StrayErrorMessage): void {
    const request = this.origins.get(message.id);
    if (!request || !this.listener || message.index < 0 || message.index >= request.calls || request.reported.has(message.index)) return;
    request.reported.add(message.index);
    this.listener(request.origin, message.index, message.error);
  }
}
