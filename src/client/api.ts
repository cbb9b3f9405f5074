// A small client of a Tributary server's REST API for the CLI: JSON in and out, API errors as ApiError.
import type { Dispatcher, RequestInit, Response } from 'undici';
import { LONGER, type Limits, limitsFor, secondsOf, timeoutOf, type Wait } from './timeouts.js';
import { escapedControls } from './terminal-text.js';
import { UsageError } from './usage-error.js';

/** The server refused a request (or could not be reached: status 0); `code` is its registered error code. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The error body's `details` (a 422's invalid props, …). */
    readonly details: unknown[] = [],
    /** What to do about it, when the command knows better than the code's usual hint (a data store's 404). */
    readonly hint?: string,
  ) {
    super(message);
  }
}

/**
 * One detail of an error body as a line: a prop's or field's refusal as `name: message`, else its fields as
 * `key: value` (a component's `reason: load_failed`), so that no line is raw JSON.
 */
export function detailLine(detail: unknown): string {
  if (typeof detail !== 'object' || detail === null) return String(detail);
  const d = detail as { prop?: string; field?: string; message?: string };
  // A 400's `field` is absent when the whole body or query is refused (`must be object`).
  const named = d.prop ?? d.field;
  if (typeof d.message === 'string') return named ? `${named}: ${d.message}` : d.message;
  return Object.entries(detail)
    .map(([key, value]) => `${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(', ');
}

interface HookFailure {
  hook: string;
  error: { stack: string };
  logs: Array<{ k: string; msg: string }>;
}

function isHookFailure(detail: unknown): detail is HookFailure {
  const d = detail as Partial<HookFailure> | null;
  return typeof d?.hook === 'string' && typeof d.error?.stack === 'string' && Array.isArray(d.logs);
}

/**
 * A detail as the lines a terminal shows, indented: a failed hook's stack and the console lines it logged (nothing
 * else keeps them: the change was refused), each on its own line; any other detail as `detailLine` gives it.
 */
export function detailLines(detail: unknown): string[] {
  // One line, whatever a name in it holds (a source named with a line break or an ESC is listed in a 409's details).
  if (!isHookFailure(detail)) return [`  ${escapedControls(detailLine(detail))}`];
  const stack = detail.error.stack.split('\n').map((line) => `  ${line}`);
  if (!detail.logs.length) return [...stack, `  ${detail.hook}() logged nothing`];
  return [...stack, `  ${detail.hook}() logged:`, ...detail.logs.map((line) => `    ${line.k.padEnd(5)}  ${line.msg}`)];
}

/**
 * Why a request got no answer, on one line: OpenSSL's own text for an https:// URL of a plain HTTP server was two
 * lines of `…:SSL routines:ssl3_get_record:wrong version number:../deps/openssl/…` naming no cause a user can act on.
 */
function whyUnreachable(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code === 'ERR_SSL_WRONG_VERSION_NUMBER') return 'it does not speak TLS there: is the server http://, not https://?';
  return (cause?.message ?? (error as Error).message).trim().split('\n')[0]!;
}

export interface ServerAddress {
  /** Base URL of the server, e.g. http://localhost:3000. */
  url: string;
  key: string;
}

/** The list endpoints' envelope. */
export interface PageBody<T> {
  data: T[];
  page_info: { total_count: number; count: number; start_cursor: string | null; end_cursor: string | null };
}

/** One Server-Sent Event: its name (`message` when the frame gives none) and its data lines joined. */
interface ServerSentEvent {
  event: string;
  data: string;
}

/** Reads the events of a stream as they arrive; comments (`:sse-handshake`) are skipped. */
async function* serverSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event = 'message';
  let data: string[] = [];
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end = buffer.search(/\r?\n/);
    while (end !== -1) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(buffer[end] === '\r' ? end + 2 : end + 1);
      end = buffer.search(/\r?\n/);
      if (line === '') {
        if (data.length) yield { event, data: data.join('\n') };
        event = 'message';
        data = [];
      } else if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
    }
  }
}

/** The answer a progress route ends with: what the plain route would have answered. */
interface StreamResult {
  status: number;
  body: unknown;
}

/** A call cut short by the command's own stop (Ctrl-C): not a failure, and not a lost connection. */
export class InterruptedError extends Error {
  override readonly name = 'InterruptedError';
}

/** Said with a write that timed out: the server may have done it, and doing it again may do it twice. */
const MAYBE_DONE = 'the server may have done it all the same: see tributary list (or describe) before trying again';

let undici: Promise<typeof import('undici')> | undefined;
/** undici, loaded with the first request: `serve`, which loads this module too, keeps its heap without it. */
const loadUndici = () => {
  undici ??= import('undici');
  return undici;
};

export interface ClientOptions {
  /** Ends every call in flight when it fires: Ctrl-C stops a command at once, a frozen server's answer or not. */
  signal?: AbortSignal | undefined;
  /** --timeout (or TRIBUTARY_TIMEOUT) in milliseconds, 0 for no limit; undefined, the defaults of timeouts.ts. */
  timeoutMs?: number | undefined;
}

export class ApiClient {
  private readonly signal: AbortSignal | undefined;
  private readonly timeoutMs: number | undefined;
  /** One connection pool, with each kind of wait's limits set on its requests. */
  private agent: Dispatcher | undefined;
  private readonly dispatchers = new Map<Wait, Dispatcher>();

  constructor(
    readonly server: ServerAddress,
    options: ClientOptions = {},
  ) {
    this.signal = options.signal;
    this.timeoutMs = options.timeoutMs;
  }

  /** `wait` says what the answer waits on, and so how long it may take (timeouts.ts). */
  async call<T>(method: string, path: string, body?: unknown, wait: Wait = 'answer'): Promise<T> {
    return this.answered<T>(method, path, await this.send(method, path, body, wait), wait);
  }

  /** The answer's body read and parsed; a body cut off (a limit, a connection lost) thrown as what stopped it. */
  private async answered<T>(method: string, path: string, response: Response, wait: Wait): Promise<T> {
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      throw this.failure(method, path, error, wait, 'answering');
    }
    return this.answer<T>(method, path, response.status, text);
  }

  /**
   * A fetch of a live stream (`tributary events -f`, the EventSource's own requests): the first answer is held to the
   * timeout, the stream itself to the server's heartbeat. A limit run out, before the answer or in the stream, is
   * thrown as an error that says it: the words the EventSource puts in its `connection lost (…)` notice, where
   * undici's were `TypeError: terminated: Body Timeout Error`.
   */
  async fetchStream(url: string | URL, init: RequestInit): Promise<Pick<Response, 'status' | 'url' | 'redirected' | 'headers' | 'body'>> {
    const { pathname, search } = new URL(url);
    const said = (error: unknown) => (timeoutOf(error) ? new Error(this.failure('GET', `${pathname}${search}`, error, 'stream', 'sending').message) : error);
    let response: Response;
    try {
      response = await this.fetchWith(url, init, 'stream');
    } catch (error) {
      throw said(error);
    }
    const reader = response.body?.getReader();
    const body =
      reader &&
      new ReadableStream<Uint8Array>({
        async pull(controller) {
          try {
            const { done, value } = await reader.read();
            if (done) controller.close();
            else controller.enqueue(value);
          } catch (error) {
            controller.error(said(error));
          }
        },
        cancel: (reason) => reader.cancel(reason),
      });
    const { status, url: answered, redirected, headers } = response;
    return { status, url: answered, redirected, headers, body: body ?? null };
  }

  /**
   * A call of a progress route (`POST /v1/components/stream`, …), which answers Server-Sent Events: `onProgress` hears
   * each `progress` event's data as it comes; resolves with the body of the `result` event, or throws its error as
   * the plain route's would be thrown. Undefined when the server answers 404 before any stream: it has no such route
   * (an older server), and the caller uses the plain route.
   */
  async stream<T>(method: string, path: string, body: unknown, onProgress: (data: unknown) => void): Promise<T | undefined> {
    const response = await this.send(method, path, body, 'stream', 'text/event-stream');
    if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      if (response.status === 404) {
        await response.body?.cancel();
        return undefined;
      }
      return this.answered<T>(method, path, response, 'stream');
    }
    try {
      for await (const { event, data } of serverSentEvents(response.body!)) {
        if (event === 'progress') onProgress(JSON.parse(data));
        if (event !== 'result') continue;
        const result = JSON.parse(data) as StreamResult;
        return this.answer<T>(method, path, result.status, JSON.stringify(result.body));
      }
    } catch (error) {
      if (error instanceof ApiError) throw error;
      if (this.signal?.aborted) throw new InterruptedError(`${method} ${path} was stopped`);
      if (timeoutOf(error)) throw this.failure(method, path, error, 'stream', 'answering');
      throw new ApiError(0, 'stream_ended', `the connection to ${this.server.url} broke before the server answered: ${(error as Error).message}`);
    }
    throw new ApiError(0, 'stream_ended', `${this.server.url} ended its answer to ${method} ${path} before saying how the save went`);
  }

  private async send(method: string, path: string, body: unknown, wait: Wait, accept?: string): Promise<Response> {
    try {
      return await this.fetchWith(
        this.url(path),
        {
          method,
          headers: {
            authorization: `Bearer ${this.server.key}`,
            ...(body !== undefined && { 'content-type': 'application/json' }),
            ...(accept !== undefined && { accept }),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
          ...(this.signal && { signal: this.signal }),
        },
        wait,
      );
    } catch (error) {
      throw this.failure(method, path, error, wait, 'sending');
    }
  }

  /** undici's fetch with the limits of `wait`; not the global fetch, whose own 300 s limits no option could lift. */
  private async fetchWith(url: string | URL, init: RequestInit, wait: Wait): Promise<Response> {
    const { Agent, fetch } = await loadUndici();
    let dispatcher = this.dispatchers.get(wait);
    if (!dispatcher) {
      const limits = this.limits(wait);
      // The connect limit is the same for every wait; headers and body limits ride on each request.
      this.agent ??= new Agent({ connect: { timeout: limits.connectMs } });
      dispatcher = this.agent.compose(
        (dispatch) => (options, handler) => dispatch({ ...options, headersTimeout: limits.headersMs, bodyTimeout: limits.bodyMs }, handler),
      );
      this.dispatchers.set(wait, dispatcher);
    }
    return fetch(url, { ...init, dispatcher });
  }

  private limits(wait: Wait): Limits {
    return limitsFor(this.timeoutMs, wait);
  }

  /**
   * What a request that failed is thrown as: stopped by the command (Ctrl-C), a limit run out (the server's URL,
   * the request and the limit, on one line), or a server out of reach.
   */
  private failure(method: string, path: string, error: unknown, wait: Wait, when: 'sending' | 'answering'): Error {
    if (this.signal?.aborted) return new InterruptedError(`${method} ${path} was stopped`);
    const limits = this.limits(wait);
    const hint = method === 'GET' ? undefined : MAYBE_DONE;
    switch (timeoutOf(error)) {
      case 'connect':
        return new ApiError(0, 'unreachable', `cannot reach ${this.server.url}: no connection within ${secondsOf(limits.connectMs)}`);
      case 'headers':
        return new ApiError(0, 'timeout', `${this.server.url} did not answer ${method} ${path} within ${secondsOf(limits.headersMs)}; ${LONGER}`, [], hint);
      case 'body':
        return new ApiError(
          0,
          'timeout',
          `${this.server.url} sent nothing for ${secondsOf(limits.bodyMs)} in the middle of its answer to ${method} ${path}; ${LONGER}`,
          [],
          hint,
        );
    }
    if (when === 'answering') {
      return new ApiError(0, 'unreachable', `the connection to ${this.server.url} broke during its answer to ${method} ${path}: ${whyUnreachable(error)}`);
    }
    return new ApiError(0, 'unreachable', `cannot reach ${this.server.url}: ${whyUnreachable(error)}`);
  }

  /** The parsed body of a success; an error body becomes an ApiError with its code, message and details. */
  private answer<T>(method: string, path: string, status: number, text: string): T {
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      throw new ApiError(status, 'not_json', `${method} ${path} answered ${status} with a body that is not JSON; is ${this.server.url} a Tributary server?`);
    }
    if (status < 200 || status >= 300) {
      const error = parsed as { error?: string; code?: string; details?: unknown[] } | undefined;
      const misplaced = status === 404 && error?.error ? wrongAddress(this.server.url, method, error.error) : undefined;
      if (misplaced) throw new UsageError(misplaced);
      throw new ApiError(status, error?.code ?? 'http_error', error?.error ?? `${method} ${path} answered ${status}`, error?.details ?? []);
    }
    return parsed as T;
  }

  get<T>(path: string): Promise<T> {
    return this.call<T>('GET', path);
  }

  /**
   * Every item of a paginated list up to `at_most`, following `after` cursors (newest first, as the server lists), with
   * how many the list holds in all (`total_count`; the items read for a list without page_info).
   */
  async all<T>(path: string, at_most = 10_000): Promise<{ items: T[]; total: number }> {
    const items: T[] = [];
    let total: number | undefined;
    let after: string | null = null;
    const separator = path.includes('?') ? '&' : '?';
    do {
      const page: Omit<PageBody<T>, 'page_info'> & Partial<Pick<PageBody<T>, 'page_info'>> = await this.get(
        `${path}${separator}limit=100${after ? `&after=${encodeURIComponent(after)}` : ''}`,
      );
      items.push(...page.data);
      total ??= page.page_info?.total_count;
      // A list without pages (subscriptions) answers all at once: 100 of them is the whole list, not a full page.
      after = page.data.length === 100 && page.page_info ? page.page_info.end_cursor : null;
    } while (after && items.length < at_most);
    return { items, total: Math.max(total ?? 0, items.length) };
  }

  url(path: string): string {
    return `${this.server.url.replace(/\/+$/, '')}${path}`;
  }
}

/**
 * What a 404 "route … not found" says when --url is not the server's address but a path on it: its docs, its console,
 * or the "API base http://…/v1" the banner prints, which made every path /v1/v1/…. Without this it read as an unknown
 * id, with the hint to list what the account has. The route the server names tells where the server stands: when it
 * saw the URL's path, the server is at the URL's origin; when it saw only /v1/v1/… (a proxy that strips a prefix), it
 * is at the URL less its /v1. Undefined for anything else, such as a route an older server lacks.
 */
function wrongAddress(url: string, method: string, message: string): string | undefined {
  const base = url.replace(/\/+$/, '');
  const { origin, pathname } = new URL(base);
  const prefix = pathname.replace(/\/+$/, '');
  if (prefix === '') return undefined;
  const server = message.startsWith(`route ${method} ${prefix}/v1/`)
    ? origin
    : prefix.endsWith('/v1') && message.startsWith(`route ${method} /v1/v1/`)
      ? base.slice(0, -'/v1'.length)
      : undefined;
  if (server === undefined) return undefined;
  const what = prefix.endsWith('/v1') ? 'is the API base, not' : 'is not';
  return `${base} ${what} the server's address (${message}): use --url ${server}`;
}
