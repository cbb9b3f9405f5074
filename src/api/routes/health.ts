// GET /healthz: liveness and database reachability, without a key, for load balancers and supervisors.
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import type { HealthService } from '../../services/health.js';

export function healthRoutes(services: { health: HealthService }): FastifyPluginAsync {
  return async (app) => {
    app.get(
      '/healthz',
      {
        schema: {
          tags: ['operations'],
          summary: 'Liveness and database reachability',
          security: [],
          response: {
            200: Type.Object({ status: Type.Literal('ok'), database: Type.Literal('ok') }),
            503: Type.Object({ status: Type.Literal('error'), database: Type.Literal('unreachable') }),
          },
        },
      },
      async (_request, reply) => {
        if (await services.health.databaseReachable()) return { status: 'ok' as const, database: 'ok' as const };
        return reply.status(503).send({ status: 'error' as const, database: 'unreachable' as const });
      },
    );
  };
}
