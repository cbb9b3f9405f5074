// Outbound HTTP for component URLs and webhooks, guarded so that users cannot make the service reach its own network.
import dns from 'node:dns';
import type net from 'node:net';
import type { Dispatcher, RequestInit, Response } from 'undici';
import { invalid } from '../model/errors.js';
// The ranges component code may not reach are the ones the service's own outbound requests may not reach either.
import { isPrivateAddress } from '../runtime/worker/egress-rules.js';
import { hasControlCharacter } from '../runtime/worker/control-characters.js';
import { quote } from '../runtime/worker/quote.js';

/** Parses a URL the service will call (`field` names it in errors): absolute, http or https, with a host; else 400. */
export function parseHttpUrl(raw: string, field: string): URL {
  // URL parsing drops tabs and line breaks, percent-encodes C1 controls and trims the ends, so the URL stored would not
  // be the one called.
  if (hasControlCharacter(raw) || raw.trim() !== raw) {
    throw invalid(`${field} ${quote(raw)} holds control characters or surrounding spaces; send the URL alone`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    const port = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*:(\d+)(?:[/?#]|$)/i.exec(raw)?.[1];
    if (port !== undefined && Number(port) > 65535) throw invalid(`${field} ${quote(raw)} names port ${port}; ports go from 1 to 65535`);
    throw invalid(`${field} ${quote(raw)} is not an absolute URL; expected http:// or https:// and a host`);
  }
  // WHATWG URL parsing reads `http:///hook` as host "hook"; RFC 3986 (and the specification) sees no host there.
  const authority = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(raw.trim())?.[1] ?? '';
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '' || authority.replace(/^[^@]*@/, '').replace(/:\d*$/, '') === '') {
    throw invalid(`${field} ${quote(raw)} must use http or https and name a host`);
  }
  return url;
}

export class OutboundBlockedError extends Error {
  override name = 'OutboundBlockedError';
}

let undici: Promise<typeof import('undici')> | undefined;

/** undici, loaded with the first outbound request: a server that sends nothing keeps its ~3.5 MB of heap (BENCHMARKS.md, session 16). */
export function loadUndici(): Promise<typeof import('undici')> {
  undici ??= import('undici');
  return undici;
}

/** A dispatcher that refuses to connect to private addresses, checked on the resolved address, not the name. */
export async function guardedDispatcher(allowPrivateNetwork: boolean, timeoutMs: number): Promise<Dispatcher> {
  const { Agent } = await loadUndici();
  const lookup: net.LookupFunction = (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 4);
      const list = addresses as dns.LookupAddress[];
      const allowed = allowPrivateNetwork ? list : list.filter((a) => !isPrivateAddress(a.address));
      if (!allowed.length) {
        return callback(new OutboundBlockedError(`${hostname} resolves to a private address; outbound requests may not reach it`), '', 4);
      }
      if ((options as dns.LookupOptions).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, allowed);
      callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
  return new Agent({ connect: { lookup, timeout: timeoutMs }, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
}

/** One guarded dispatcher for many requests, made with the first of them. */
export class GuardedAgent {
  private made: Promise<Dispatcher> | undefined;
  private dispatcher: Dispatcher | undefined;

  constructor(
    private readonly allowPrivateNetwork: boolean,
    private readonly timeoutMs: number,
  ) {}

  /** The dispatcher once made, for callers that dispatch synchronously after the first request. */
  get ready(): Dispatcher | undefined {
    return this.dispatcher;
  }

  get(): Promise<Dispatcher> {
    this.made ??= guardedDispatcher(this.allowPrivateNetwork, this.timeoutMs).then((dispatcher) => (this.dispatcher = dispatcher));
    return this.made;
  }

  /** Closes the connections, if any request was ever made. */
  async close(): Promise<void> {
    await this.made?.then((dispatcher) => dispatcher.close()).catch(() => undefined);
  }
}

/** Rejects URLs whose host is a literal private address, which never goes through the resolver. */
export function assertPublicLiteral(url: URL, allowPrivateNetwork: boolean): void {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!allowPrivateNetwork && isPrivateAddress(host)) {
    throw new OutboundBlockedError(`${url.hostname} is a private address; outbound requests may not reach it`);
  }
}

export interface FetchTextOptions {
  allowPrivateNetwork: boolean;
  timeoutMs: number;
  maxBytes: number;
}

/**
 * One request on a guarded dispatcher of its own, within `timeoutMs`; `read` takes what it needs of the response
 * before the dispatcher closes. Errors are thrown as they come, for the caller to word.
 */
export async function guardedFetch<T>(
  url: URL,
  init: Omit<RequestInit, 'dispatcher' | 'signal'>,
  options: { allowPrivateNetwork: boolean; timeoutMs: number },
  read: (response: Response) => Promise<T>,
): Promise<T> {
  const [{ fetch }, dispatcher] = await Promise.all([loadUndici(), guardedDispatcher(options.allowPrivateNetwork, options.timeoutMs)]);
  try {
    return await read(await fetch(url, { ...init, dispatcher, signal: AbortSignal.timeout(options.timeoutMs) }));
  } finally {
    await dispatcher.close().catch(() => undefined);
  }
}

/** Redirects a component URL may take before the fetch gives up, as browsers and curl's --max-redirs cap them. */
const MAX_REDIRECTS = 5;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/**
 * GETs a URL as text within a time and size budget; throws an Error with a human message on any failure. Redirects
 * are followed here, not by fetch, so that each hop's URL is checked as the first one was: a literal address never
 * goes through the guarded resolver.
 */
export function fetchText(rawUrl: string, options: FetchTextOptions): Promise<string> {
  return fetchTextCheckingHops(rawUrl, options, (url) => assertPublicLiteral(url, options.allowPrivateNetwork));
}

/** fetchText with the check each URL must pass before it is requested (the first and every redirect's). */
export async function fetchTextCheckingHops(rawUrl: string, options: FetchTextOptions, checkHop: (url: URL) => void): Promise<string> {
  const deadline = Date.now() + options.timeoutMs;
  let url = new URL(rawUrl);
  for (let redirects = 0; ; redirects++) {
    checkHop(url);
    const answer = await fetchTextOnce(url, rawUrl, options, Math.max(1, deadline - Date.now()));
    if (answer.text !== undefined) return answer.text;
    if (redirects === MAX_REDIRECTS) throw new Error(`${rawUrl} redirects more than ${MAX_REDIRECTS} times`);
    url = redirectTarget(url, answer.location, rawUrl);
  }
}

/** Where a redirect leads: an http(s) URL, relative ones resolved against the URL that answered. */
function redirectTarget(from: URL, location: string | null, rawUrl: string): URL {
  if (!location) throw new Error(`${rawUrl} answered a redirect without a Location`);
  let target: URL;
  try {
    target = new URL(location, from);
  } catch {
    throw new Error(`${rawUrl} redirects to ${quote(location)}, which is not a URL`);
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new Error(`${rawUrl} redirects to ${target.protocol} URLs, not http or https`);
  return target;
}

/** One request of fetchText: the body as text, or a redirect's Location. */
async function fetchTextOnce(
  url: URL,
  rawUrl: string,
  options: FetchTextOptions,
  remainingMs: number,
): Promise<{ text: string; location?: never } | { text?: never; location: string | null }> {
  const guard = { allowPrivateNetwork: options.allowPrivateNetwork, timeoutMs: remainingMs };
  try {
    return await guardedFetch(url, { redirect: 'manual' }, guard, async (response) => {
      if (REDIRECT_STATUSES.has(response.status)) {
        await response.body?.cancel();
        return { location: response.headers.get('location') };
      }
      if (!response.ok) throw new Error(`${rawUrl} answered ${response.status}`);
      const declared = Number(response.headers.get('content-length') ?? 0);
      if (declared > options.maxBytes) throw new Error(`${rawUrl} is larger than ${options.maxBytes} bytes`);
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of response.body ?? []) {
        size += (chunk as Uint8Array).byteLength;
        if (size > options.maxBytes) throw new Error(`${rawUrl} is larger than ${options.maxBytes} bytes`);
        chunks.push(Buffer.from(chunk as Uint8Array));
      }
      return { text: Buffer.concat(chunks).toString('utf8') };
    });
  } catch (error) {
    const cause = (error as { cause?: Error }).cause;
    if (cause instanceof OutboundBlockedError) throw cause;
    if ((error as Error).name === 'TimeoutError') throw new Error(`${rawUrl} did not answer within ${options.timeoutMs} ms`);
    // undici's "fetch failed" says nothing; its cause (no such host, a refused connection) says what to mend.
    if (error instanceof TypeError && cause instanceof Error) {
      const code = (cause as Error & { code?: string }).code;
      throw new Error(`${rawUrl} could not be reached: ${code ? `${code}: ` : ''}${cause.message}`);
    }
    throw error;
  }
}
