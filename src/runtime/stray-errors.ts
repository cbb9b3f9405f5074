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
/** Errors reported per worker; past them (a component throwing from every timer it leaves) they are dropped. */
const MAX_STRAY_ERRORS = 100;

/** One per worker: the worker names the request by its id, which only this side can tie to a source. */
export class StrayErrors {
  private readonly origins = new Map<number, CallOrigin>();
  private reported = 0;

  constructor(private readonly listener: StrayErrorListener | undefined) {}

  note(requestId: number, origin: CallOrigin): void {
    this.origins.set(requestId, origin);
    if (this.origins.size > MAX_ORIGINS) this.origins.delete(this.origins.keys().next().value!);
  }

  report(message: StrayErrorMessage): void {
    const origin = this.origins.get(message.id);
    if (!origin || !this.listener || this.reported >= MAX_STRAY_ERRORS) return;
    this.reported++;
    this.listener(origin, message.index, message.error);
  }
}
