// Subscribing and unsubscribing for the CLI: the query each subscription route takes, and what a change is said as.
import { type ApiClient, ApiError } from './api.js';

/** A subscription (an emitter's stream to a listener) or, without an emitter, an auto-subscription. */
export interface SubscriptionTarget {
  /** A source or workflow id, or a glob (dc_*, p_*); undefined for an auto-subscription. */
  emitter: string | undefined;
  listener: string;
  /** The stream: '' (no --event) the default stream, as the API stores an omitted event_name. */
  event: string;
}

/** What the API answers a subscribe with (`data`). */
export type Subscription = { id: string; listener_id: string; event_name: string; emitter_id?: string };

/** The default stream's two spellings: `list` shows both as "default", so either is what a user means by it. */
const DEFAULT_STREAM = ['', 'default'];

function routeOf(target: SubscriptionTarget, event: string): string {
  // event_name always, empty too: DELETE matches the stored name exactly, and the auto routes require it.
  const query = [
    ...(target.emitter === undefined ? [] : [`emitter_id=${encodeURIComponent(target.emitter)}`]),
    `listener_id=${encodeURIComponent(target.listener)}`,
    `event_name=${encodeURIComponent(event)}`,
  ].join('&');
  return `/v1/${target.emitter === undefined ? 'auto_subscriptions' : 'subscriptions'}?${query}`;
}

export async function subscribe(api: ApiClient, target: SubscriptionTarget): Promise<Subscription> {
  return (await api.call<{ data: Subscription }>('POST', routeOf(target, target.event))).data;
}

/**
 * Removes the subscription; the event name it was removed under is returned. One made for the default stream is found
 * under either spelling (`event_name=` or `default`), since the table `list` prints cannot tell them apart: the server
 * treats them as one, and the second try serves a server from before that (migration 021); any other name exactly.
 */
export async function unsubscribe(api: ApiClient, target: SubscriptionTarget): Promise<string> {
  try {
    await api.call('DELETE', routeOf(target, target.event));
    return target.event;
  } catch (error) {
    const other = DEFAULT_STREAM.find((name) => name !== target.event);
    if (!(error instanceof ApiError && error.status === 404 && DEFAULT_STREAM.includes(target.event) && other !== undefined)) throw error;
    try {
      await api.call('DELETE', routeOf(target, other));
      return other;
    } catch (second) {
      // Neither spelling: the first refusal, which names what was asked for.
      if (second instanceof ApiError && second.status === 404) throw error;
      throw second;
    }
  }
}

/** "the default stream", `stream "orders"`, `stream "$errors"`. */
export function streamName(event: string): string {
  return DEFAULT_STREAM.includes(event) ? 'the default stream' : `stream ${JSON.stringify(event)}`;
}
