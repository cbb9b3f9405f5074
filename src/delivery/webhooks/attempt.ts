// One webhook attempt over HTTP: a signed POST through the guarded dispatcher, its answer read as status and Retry-After.
import type { KeyObject } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Dispatcher } from 'undici';
import { attemptDeadline } from '../../lib/attempt-deadline.js';
import type { Clock } from '../../lib/clock.js';
import { nowSeconds } from '../../model/ids.js';
import { GuardedAgent, OutboundBlockedError, assertPublicLiteral } from '../outbound.js';
import { signWith } from './signing.js';

/** A Retry-After further away than this is not believed. */
const MAX_RETRY_AFTER_MS = 24 * 3600 * 1000;
/** The part of a response body read (and thrown away) so that the connection can be reused. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export interface AttemptResult {
  statusCode: number | null;
  error: string | null;
  retryAfterMs: number | undefined;
  /** stop() cut the attempt off: it does not count, and is sent again after the restart. */
  stopped?: boolean;
}

/** An attempt in flight. The sender's stop() ends it through `cancel`, which post() sets (cheaper than an AbortController per attempt). */
export interface InFlight {
  cancel: ((reason: Error) => void) | undefined;
  done: Promise<void>;
}

export interface WebhookMessage {
  url: string;
  messageId: string;
  payload: string;
  signingKey: KeyObject;
}

/** A webhook URL as an attempt needs it, parsed and checked once per URL rather than per attempt. */
interface Target {
  origin: string;
  path: string;
}

/**
 * Retry-After as seconds or an HTTP date, in milliseconds from now; undefined when absent or unreadable. An HTTP date
 * begins with the day's name in each of its three forms: anything else is no date, though `Date.parse` reads `1.5` or
 * `-5` as days of 2001, which made the retry immediate.
 */
export function retryAfterMs(value: string | string[] | undefined, nowMs: number): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined || raw.trim() === '') return undefined;
  const seconds = /^\s*\d+\s*$/.test(raw);
  if (!seconds && !/^\s*[A-Za-z]{3}/.test(raw)) return undefined;
  const ms = seconds ? Number(raw) * 1000 : Date.parse(raw) - nowMs;
  if (Number.isNaN(ms)) return undefined;
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}

export class WebhookPoster {
  private readonly agent: GuardedAgent;
  private readonly targets = new LRUCache<string, Target>({ max: 1000 });

  constructor(
    private readonly options: { allowPrivateNetwork: boolean; timeoutMs: number },
    private readonly clock: Clock,
  ) {
    this.agent = new GuardedAgent(options.allowPrivateNetwork, options.timeoutMs);
  }

  /**
   * One POST through the dispatcher's handler interface: `request()` wraps each response in a stream, a promise
   * and signal listeners, which cost about a third of an attempt's CPU. Never rejects.
   */
  post(message: WebhookMessage, flight: InFlight): Promise<AttemptResult> {
    const agent = this.agent.ready;
    if (agent === undefined) return this.postOnceLoaded(message, flight);
    return new Promise((resolve) => {
      let controller: Dispatcher.DispatchController | undefined;
      let cancelled: Error | undefined;
      let settled = false;
      let received = 0;
      let response: { statusCode: number; retryAfter: string | string[] | undefined } | undefined;
      const settle = (result: AttemptResult) => {
        if (settled) return;
        settled = true;
        timeout.cancel();
        flight.cancel = undefined;
        resolve(result);
      };
      const fail = (error: unknown) => settle({ statusCode: null, error: this.describe(error, response?.statusCode), retryAfterMs: undefined });
      const answered = () => settle({ statusCode: response!.statusCode, error: null, retryAfterMs: retryAfterMs(response!.retryAfter, this.clock.now()) });
      // Ends the attempt now; the request is cut off at once, or as soon as it gets a connection.
      const cancel = (reason: Error) => {
        cancelled = reason;
        controller?.abort(reason);
        fail(reason);
      };
      // One timer for the whole attempt, connection to last byte; an answer that came during a pause past it counts.
      const timeout = attemptDeadline(this.clock, this.options.timeoutMs, () => cancel(new DOMException('the attempt timed out', 'TimeoutError')));
      flight.cancel = (reason) => {
        settle({ statusCode: null, error: reason.message, retryAfterMs: undefined, stopped: true });
        cancel(reason);
      };
      try {
        const target = this.targetOf(message.url);
        const timestamp = nowSeconds();
        const headers = {
          'content-type': 'application/json',
          'user-agent': 'Tributary-Webhooks/1',
          'webhook-id': message.messageId,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signWith(message.signingKey, message.messageId, timestamp, message.payload),
        };
        agent.dispatch(
          { origin: target.origin, path: target.path, method: 'POST', headers, body: message.payload },
          {
            onRequestStart: (started) => {
              controller = started;
              if (cancelled) started.abort(cancelled);
            },
            onResponseStart: (_controller, statusCode, responseHeaders) => {
              response = { statusCode, retryAfter: responseHeaders['retry-after'] };
            },
            // The body is read and thrown away so that the connection can be reused; a larger one closes it.
            onResponseData: (started, chunk) => {
              received += chunk.length;
              if (received <= MAX_RESPONSE_BYTES) return;
              answered();
              started.abort(new Error('response body too large to read'));
            },
            onResponseEnd: () => answered(),
            onResponseError: (_controller, error) => fail(error),
          },
        );
      } catch (error) {
        fail(error);
      }
    });
  }

  /** The first attempt waits for undici to load (the ones after it dispatch at once); stop() may end it meanwhile. */
  private async postOnceLoaded(message: WebhookMessage, flight: InFlight): Promise<AttemptResult> {
    let stoppedBy: Error | undefined;
    flight.cancel = (reason) => {
      stoppedBy = reason;
    };
    try {
      await this.agent.get();
    } catch (error) {
      return { statusCode: null, error: this.describe(error), retryAfterMs: undefined };
    }
    if (stoppedBy) return { statusCode: null, error: stoppedBy.message, retryAfterMs: undefined, stopped: true };
    return this.post(message, flight);
  }

  /** Closes the connections; attempts in flight must have been cancelled first. */
  async close(): Promise<void> {
    await this.agent.close();
  }

  /** Where an attempt goes. Throws for a URL that is invalid or a private address literal (see assertPublicLiteral). */
  private targetOf(url: string): Target {
    let target = this.targets.get(url);
    if (target === undefined) {
      const parsed = new URL(url);
      assertPublicLiteral(parsed, this.options.allowPrivateNetwork);
      target = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
      this.targets.set(url, target);
    }
    return target;
  }

  /**
   * The delivery log's error text: what went wrong, in the receiver's terms. `answered`: the status of a response
   * whose body never ended (the attempt failed all the same: the receiver may not have finished its work).
   */
  private describe(error: unknown, answered?: number): string {
    const err = error as Error & { code?: string; cause?: unknown };
    const cause = err.cause as (Error & { code?: string }) | undefined;
    if (err instanceof OutboundBlockedError) return err.message;
    if (cause instanceof OutboundBlockedError) return cause.message;
    // A stopping sender settles its attempts before aborting them, so an abort seen here is the timeout's.
    const timedOut = ['TimeoutError', 'HeadersTimeoutError', 'BodyTimeoutError', 'AbortError'].includes(err.name) || err.code === 'UND_ERR_CONNECT_TIMEOUT';
    const within = `within ${this.options.timeoutMs / 1000} s`;
    if (timedOut) return answered === undefined ? `no response ${within}` : `no complete response ${within}: it answered ${answered}, and its body did not end`;
    const detail = cause?.message ?? err.message;
    return (err.code ?? cause?.code) ? `${err.code ?? cause?.code}: ${detail}` : detail;
  }
}
