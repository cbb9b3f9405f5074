// HTTP requests waiting on a custom-response run: each gets the run's `respond()` once, or why none came. In a
// cluster the run may happen on another node: an answer with no one waiting here is relayed for the node that waits.
import { LRUCache } from 'lru-cache';
import { countedUpTo } from '../lib/cache-bounds.js';
import type { HttpResponse } from '../runtime/types.js';

/** Longer than any run may last (--run-timeout is at most an hour). */
const RELAYED_TTL_MS = 2 * 60 * 60_000;

/** Why a run gave no response: the error it ended with (a TimeoutError when it ran out of time). */
export interface AnswerFailure {
  name: string;
  message: string;
}

/** Receives a run's `respond()` as soon as it is called, or undefined (and its error, if it failed) once it ended without one. */
export type Responder = (response: HttpResponse | undefined, failure?: AnswerFailure) => void;

/** Sends an answer no one waits for here to the other nodes. */
export type AnswerRelay = (invocationId: string, answer: { response?: HttpResponse | undefined; error?: AnswerFailure | undefined }) => void;

export class Responders {
  private readonly waiting = new Map<string, Responder>();
  /**
   * Invocations whose answer was relayed already: the end of their run sends nothing more. Bounded, because a run
   * whose batch is taken over by another node never ends here.
   */
  private readonly relayed = new LRUCache<string, true>({ ...countedUpTo(10_000), ttl: RELAYED_TTL_MS });

  constructor(private readonly relay?: AnswerRelay) {}

  add(invocationId: string, responder: Responder): void {
    this.waiting.set(invocationId, responder);
  }

  /**
   * Hands a run's response to the waiting HTTP request once; later calls for the same invocation are ignored.
   * `relayIfAbsent`: the source answers HTTP requests, so with no one waiting here a node elsewhere may be.
   */
  respond(invocationId: string, response: HttpResponse | undefined, failure?: AnswerFailure, relayIfAbsent = false): void {
    const responder = this.waiting.get(invocationId);
    if (!responder) {
      if (!relayIfAbsent || !this.relay) return;
      if (this.relayed.delete(invocationId)) return;
      if (response) this.relayed.set(invocationId, true);
      this.relay(invocationId, { response, error: failure && { name: failure.name, message: failure.message } });
      return;
    }
    this.waiting.delete(invocationId);
    responder(response, failure);
  }

  /** The invocations whose requests wait here. */
  waitingIds(): string[] {
    return [...this.waiting.keys()];
  }

  /** Drops a waiting responder (the HTTP client went away or waited too long, or its row was never written). */
  forget(invocationId: string): void {
    this.waiting.delete(invocationId);
  }
}
