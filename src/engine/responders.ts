// HTTP requests waiting on a custom-response run: each gets the run's `respond()` once, or its outcome when none came.
import type { HttpResponse, InvocationOutcome } from '../runtime/types.js';

/** Receives a run's `respond()` as soon as it is called, or undefined and the outcome once the run ended without one. */
export type Responder = (response: HttpResponse | undefined, outcome?: InvocationOutcome) => void;

export class Responders {
  private readonly waiting = new Map<string, Responder>();

  add(invocationId: string, responder: Responder): void {
    this.waiting.set(invocationId, responder);
  }

  /** Hands a run's response to the waiting HTTP request once; later calls for the same invocation are ignored. */
  respond(invocationId: string, response: HttpResponse | undefined, outcome?: InvocationOutcome): void {
    const responder = this.waiting.get(invocationId);
    if (!responder) return;
    this.waiting.delete(invocationId);
    responder(response, outcome);
  }

  /** Drops a waiting responder (the HTTP client went away or waited too long, or its row was never written). */
  forget(invocationId: string): void {
    this.waiting.delete(invocationId);
  }
}
