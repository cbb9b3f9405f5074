// HTTP endpoints of sources: `/e/<endpoint_id>[/any/path]`, any method, durably queued before the answer.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { endpointPathPrefix } from '../../model/endpoints.js';
import { httpEvent, type IngressService } from '../../services/ingress.js';
import type { HttpResponse } from '../../runtime/types.js';

/** The largest body an endpoint accepts (DESIGN.md section 3). */
export const INGRESS_BODY_LIMIT = 512 * 1024;

// HEAD is served by Fastify through the GET route.
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/**
 * Headers that frame the message or concern the connection, not the answer: the server sets them. Passed on, a
 * `transfer-encoding: chunked` beside the server's `content-length` would desynchronise a proxy that shares its
 * connection between clients, so that one account's endpoint could answer another's requests.
 */
const SERVER_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade']);

/**
 * Headers by which a response widens its reach over the origin it shares with the console and every other account's
 * endpoint: a service worker's scope beyond its own path, and the clearing of the visitor's storage for the origin.
 */
const ORIGIN_HEADERS = new Set(['service-worker-allowed', 'clear-site-data']);

/**
 * Added to every custom response, beside a policy of the component's own (a browser enforces both): a page an
 * endpoint serves runs in an origin of its own, not the console's, so its script cannot read the key a console tab
 * keeps in session storage, register a service worker over the console, or call the API as the visitor. Scripts,
 * forms and popups still work.
 */
const SANDBOX_POLICY = 'sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads';

/**
 * A cookie narrowed to its endpoint's own path (`Path` set to it, `Domain` dropped). Endpoints share one origin with the
 * console and every other account's endpoints: a cookie for `/` would reach all of them, so that one account's
 * endpoint could plant values another account's runs read, or fill the visitor's cookies past what a server takes.
 */
export function cookieForEndpoint(setCookie: string, endpointPath: string): string {
  const [pair, ...attributes] = setCookie.split(';');
  const kept = attributes.filter((attribute) => {
    const name = attribute.split('=', 1)[0]!.trim().toLowerCase();
    return name !== 'path' && name !== 'domain';
  });
  return [pair, ...kept, ` Path=${endpointPath}`].join(';');
}

function sendRunResponse(reply: FastifyReply, response: HttpResponse, endpointPath: string): FastifyReply {
  reply.status(response.status);
  for (const [name, value] of Object.entries(response.headers)) {
    const lower = name.toLowerCase();
    if (lower === 'set-cookie') {
      reply.header(name, Array.isArray(value) ? value.map((cookie) => cookieForEndpoint(cookie, endpointPath)) : cookieForEndpoint(value, endpointPath));
    } else if (!SERVER_HEADERS.has(lower) && !ORIGIN_HEADERS.has(lower)) reply.header(name, value);
  }
  const policy = reply.getHeader('content-security-policy');
  reply.header('content-security-policy', policy === undefined ? SANDBOX_POLICY : `${String(policy)}, ${SANDBOX_POLICY}`);
  // A 1xx status (which respond() allows, from 100) is interim in HTTP: the client waits for a final one that never
  // comes. Closing the connection after it ends the exchange instead of leaving the client hanging.
  if (response.status < 200) reply.header('connection', 'close');
  const body = response.body;
  if (body === null || body === undefined) return reply.send();
  if (typeof body === 'string' || Buffer.isBuffer(body)) return reply.send(body);
  return reply.type('application/json').send(JSON.stringify(body));
}

export function ingressRoutes(services: { ingress: IngressService }, settings: { publicUrl: string }) {
  const endpointPaths = endpointPathPrefix(settings.publicUrl);
  return async (app: FastifyInstance) => {
    // Endpoints take any content type; the event carries the raw body and a parsed one.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: INGRESS_BODY_LIMIT }, (_request, body, done) => done(null, body));
    // Set first, so that a header the source sets with respond() replaces it.
    app.addHook('onRequest', (_request, reply, done) => {
      reply.header('access-control-allow-origin', '*');
      done();
    });

    const handle = async (request: FastifyRequest<{ Params: { endpointId: string; '*'?: string } }>, reply: FastifyReply) => {
      // Nearly every request is admitted from cache without waiting; skipping the await saves microtask trips.
      const admitted = services.ingress.admit(request.params.endpointId);
      const target = admitted instanceof Promise ? await admitted : admitted;
      const subPath = request.params['*'] ?? '';
      // The router drops a trailing slash (ignoreTrailingSlash); the event keeps the path as it was sent.
      const queryAt = request.url.indexOf('?');
      const slashed = subPath !== '' && request.url.charCodeAt((queryAt < 0 ? request.url.length : queryAt) - 1) === 47;
      const event = httpEvent(
        request.method,
        slashed ? `/${subPath}/` : `/${subPath}`,
        { ...(request.query as Record<string, unknown>) },
        request.headers,
        request.body as Buffer | undefined,
        // As the reference service gives them: the address it came from (through --trust-proxy) and where it was sent.
        { clientIp: request.ip, url: `${settings.publicUrl}${request.url}` },
      );
      const response = await services.ingress.accept(target, event);
      if (response) return sendRunResponse(reply, response, `${endpointPaths}${request.params.endpointId}`);
      return reply.status(200).send({ success: true });
    };

    for (const url of ['/e/:endpointId', '/e/:endpointId/*']) {
      app.route({ method: [...METHODS], url, bodyLimit: INGRESS_BODY_LIMIT, schema: { hide: true }, handler: handle });
      app.route({
        method: 'OPTIONS',
        url,
        schema: { hide: true },
        handler: async (request, reply) => {
          reply.header('access-control-allow-origin', '*');
          reply.header('access-control-allow-methods', [...METHODS, 'HEAD', 'OPTIONS'].join(', '));
          reply.header('access-control-allow-headers', String(request.headers['access-control-request-headers'] ?? '*'));
          reply.header('access-control-max-age', '86400');
          return reply.status(204).send();
        },
      });
    }
  };
}
