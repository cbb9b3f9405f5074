// Carries committed events from the node that stored them to live consumers (the SSE hub) in this process.
import type { EventSummary } from '../core/event-pipeline.js';

export type BusListener = (emitterId: string, events: readonly EventSummary[]) => void;

export interface EventBus {
  /** Hands events of one emitter, just committed, to every subscriber. */
  publish(emitterId: string, events: readonly EventSummary[]): void;
  /** Returns a function that unsubscribes. */
  subscribe(listener: BusListener): () => void;
  close(): Promise<void>;
}

/** The embedded mode's bus: synchronous calls in this process, no copies of the events. */
export class LocalBus implements EventBus {
  private readonly listeners = new Set<BusListener>();

  constructor(private readonly onListenerError: (error: unknown) => void = () => undefined) {}

  publish(emitterId: string, events: readonly EventSummary[]): void {
    if (!events.length) return;
    for (const listener of this.listeners) {
      // One failing consumer must not keep the events from the others, nor fail the commit that published them.
      try {
        listener(emitterId, events);
      } catch (error) {
        this.onListenerError(error);
      }
    }
  }

  subscribe(listener: BusListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.listeners.clear();
  }
}
