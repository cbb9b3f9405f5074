// Outbound HTTP for component URLs and webhooks, guarded so that users cannot make the service reach its own network.
import dns from 'node:dns';
import type net from 'node:net';
import type { Dispatcher, RequestInit, Response } from 'undici';
import { invalid } from '../model/errors.js';
// The ranges component code may not reach are the ones the service's own outbound requests may not reach either.
import { isPrivateAddress } from '../runtime/worker/egress-rules.js';

/** Parses a URL the service will call (`field` names it in errors): absolute, http or https, with a host; else 400. */
export function parseHttpUrl(raw: string, field: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid(`${field} "${raw}" is not an absolute URL; expected http:// or https:// and a host`);
  }
  // WHATWG URL parsing reads `http:///hook` as host "hook"; RFC 3986 (and the specification) sees no host there.
  const authority = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(raw.trim())?.[1] ?? '';
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '' || authority.replace(/^[^@]*@/, '').replace(/:\d*$/, '') === '') {
    throw invalid(`${field} "${raw}" must use http or https and name a host`);
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

/** GETs a URL as text within a time and size budget; throws an Error with a human message on any failure. */
export async function fetchText(rawUrl: string, options: FetchTextOptions): Promise<string> {
  const url = new URL(rawUrl);
  assertPublicLiteral(url, options.allowPrivateNetwork);
  try {
    return await guardedFetch(url, { redirect: 'follow' }, options, async (response) => {
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
      return Buffer.concat(chunks).toString('utf8');
    });
  } catch (error) {
    const cause = (error as { cause?: Error }).cause;
    if (cause instanceof OutboundBlockedError) throw cause;
    if ((error as Error).name === 'TimeoutError') throw new Error(`${rawUrl} did not answer within ${options.timeoutMs} ms`);
    throw error;
  }
}
