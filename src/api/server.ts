// Builds the Fastify application: conventions shared by every route, then one plugin per resource.
import type { Metrics } from '../metrics/metrics.js';
import { Ajv, type ValidateFunction } from 'ajv';
import Fastify, { errorCodes, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import rateLimit from '@fastify/rate-limit';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Logger } from 'pino';
import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import type { Config } from '../config.js';
import type { ComponentService } from '../services/components.js';
import type { DataStoreService } from '../services/data-stores.js';
import type { PropConfigurationService } from '../services/prop-configuration.js';
import type { ConnectedAccountService } from '../services/connected-accounts.js';
import type { EventService } from '../services/events.js';
import type { HealthService } from '../services/health.js';
import type { IngressService } from '../services/ingress.js';
import type { LiveStreams } from '../services/live.js';
import type { RunService } from '../services/runs.js';
import type { SourceService } from '../services/sources.js';
import type { SubscriptionService } from '../services/subscriptions.js';
import type { UserService } from '../services/users.js';
import type { WebhookService } from '../services/webhooks.js';
import type { WorkflowService } from '../services/workflows.js';
import type { WorkflowRunService } from '../services/workflow-runs.js';
import { invalid, ServiceError } from '../model/errors.js';
import { jsonNestsDeeperThan, MAX_JSON_DEPTH } from '../model/json-depth.js';
import { refuseUnstorableText } from './text-guard.js';
import { installAuth } from './auth.js';
import { answerClientError, answerFrameworkError, installErrorHandling, MAX_PATH_SEGMENT_CHARS } from './error-handler.js';
import { installFieldSelection } from './fields.js';
import { DebugRequestLines, lazyChildLoggerFactory } from './request-logger.js';
import { healthRoutes } from './routes/health.js';
import { userRoutes } from './routes/users.js';
import { componentRoutes } from './routes/components.js';
import { sourceRoutes } from './routes/sources.js';
import { eventRoutes } from './routes/events.js';
import { ingressRoutes } from './routes/ingress.js';
import { subscriptionRoutes } from './routes/subscriptions.js';
import { webhookRoutes } from './routes/webhooks.js';
import { sseRoutes } from './routes/sse.js';
import { workflowRoutes } from './routes/workflows.js';
import { dataStoreRoutes } from './routes/data-stores.js';
import { accountRoutes } from './routes/accounts.js';
import { consoleRoutes } from './routes/console.js';
import { installSerializersOnFirstUse, validatorOnFirstUse } from './compile-on-first-use.js';
import { completeDocument, markOptionalBodies } from './openapi-document.js';
import { closeConnectionsAfterLastAnswer } from './drain.js';

export type App = FastifyInstance;

/** What the HTTP layer may use: services only, never the store, the engine or the runtime. Each route takes its part. */
export interface ApiServices {
  readonly config: Pick<Config, 'bodyLimit' | 'publicUrl' | 'rateLimit' | 'minTimerInterval' | 'trustProxy'>;
  readonly users: UserService;
  readonly components: ComponentService;
  readonly propConfiguration: PropConfigurationService;
  readonly dataStores: DataStoreService;
  readonly sources: SourceService;
  readonly runs: RunService;
  readonly events: EventService;
  readonly live: LiveStreams;
  readonly ingress: IngressService;
  readonly subscriptions: SubscriptionService;
  readonly webhooks: WebhookService;
  readonly workflows: WorkflowService;
  readonly workflowRuns: WorkflowRunService;
  readonly connectedAccounts: ConnectedAccountService;
  readonly health: HealthService;
}

// A random prefix per process and a counter: unique enough to follow a request through the logs, and cheap.
const requestIdPrefix = randomUUID().slice(0, 8);
let requestCount = 0;
/** Where text stops being JSON, in JSON.parse's words (which take a "__proto__" key as an ordinary one); undefined for JSON. */
function jsonSyntaxError(text: string): string | undefined {
  try {
    JSON.parse(text);
    return undefined;
  } catch (error) {
    return withoutExcerpt((error as Error).message, text);
  }
}

/** V8's "Unexpected token" message: the token, then the body (21 characters or fewer) or 10 characters either side of it. */
const UNEXPECTED_TOKEN = /^Unexpected token '.*?', (\.\.\.)?"(.*)"(\.\.\.)? is not valid JSON$/s;

/**
 * V8 quotes the body around an unexpected token, which may be a credential or a secret prop's value mistyped (an
 * unquoted token): the 400 and the log line with it would repeat it. Said instead by position, which the excerpt
 * gives (V8: the 10 characters before the token, unless it starts the body), when it can be found once.
 */
function withoutExcerpt(message: string, text: string): string {
  const match = UNEXPECTED_TOKEN.exec(message);
  if (!match) return message;
  const [, before, excerpt = '', after] = match;
  let position: number | undefined;
  if (!before && after) position = excerpt.length - 10;
  else if (before && !after) position = text.length - excerpt.length + 10;
  else if (before && after && text.indexOf(excerpt) === text.lastIndexOf(excerpt)) position = text.indexOf(excerpt) + 10;
  return position === undefined ? 'Unexpected token' : `Unexpected token in JSON at position ${position}`;
}

function nextRequestId(): string {
  return `${requestIdPrefix}-${(++requestCount).toString(36)}`;
}

/**
 * Paths and query strings are text, so their numbers and booleans are read out of it; a JSON body already carries
 * types, and a number where the schema wants a string is the client's mistake to report (400), not to convert.
 * Validators and serializers are compiled on first use (see compile-on-first-use.ts).
 */
function installSchemaCompilers(app: FastifyInstance): void {
  const options = { useDefaults: true, removeAdditional: false, allErrors: true, addUsedSchema: false } as const;
  const fromText = new Ajv({ ...options, coerceTypes: 'array' });
  const fromJson = new Ajv({ ...options, coerceTypes: false });
  app.setValidatorCompiler(({ schema, httpPart }) =>
    validatorOnFirstUse(() => (httpPart === 'body' ? fromJson.compile(schema) : decimalNumbersOnly(schema, fromText.compile(schema)))),
  );
  installSerializersOnFirstUse(app);
}

/**
 * How a number is written in a path or a query string: decimal digits, a sign, and for non-integers a fraction; at
 * most 15 digits, which every safe integer of ours fits (more would read as Infinity, past Ajv's range checks).
 */
const WRITTEN_AS = { integer: /^-?\d{1,15}$/, number: /^-?\d{1,15}(\.\d{1,15})?$/ } as const;

/**
 * Ajv converts any text JavaScript reads as a number (`0x10`, `1e2`, ` 1`, `1e400` as Infinity, past the range
 * checks it makes on finite numbers only): a number in a path or a query string must be written as WRITTEN_AS says.
 */
function decimalNumbersOnly(schema: unknown, validate: ValidateFunction): ValidateFunction {
  const properties = ((schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {}) as Record<string, { type?: unknown }>;
  const numeric = Object.entries(properties).flatMap(([name, property]) =>
    property.type === 'integer' || property.type === 'number' ? [[name, WRITTEN_AS[property.type]] as const] : [],
  );
  if (!numeric.length) return validate;
  const checked = ((data: unknown) => {
    if (typeof data === 'object' && data !== null) {
      const fields = data as Record<string, unknown>;
      const bad = numeric.find(([name, pattern]) => typeof fields[name] === 'string' && !pattern.test(fields[name] as string));
      if (bad) {
        const [name, pattern] = bad;
        const message = pattern === WRITTEN_AS.integer ? 'must be an integer of at most 15 decimal digits' : 'must be a number of at most 15 decimal digits';
        checked.errors = [{ instancePath: `/${name}`, schemaPath: '#', keyword: 'type', params: {}, message }];
        return false;
      }
    }
    const valid = validate(data) as boolean;
    checked.errors = validate.errors;
    return valid;
  }) as ValidateFunction;
  return checked;
}

/**
 * How long a client may take to send a whole request, headers and body: one that stalls mid-body is answered 408
 * instead of holding its connection open for ever (Fastify disables Node's limit by default). Live streams are not
 * cut by it: their request ends with its headers.
 */
export const REQUEST_TIMEOUT_MS = 60_000;

export interface BuildApiOptions {
  metrics?: Metrics | undefined;
  /** REQUEST_TIMEOUT_MS by default; tests shorten it. */
  requestTimeoutMs?: number | undefined;
}

export async function buildApi(services: ApiServices, logger: Logger, options: BuildApiOptions = {}): Promise<App> {
  const { config } = services;
  const requestTimeout = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  const app = Fastify({
    requestTimeout,
    // Node checks its timeouts on this interval (30 s by default), and wants the headers' limit within the request's.
    http: { headersTimeout: Math.min(60_000, requestTimeout), connectionsCheckingInterval: Math.min(30_000, Math.ceil(requestTimeout / 4)) },
    // pino's Logger is wider than Fastify's logger interface; typing it as the base keeps plugin types compatible.
    loggerInstance: logger as FastifyBaseLogger,
    childLoggerFactory: lazyChildLoggerFactory,
    logController: new DebugRequestLines(),
    bodyLimit: config.bodyLimit,
    trustProxy: config.trustProxy,
    genReqId: (req) =>
      typeof req.headers['x-request-id'] === 'string' && req.headers['x-request-id'].length <= 128 ? req.headers['x-request-id'] : nextRequestId(),
    requestIdHeader: false,
    // Answered by the hook below instead, in the registered error format and with Retry-After.
    return503OnClosing: false,
    // Neither answer passes the onResponse hook that counts requests, so each counts its own (no route matched).
    frameworkErrors: (error, request, reply) => {
      answerFrameworkError(error, request, reply);
      options.metrics?.requestAnswered('unmatched', reply.statusCode);
    },
    clientErrorHandler: (error, socket) => {
      const status = answerClientError(error, socket);
      if (status !== undefined) options.metrics?.requestAnswered('unmatched', status);
    },
    // The specification writes some paths with a trailing slash (`POST /sources/`) and some without. A path segment may
    // be a data store's name (see MAX_PATH_SEGMENT_CHARS).
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PATH_SEGMENT_CHARS },
    // Clients that encode each path segment (encodeURIComponent) send `$errors` as `%24errors`; the router would not
    // match it to the route's `$errors`.
    rewriteUrl: (req) => (req.url?.includes('/%24') ? req.url.replace(/\/%24(errors|logs)(?=\/)/gi, '/$$$1') : (req.url ?? '/')),
  }).withTypeProvider<TypeBoxTypeProvider>();
  installSchemaCompilers(app);
  // First, so that it counts the requests the next hook turns away too.
  closeConnectionsAfterLastAnswer(app, () => services.health.isStopping());
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    // A graceful stop has begun: requests already running finish; new ones (on open keep-alive connections) are
    // turned away at once, so that the client or its load balancer tries another node. Probes still answer. The
    // answer closes its connection (closeConnectionsAfterLastAnswer), once the request's body is read: a connection
    // closed with part of it unread is reset, and the client loses the answer.
    if (services.health.isStopping() && request.url !== '/readyz' && request.url !== '/healthz') {
      const turnAway = () =>
        reply.code(503).header('retry-after', '5').send({ error: 'the server is stopping: nothing was done; try again shortly', code: 'unavailable' });
      if (request.raw.readableEnded) turnAway();
      else request.raw.once('end', turnAway).resume();
      return;
    }
    done();
  });
  const { metrics } = options;
  if (metrics) {
    // The route template (`/e/:endpointId`), never the path: ids would make a label per resource.
    app.addHook('onResponse', (request, reply, done) => {
      metrics.requestAnswered(request.routeOptions.url ?? 'unmatched', reply.statusCode);
      done();
    });
  }

  installErrorHandling(app, () => services.health.databaseReached());
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Tributary REST API', version: '1.0.0', description: 'Pipedream-compatible REST API v1 for self-hosted event sources.' },
      servers: [{ url: config.publicUrl }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    transform: markOptionalBodies,
    transformObject: completeDocument,
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(healthRoutes(services));
  // The web console at `/`: a client of /v1 like any other, in the same process so that it needs no CORS.
  await app.register(consoleRoutes({ minTimerInterval: config.minTimerInterval }));
  await app.register(ingressRoutes(services, { publicUrl: config.publicUrl }));
  // The API: /v1, and the walkthrough's SSE address outside it (endpoints check their ids themselves, in
  // IngressService, so that the hot path pays for no hook). Both take the key first (no key is a 401 whatever the query
  // or Last-Event-ID) and share one rate limit per key.
  await app.register(async (api) => {
    installAuth(api, services.users);
    refuseUnstorableText(api, ['params', 'query', 'body']);
    if (config.rateLimit > 0) {
      await api.register(rateLimit, {
        max: config.rateLimit,
        timeWindow: 60_000,
        hook: 'preHandler',
        keyGenerator: (request) => request.account?.id ?? request.ip,
        errorResponseBuilder: (_request, context) =>
          new ServiceError('rate_limited', `rate limit of ${context.max} requests per minute exceeded; retry in ${Math.ceil(context.ttl / 1000)} s`),
      });
    }
    installFieldSelection(api);
    await api.register(sseRoutes(services));
    await api.register(
      async (v1) => {
        // Only JSON bodies reach the API; anything else is a 415 instead of a confusing validation error.
        v1.removeAllContentTypeParsers();
        const parseJson = v1.getDefaultJsonParser('error', 'error');
        v1.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, raw, done) => {
          // Many clients send the JSON content type with every request, bodyless ones too (query-only POSTs and
          // DELETEs): an empty body is no body, which each route's schema then accepts or refuses as such.
          if (raw.length === 0) {
            done(null, undefined);
            return;
          }
          // JSON is UTF-8 (RFC 8259): bytes that are not (a Latin-1 é, an encoded lone surrogate) would otherwise be
          // decoded to U+FFFD and stored as such, the request's text silently changed.
          if (!isUtf8(raw as Buffer)) {
            done(invalid('the JSON body is not valid UTF-8'), undefined);
            return;
          }
          const body = (raw as Buffer).toString('utf8');
          if (jsonNestsDeeperThan(body, MAX_JSON_DEPTH)) {
            done(invalid(`the JSON body nests more than ${MAX_JSON_DEPTH} levels deep`), undefined);
            return;
          }
          parseJson(request, body, (error, parsed) => {
            if (!error) {
              done(null, parsed);
              return;
            }
            // The parser refuses a "__proto__" key (and "constructor": { "prototype" }) as it refuses broken JSON, and in
            // words that say neither which nor where: said as what it is, broken JSON with where it breaks.
            const syntax = jsonSyntaxError(body);
            if (syntax === undefined) done(invalid('the JSON body holds a "__proto__" key or a "constructor" with a "prototype", which no field accepts'));
            else done(invalid(`the body sent as application/json is not JSON: ${syntax}`));
          });
        });
        // An empty body of another type is no body either (`curl -X POST -d ''` sends one as form data); any other is a 415.
        v1.addContentTypeParser('*', { parseAs: 'buffer' }, (request, raw, done) =>
          raw.length === 0 ? done(null, undefined) : done(new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE(request.headers['content-type']), undefined),
        );
        await v1.register(userRoutes(services));
        await v1.register(componentRoutes(services));
        await v1.register(sourceRoutes(services));
        await v1.register(eventRoutes(services));
        await v1.register(sseRoutes(services));
        await v1.register(subscriptionRoutes(services));
        await v1.register(webhookRoutes(services));
        await v1.register(workflowRoutes(services));
        await v1.register(dataStoreRoutes(services));
        await v1.register(accountRoutes(services));
      },
      { prefix: '/v1' },
    );
  });
  return app as unknown as App;
}
