// Turns every error, ours or Fastify's, into `{ error, code, details? }` with the right status, in one place.
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ERRORS, listProblems, MAX_LISTED_PROBLEMS, ServiceError, type ErrorCode } from '../model/errors.js';
import { RuntimeClosedError, WorkerExitError } from '../runtime/errors.js';
import { CommitOutcomeUnknownError, outageOf } from '../model/outages.js';
import { quote, shorten } from '../runtime/worker/quote.js';
import { simplifyUnionErrors, type ValidationItem } from './union-errors.js';

export interface ErrorBody {
  error: string;
  code: ErrorCode;
  details?: unknown[];
}

/** Fastify's own error codes that are the client's fault, with the registered code we report (and its status). */
const FASTIFY_CLIENT_ERRORS: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_request',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_request',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_request',
};

/** What a schema refused, with the values allowed where the validator's own words leave them out. */
function validationMessage(v: ValidationItem): string {
  const params = v.params as { allowedValue?: unknown; allowedValues?: unknown[]; additionalProperty?: string };
  if (v.keyword === 'additionalProperties') return `must not have the field ${quote(params.additionalProperty)}`;
  if (v.keyword === 'const') return `must be ${JSON.stringify(params.allowedValue)}`;
  if (v.keyword === 'enum' && params.allowedValues) return `must be one of ${params.allowedValues.map((a) => JSON.stringify(a)).join(', ')}`;
  return v.message ?? 'is invalid';
}

/**
 * A value that may be only one (`active: true`) and is of another type: "must be true" says it all, and "must be
 * boolean" beside it read as a second problem.
 */
function withoutTypeBesideConst(refused: ValidationItem[]): ValidationItem[] {
  const constAt = new Set(refused.filter((v) => v.keyword === 'const').map((v) => v.instancePath));
  return constAt.size ? refused.filter((v) => v.keyword !== 'type' || !constAt.has(v.instancePath)) : refused;
}

function describe(error: FastifyError | ServiceError | Error): { status: number; body: ErrorBody } {
  if (error instanceof ServiceError) {
    const body: ErrorBody = { error: error.message, code: error.code };
    if (error.details?.length) body.details = error.details.slice(0, MAX_LISTED_PROBLEMS);
    return { status: error.status, body };
  }
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) {
    const refused = withoutTypeBesideConst(simplifyUnionErrors(fastifyError.validation as ValidationItem[]));
    const read = refused.slice(0, MAX_LISTED_PROBLEMS).map((v) => {
      const params = v.params as { missingProperty?: string; additionalProperty?: string } | undefined;
      // A field refused at the top level is named as a missing one is: an unknown one is the client's own, so shortened.
      const unknown = v.keyword === 'additionalProperties' && typeof params?.additionalProperty === 'string' ? shorten(params.additionalProperty) : undefined;
      return {
        path: shorten((v.instancePath || '').replace(/^\//, '').replace(/\//g, '.')),
        named: params?.missingProperty ?? unknown,
        message: validationMessage(v),
      };
    });
    const details = read.map(({ path, named, message }) => ({ in: fastifyError.validationContext, field: path || named, message }));
    // Said of the value at a path; a missing property is named by the message itself.
    const said = listProblems(read, ({ path, message }) => (path ? `${path} ${message}` : message), refused.length);
    return {
      status: 400,
      body: { error: `invalid ${fastifyError.validationContext ?? 'request'}: ${said}`, code: 'invalid_request', details },
    };
  }
  const known = fastifyError.code ? FASTIFY_CLIENT_ERRORS[fastifyError.code] : undefined;
  if (known) return { status: ERRORS[known].status, body: { error: fastifyError.message, code: known } };
  // SyntaxError from a body parser and other 4xx errors carrying statusCode are the client's fault.
  const status = fastifyError.statusCode;
  if (status && status >= 400 && status < 500) {
    return { status, body: { error: fastifyError.message, code: status === 429 ? 'rate_limited' : 'invalid_request' } };
  }
  return { status: 500, body: { error: 'internal error', code: 'internal_error' } };
}

/** Failures of a dependency rather than of the request: 503 (507 for a full disk) with Retry-After, so that clients try again. */
function asUnavailable(error: Error): ServiceError | undefined {
  if (error instanceof WorkerExitError || error instanceof RuntimeClosedError) {
    return new ServiceError('unavailable', `the component sandbox could not take the request now (${error.message}); try again`, undefined, 5);
  }
  const outage = outageOf(error);
  if (outage?.kind === 'disk_full') {
    return new ServiceError('insufficient_storage', "the data directory's disk is full: nothing was written; try again once there is room", undefined, 30);
  }
  if (error instanceof CommitOutcomeUnknownError) {
    // Said plainly: a client that sends it again may store it twice, one that does not may lose it.
    return new ServiceError(
      'unavailable',
      'the database connection was lost while this request was being committed: it may have been stored; try again shortly',
      undefined,
      5,
    );
  }
  if (outage?.writeRefused) {
    const message = `the file system refused the database's write (${outage.cause}): nothing was written; try again shortly`;
    return new ServiceError('unavailable', message, undefined, 5);
  }
  if (outage) return new ServiceError('unavailable', 'the database is unreachable: nothing was written; try again shortly', undefined, 5);
  return undefined;
}

/**
 * Says an outage in the log once, when its first request fails, and once more when a request succeeds again, with
 * how many it turned away meanwhile: a database down for a minute under load is two lines, not thousands. A request
 * answered without the database having been reached since the last refusal does not end it: a 404, a 400 or a
 * read (which goes on through SQLite's lock or a full disk) would otherwise end every outage at once, and the next
 * refusal start a new one, a pair of lines per request.
 */
class OutageLog {
  private current: { kind: string; since: number; refused: number; reachedAt: number } | undefined;

  /** `reached`: grows each time the database takes a write (Store.reached). */
  constructor(private readonly reached: () => number) {}

  failed(log: FastifyRequest['log'], error: ServiceError, cause: Error): void {
    if (this.current) {
      this.current.refused++;
      this.current.reachedAt = this.reached();
      return;
    }
    this.current = { kind: error.code, since: Date.now(), refused: 1, reachedAt: this.reached() };
    log.error({ err: cause, code: error.code }, `${error.message.split(':')[0]}; requests are answered ${error.status} until it recovers`);
  }

  answered(log: FastifyRequest['log'], status: number): void {
    if (!this.current || status >= 500 || this.reached() === this.current.reachedAt) return;
    const { since, refused } = this.current;
    this.current = undefined;
    log.warn({ refused, seconds: Math.round((Date.now() - since) / 1000) }, `recovered: requests are answered again after ${refused} were refused`);
  }
}

/** What an error is answered with: its status, its body, and the seconds of its Retry-After when it has one. */
export interface ErrorAnswer {
  status: number;
  body: ErrorBody;
  retryAfterSeconds?: number;
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The answer an error gets, logged as the error handler logs it. The error handler sends it; an answer already
     * streaming (the progress routes) carries it in its last event.
     */
    answerError(raised: Error, log: FastifyRequest['log']): ErrorAnswer;
  }
}

/**
 * 5xx answers that say what a custom-response run did (its component failed or never responded), not a fault of the
 * server: logged at info, as each was an error line with the server's stack, one per failing request of user code.
 */
const RUN_OUTCOMES = new Set<ErrorCode>(['run_failed', 'no_response']);

function answerError(outages: OutageLog, raised: Error, log: FastifyRequest['log']): ErrorAnswer {
  const unavailable = asUnavailable(raised);
  const error = unavailable ?? raised;
  const { status, body } = describe(error);
  // A database outage is said once (OutageLog); a sandbox that could not take one request, each time.
  if (unavailable && outageOf(raised)) outages.failed(log, unavailable, raised);
  else if (raised instanceof ServiceError && raised.code === 'unavailable') outages.failed(log, raised, raised);
  else if (unavailable) log.warn({ err: raised }, unavailable.message);
  else if (error instanceof ServiceError && RUN_OUTCOMES.has(error.code)) log.info({ code: error.code }, error.message);
  else if (status >= 500) log.error({ err: error }, 'request failed');
  else log.info({ code: body.code, status }, body.error);
  const retryAfterSeconds = error instanceof ServiceError ? error.retryAfterSeconds : undefined;
  return retryAfterSeconds === undefined ? { status, body } : { status, body, retryAfterSeconds };
}

export function installErrorHandling(app: FastifyInstance, databaseReached: () => number): void {
  // One per server: an outage is said once, whichever route (or streamed answer) meets it.
  const outages = new OutageLog(databaseReached);
  app.decorate('answerError', (raised: Error, log: FastifyRequest['log']) => answerError(outages, raised, log));
  app.addHook('onResponse', (request, reply, done) => {
    outages.answered(request.log, reply.statusCode);
    done();
  });
  app.setErrorHandler((raised: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    // A body the router's parsers refuse (an empty one with a JSON type, say) on a route that does not exist: what
    // matters is that the route does not exist, as for the same request with no body.
    if (request.is404) return answerUnrouted(app, request, reply);
    const { status, body, retryAfterSeconds } = answerError(outages, raised, request.log);
    // Fastify's own words ("Unsupported Media Type") name neither the type sent nor the one expected.
    if (body.code === 'unsupported_media_type') {
      const sent = request.headers['content-type'];
      const instead = sent === undefined ? ' (this request has no Content-Type)' : `, not ${quote(sent)}`;
      body.error = `a request body must be JSON, sent with Content-Type: application/json${instead}`;
    }
    // Nor do theirs for a body over the limit ("Request body is too large"): which limit, and whose setting it is.
    if (body.code === 'payload_too_large') {
      const limit = request.routeOptions.bodyLimit;
      body.error = request.url.startsWith('/v1')
        ? `the request body is over ${limit} bytes, the most this server takes (its --body-limit)`
        : `the request body is over ${limit} bytes, the most an endpoint takes`;
    }
    if (status === 401) reply.header('www-authenticate', 'Bearer');
    if (retryAfterSeconds !== undefined) reply.header('retry-after', String(retryAfterSeconds));
    return reply.status(status).send(body);
  });
  app.setNotFoundHandler((request, reply) => answerUnrouted(app, request, reply));
}

const ROUTED_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/**
 * A request no route takes: 404 when no method has a route at its path; else OPTIONS is answered 204 and any other
 * method 405 `method_not_allowed`, both with `Allow` naming the methods the path answers.
 */
function answerUnrouted(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const path = request.url.split('?')[0] ?? '/';
  const allowed = ROUTED_METHODS.filter((method) => {
    try {
      return app.findRoute({ method, url: path }) !== null;
    } catch {
      return false;
    }
  });
  if (allowed.length === 0) return reply.status(404).send(routeNotFound(request));
  reply.header('allow', [...allowed, 'OPTIONS'].join(', '));
  if (request.method === 'OPTIONS') return reply.status(204).send();
  const body: ErrorBody = { error: `${request.method} is not a method of ${path}; it answers ${allowed.join(', ')}`, code: 'method_not_allowed' };
  return reply.status(ERRORS.method_not_allowed.status).send(body);
}

function routeNotFound(request: FastifyRequest): ErrorBody {
  return { error: `route ${request.method} ${request.url.split('?')[0]} not found`, code: 'not_found' };
}

/**
 * The longest path parameter the router matches (its `maxParamLength`; its default is 100): a data store's name is up
 * to 200 characters, each up to 9 once percent-encoded.
 */
export const MAX_PATH_SEGMENT_CHARS = 1800;

/** Router errors raised before a route is found: a path segment past MAX_PATH_SEGMENT_CHARS, broken percent-encoding. */
export function answerFrameworkError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const message =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? `a path segment is longer than ${MAX_PATH_SEGMENT_CHARS} characters`
      : 'the path is not valid percent-encoded text';
  const body: ErrorBody = { error: message, code: 'invalid_request' };
  reply.status(ERRORS.invalid_request.status).send(body);
}

/**
 * Errors Node's HTTP parser raises before there is a request (headers too large, a timeout, malformed HTTP): the
 * body is a registered error like any other, written on the socket, which is then closed. Returns the status it
 * wrote, if it could write one.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): number | undefined {
  if (error.code === 'ECONNRESET' || socket.destroyed) return undefined;
  const [code, message]: [ErrorCode, string] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? ['headers_too_large', 'the request line and headers exceed 16 KiB']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? ['request_timeout', 'the request did not arrive in time']
        : ['invalid_request', 'the request is not valid HTTP'];
  const body = JSON.stringify({ error: message, code } satisfies ErrorBody);
  const status = ERRORS[code].status;
  const answered = socket.writable;
  if (answered) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
  return answered ? status : undefined;
}
