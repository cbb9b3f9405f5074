// HTTP endpoints of sources: which source an endpoint id names, the event a request becomes, and its queuing.
import { jsonNestsDeeperThan, MAX_JSON_DEPTH } from '../model/json-depth.js';
import querystring from 'node:querystring';
import { LRUCache } from 'lru-cache';
import { countedUpTo } from '../lib/cache-bounds.js';
import type { Store } from '../store/database.js';
import { findSourceByEndpoint } from '../store/sources.js';
import { findWorkflowByEndpoint } from '../store/workflows.js';
import type { WorkflowTrigger } from '../model/workflows.js';
import { isId } from '../model/ids.js';
import type { WorkflowRunService } from './workflow-runs.js';
import { loadComponent } from '../store/components.js';
import { componentInfo } from '../store/components.js';
import type { HttpResponse } from '../runtime/types.js';
import { awaitedThroughOutage, ServiceError } from '../model/errors.js';
import type { Dispatcher } from '../engine/dispatcher.js';
import type { AnswerFailure } from '../engine/responders.js';
import type { QuotaService } from './quotas.js';

export interface EndpointTarget {
  /** The source (`dc_`) or workflow (`p_`) the endpoint belongs to. */
  sourceId: string;
  userId: string;
  active: boolean;
  customResponse: boolean;
}

/** The event `run` receives for an HTTP request. */
export interface HttpEvent {
  method: string;
  path: string;
  query: Record<string, unknown>;
  headers: Record<string, string | string[] | undefined>;
  bodyRaw: string;
  body: unknown;
  /** The client's address (X-Forwarded-For's, from proxies `--trust-proxy` names). */
  client_ip: string;
  /** The URL the request was sent to: the public URL, the endpoint's path and the query. */
  url: string;
}

/** Entries live this long, so that other nodes' changes reach this one; local changes evict at once. */
const TTL_MS = 5_000;

/** Resolves endpoint ids to sources with a small cache, since every ingress request needs it. */
export class EndpointDirectory {
  // Boxed: the cache holds no null, and "no such endpoint" is worth remembering too.
  private readonly cache: LRUCache<string, { target: EndpointTarget | null }>;
  /** Each cached source's endpoint, so that evicting a source touches one entry, not the whole cache. */
  private readonly endpointOfSource = new Map<string, string>();
  /** Endpoints cached as unknown: one may belong to a source created since (on another node). */
  private readonly unknownEndpoints = new Set<string>();

  constructor(
    private readonly store: Store,
    /** How long an entry serves before it is read again; tests lengthen it to show that signals evict. */
    ttlMs: number = TTL_MS,
  ) {
    this.cache = new LRUCache<string, { target: EndpointTarget | null }>({
      ...countedUpTo(100_000),
      ttl: ttlMs,
      // An overwrite ('set') keeps the key: resolve() indexes the new value itself.
      dispose: (entry, endpointId, reason) => {
        if (reason !== 'set') this.unindex(endpointId, entry.target);
      },
    });
  }

  /** What the cache knows of an endpoint without waiting: its target, null for none, undefined when unknown or stale. */
  known(endpointId: string): EndpointTarget | null | undefined {
    return this.cache.get(endpointId)?.target;
  }

  async resolve(endpointId: string): Promise<EndpointTarget | null> {
    const known = this.known(endpointId);
    if (known !== undefined) return known;
    const target = await this.load(endpointId);
    this.cache.set(endpointId, { target });
    if (target) this.endpointOfSource.set(target.sourceId, endpointId);
    else this.unknownEndpoints.add(endpointId);
    return target;
  }

  /** Forgets what is known of a source's endpoint (after an update or delete), and every endpoint known as unknown. */
  evictSource(sourceId: string): void {
    const endpointId = this.endpointOfSource.get(sourceId);
    if (endpointId !== undefined) this.cache.delete(endpointId);
    for (const unknown of this.unknownEndpoints) this.cache.delete(unknown);
  }

  private unindex(endpointId: string, target: EndpointTarget | null): void {
    if (!target) this.unknownEndpoints.delete(endpointId);
    else if (this.endpointOfSource.get(target.sourceId) === endpointId) this.endpointOfSource.delete(target.sourceId);
  }

  evictAll(): void {
    this.cache.clear();
  }

  private async load(endpointId: string): Promise<EndpointTarget | null> {
    // Endpoint ids are letters and digits: anything else (a NUL, which PostgreSQL cannot take) names no endpoint.
    if (!/^[A-Za-z0-9_-]{1,100}$/.test(endpointId)) return null;
    const source = await findSourceByEndpoint(this.store.db, endpointId);
    if (!source) {
      const workflow = await findWorkflowByEndpoint(this.store.db, endpointId);
      if (!workflow) return null;
      const trigger = JSON.parse(workflow.trigger ?? 'null') as WorkflowTrigger | null;
      // A workflow keeps its endpoint while its trigger is not HTTP, which serves nothing until it is again.
      if (trigger?.type !== 'http') return null;
      const customResponse = trigger.custom_response;
      return { sourceId: workflow.id, userId: workflow.user_id, active: workflow.active === 1, customResponse };
    }
    const component = await loadComponent(this.store.db, source.component_id);
    const http = component && componentInfo(component).props.find((p) => p.type === '$.interface.http');
    // A source keeps its endpoint while its code has no HTTP prop, which serves nothing until it has one again.
    if (!http) return null;
    return { sourceId: source.id, userId: source.user_id, active: source.active === 1, customResponse: http?.customResponse === true };
  }
}

/** Parses the body as its content type says: JSON, form data, else the raw text. Unparseable or too deep JSON stays raw. */
export function httpEvent(
  method: string,
  path: string,
  query: Record<string, unknown>,
  headers: HttpEvent['headers'],
  raw: Buffer | undefined,
  from: { clientIp: string; url: string },
): HttpEvent {
  const bodyRaw = raw ? raw.toString('utf8') : '';
  const type = String(headers['content-type'] ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
  let body: unknown = bodyRaw;
  // Too deep to be data anyone sends on purpose: kept as the raw text, like JSON that does not parse.
  if (bodyRaw && (type === 'application/json' || type.endsWith('+json')) && !jsonNestsDeeperThan(bodyRaw, MAX_JSON_DEPTH)) {
    try {
      body = JSON.parse(bodyRaw);
    } catch {
      body = bodyRaw;
    }
  } else if (bodyRaw && type === 'application/x-www-form-urlencoded') {
    body = { ...querystring.parse(bodyRaw) };
  }
  return { method, path, query, headers, bodyRaw, body, client_ip: from.clientIp, url: from.url };
}

export interface IngressSettings {
  /** A custom-response request waits this long for `respond()`, plus five seconds for the run to be taken. */
  runTimeoutSeconds: number;
}

/** Admits endpoint requests and queues them durably; a custom-response request waits for the run's answer. */
export class IngressService {
  constructor(
    private readonly endpoints: EndpointDirectory,
    private readonly quotas: QuotaService,
    private readonly dispatcher: Dispatcher,
    private readonly workflowRuns: WorkflowRunService,
    private readonly settings: IngressSettings,
  ) {}

  /**
   * The active source an endpoint names, admitted under its account's quota (404 and 429 otherwise). Nearly every
   * request finds both answers cached; it then gets them without waiting, which saves two microtask trips.
   */
  admit(endpointId: string): EndpointTarget | Promise<EndpointTarget> {
    const known = this.endpoints.known(endpointId);
    if (known === undefined) return this.endpoints.resolve(endpointId).then((target) => this.admitTarget(target));
    return this.admitTarget(known);
  }

  private admitTarget(target: EndpointTarget | null): EndpointTarget | Promise<EndpointTarget> {
    if (!target || !target.active) throw new ServiceError('not_found', 'no active source or workflow at this endpoint');
    const admitted = this.quotas.admit(target.userId);
    return admitted ? admitted.then(() => target) : target;
  }

  /**
   * Queues the request's run durably. Resolves with undefined once queued, or, for a custom-response source, with
   * the response its run gave to `respond()` (500 run_failed or 504 no_response when none came).
   */
  async accept(target: EndpointTarget, event: HttpEvent): Promise<HttpResponse | undefined> {
    if (isId(target.sourceId, 'p')) return this.workflowRuns.acceptHttp(target.sourceId, target.userId, event, target.customResponse);
    const invocation = { sourceId: target.sourceId, userId: target.userId, trigger: 'http' as const, event };
    if (!target.customResponse) {
      this.queued(target, await this.dispatcher.enqueue([invocation], undefined, true));
      return undefined;
    }
    type Answer = { response?: HttpResponse | undefined; failure?: AnswerFailure | undefined };
    let settle!: (value: Answer) => void;
    const answered = new Promise<Answer>((resolve) => (settle = resolve));
    const [invocationId] = this.queued(target, await this.dispatcher.enqueue([invocation], [(response, failure) => settle({ response, failure })], true));
    const timer = setTimeout(() => settle({}), this.settings.runTimeoutSeconds * 1000 + 5000);
    const { response, failure } = await answered;
    clearTimeout(timer);
    this.dispatcher.forgetResponder(invocationId!);
    if (response) return response;
    if (failure && failure.name !== 'TimeoutError') {
      throw new ServiceError('run_failed', `the source failed before responding: ${failure.message}`);
    }
    // Its run could not be taken (or commit) while the database is away: that is no fault of the component's.
    if (!failure && this.dispatcher.databaseDown) throw awaitedThroughOutage(`invocation ${invocationId}`);
    throw new ServiceError('no_response', 'the source did not respond');
  }

  /**
   * The ids queued, or 404 when none was: the source was switched off through another node (committed before this
   * insert) whose signal has not reached this node's cache yet, which forgets the endpoint now.
   */
  private queued(target: EndpointTarget, ids: string[]): string[] {
    if (ids.length) return ids;
    this.endpoints.evictSource(target.sourceId);
    throw new ServiceError('not_found', 'no active source or workflow at this endpoint');
  }

  /** Forgets what is known of a source's or workflow's endpoint (after an update or delete). */
  evictSource(sourceId: string): void {
    this.endpoints.evictSource(sourceId);
  }

  /** Anything may have changed (a cluster signal was missed): every endpoint is looked up again. */
  evictAll(): void {
    this.endpoints.evictAll();
  }
}
