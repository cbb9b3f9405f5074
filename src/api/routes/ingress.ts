// HTTP endpoints of sources: `/e/<endpoint_id>[/any/path]`, any method, durably queued before the answer.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../../app.js';
import { httpEvent } from '../../core/http-ingress.js';
import type { HttpResponse, InvocationOutcome } from '../../runtime/types.js';

/** The largest body an endpoint accepts (DESIGN.md section 3). */
export const INGRESS_BODY_LIMIT = 512 * 1024;

// HEAD is served by Fastify through the GET route.
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

function sendRunResponse(reply: FastifyReply, response: HttpResponse): FastifyReply {
  reply.status(response.status);
  for (const [name, value] of Object.entries(response.headers)) reply.header(name, value);
  const body = response.body;
  if (body === null || body === undefined) return reply.send();
  if (typeof body === 'string' || Buffer.isBuffer(body)) return reply.send(body);
  return reply.type('application/json').send(JSON.stringify(body));
}

export function ingressRoutes(services: Services) {
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
      // Nearly every request hits the caches; skipping the awaits there saves two trips through the microtask queue.
      const { endpointId } = request.params;
      const known = services.endpoints.known(endpointId);
      const target = known === undefined ? await services.endpoints.resolve(endpointId) : known;
      if (!target || !target.active) {
        return reply.status(404).send({ error: 'no active source at this endpoint', code: 'not_found' });
      }
      const quota = services.quotas.known(target.userId) ?? (await services.quotas.check(target.userId));
      if (!quota.allowed) {
        reply.header('retry-after', String(quota.retryAfterSeconds));
        return reply.status(429).send({ error: quota.reason, code: 'quota_exceeded' });
      }
      const subPath = request.params['*'] ?? '';
      const event = httpEvent(
        request.method,
        `/${subPath}`,
        { ...(request.query as Record<string, unknown>) },
        request.headers,
        request.body as Buffer | undefined,
      );
      const invocation = { sourceId: target.sourceId, userId: target.userId, trigger: 'http' as const, event };
      if (!target.customResponse) {
        await services.dispatcher.enqueue([invocation]);
        return reply.status(200).send({ success: true });
      }
      let settle!: (value: { response?: HttpResponse | undefined; outcome?: InvocationOutcome | undefined }) => void;
      const answered = new Promise<{ response?: HttpResponse | undefined; outcome?: InvocationOutcome | undefined }>((resolve) => (settle = resolve));
      const [invocationId] = await services.dispatcher.enqueue([invocation], [(response, outcome) => settle({ response, outcome })]);
      const waitMs = services.config.runTimeout * 1000 + 5000;
      const timer = setTimeout(() => settle({}), waitMs);
      const { response, outcome } = await answered;
      clearTimeout(timer);
      services.dispatcher.forgetResponder(invocationId!);
      if (response) return sendRunResponse(reply, response);
      if (outcome?.error && outcome.error.name !== 'TimeoutError') {
        return reply.status(500).send({ error: `the source failed before responding: ${outcome.error.message}`, code: 'run_failed' });
      }
      return reply.status(504).send({ error: 'the source did not respond', code: 'no_response' });
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
