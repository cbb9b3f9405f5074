// Carries out `$.send.http({ method, url, headers, params, data, auth })`: one request through the outbound guard.
import type { Dispatcher } from 'undici';
import { attemptDeadline } from '../../lib/attempt-deadline.js';
import type { Clock } from '../../lib/clock.js';
import type { ClaimedSend } from '../../store/sends.js';
import { GuardedAgent, OutboundBlockedError, assertPublicLiteral } from '../outbound.js';
import { retryAfterMs } from '../webhooks/attempt.js';
import { refused, type Performer, type SendResult } from './result.js';

export interface HttpSendSettings {
  allowPrivateNetwork: boolean;
  /** Longest an attempt may take, connection to last byte. */
  timeoutMs: number;
}

/** The argument of `$.send.http()` as the worker checked it (url a string; headers and params objects). */
interface HttpSendPayload {
  url: string;
  method?: string;
  headers?: Record<string, unknown>;
  params?: Record<string, unknown>;
  data?: unknown;
  auth?: { username?: unknown; password?: unknown };
}

/** The part of an answer's body read (and thrown away) so that the connection can be reused. */
const MAX_RESPONSE_BYTES = 64 * 1024;

/** A send that no attempt can carry out as written. */
class UnsendableError extends Error {}

/** Header and query values as text: arrays give one value per element, objects their JSON. */
function textValues(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (Array.isArray(value)) return value.flatMap(textValues);
  return [typeof value === 'object' ? JSON.stringify(value) : String(value)];
}

/** The request the send describes. `data` goes as it is when it is a string, else as JSON. */
function requestOf(payload: HttpSendPayload, allowPrivateNetwork: boolean): Dispatcher.RequestOptions {
  if (!URL.canParse(payload.url)) throw new UnsendableError(`"${payload.url}" is not an absolute URL`);
  const url = new URL(payload.url);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UnsendableError(`"${payload.url}" must use http or https`);
  assertPublicLiteral(url, allowPrivateNetwork);
  for (const [name, value] of Object.entries(payload.params ?? {})) for (const text of textValues(value)) url.searchParams.append(name, text);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(payload.headers ?? {})) {
    const texts = textValues(value);
    if (texts.length) headers[name.toLowerCase()] = texts.join(', ');
  }
  headers['user-agent'] ??= 'Tributary-Sends/1';
  const { username, password } = payload.auth ?? {};
  if (username !== undefined || password !== undefined) {
    headers.authorization ??= `Basic ${Buffer.from(`${textValues(username).join('')}:${textValues(password).join('')}`).toString('base64')}`;
  }
  let body: string | undefined;
  if (typeof payload.data === 'string') body = payload.data;
  else if (payload.data !== undefined) {
    body = JSON.stringify(payload.data);
    headers['content-type'] ??= 'application/json';
  }
  const method = (payload.method ?? 'POST').toUpperCase() as Dispatcher.HttpMethod;
  return { origin: url.origin, path: `${url.pathname}${url.search}`, method, headers, body };
}

export class HttpPerformer implements Performer {
  private readonly agent: GuardedAgent;

  constructor(
    private readonly settings: HttpSendSettings,
    private readonly clock: Clock,
  ) {
    this.agent = new GuardedAgent(settings.allowPrivateNetwork, settings.timeoutMs);
  }

  async perform(send: ClaimedSend, signal: AbortSignal): Promise<SendResult> {
    let request: Dispatcher.RequestOptions;
    try {
      request = requestOf(JSON.parse(send.payload) as HttpSendPayload, this.settings.allowPrivateNetwork);
    } catch (error) {
      return refused(this.describe(error));
    }
    // One timer for the whole attempt, on the service's clock like a webhook attempt's.
    const attempt = new AbortController();
    const stop = () => attempt.abort(signal.reason);
    if (signal.aborted) stop();
    else signal.addEventListener('abort', stop, { once: true });
    const timeout = attemptDeadline(this.clock, this.settings.timeoutMs, () => attempt.abort(new DOMException('the attempt timed out', 'TimeoutError')));
    try {
      const response = await (await this.agent.get()).request({ ...request, signal: attempt.signal });
      // A larger body closes the connection instead; the status counts all the same.
      await response.body.dump({ limit: MAX_RESPONSE_BYTES }).catch(() => undefined);
      const { statusCode } = response;
      if (statusCode >= 200 && statusCode < 300) return { ok: true, statusCode };
      const retryAfter = retryAfterMs(response.headers['retry-after'], this.clock.now());
      return { ok: false, permanent: false, statusCode, error: `answered ${statusCode}`, retryAfterMs: retryAfter };
    } catch (error) {
      const permanent = blocked(error) !== undefined || (error as { code?: string }).code === 'UND_ERR_INVALID_ARG';
      return { ok: false, permanent, error: this.describe(error) };
    } finally {
      timeout.cancel();
      signal.removeEventListener('abort', stop);
    }
  }

  async close(): Promise<void> {
    await this.agent.close().catch(() => undefined);
  }

  /** The send's `last_error`: what went wrong, in the destination's terms. */
  private describe(error: unknown): string {
    const refusal = blocked(error);
    if (refusal) return `refused: ${refusal.message}`;
    const err = error as Error & { code?: string; cause?: Error & { code?: string } };
    if (err instanceof UnsendableError) return err.message;
    if (err.name === 'TimeoutError' || err.code === 'UND_ERR_CONNECT_TIMEOUT' || err.code === 'UND_ERR_HEADERS_TIMEOUT') {
      return `no response within ${this.settings.timeoutMs / 1000} s`;
    }
    const code = err.code ?? err.cause?.code;
    const detail = err.cause?.message ?? err.message;
    return code ? `${code}: ${detail}` : detail;
  }
}

/** The outbound guard's refusal, thrown directly (an address literal) or as the cause of a failed connection. */
function blocked(error: unknown): OutboundBlockedError | undefined {
  if (error instanceof OutboundBlockedError) return error;
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof OutboundBlockedError ? cause : undefined;
}
