// GET /healthz (liveness and database reachability) and GET /readyz (readiness), without a key, for load balancers and supervisors.
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { HealthService, ProbeAnswer } from '../../services/health.js';

function sendProbeAnswer<Body>(reply: FastifyReply, answer: ProbeAnswer<Body>): FastifyReply {
  if (answer.retryAfterSeconds !== undefined) reply.header('retry-after', String(answer.retryAfterSeconds));
  return reply.status(answer.status).send(answer.body);
}

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
      async (_request, reply) => sendProbeAnswer(reply, await services.health.livenessAnswer()),
    );

    const checks = Type.Object({
      database: Type.Union([Type.Literal('ok'), Type.Literal('unreachable'), Type.Literal('locked'), Type.Literal('write_error')], {
        description:
          "locked: reads work but writes fail on SQLite's write lock, which another process holds; write_error: reads work but the file system refuses SQLite's writes",
      }),
      migrations: Type.Union([Type.Literal('ok'), Type.Literal('pending'), Type.Literal('unknown')]),
      worker: Type.Union([Type.Literal('ok'), Type.Literal('cannot_start'), Type.Literal('unchecked')]),
      worker_nodes: Type.Union([Type.Literal('ok'), Type.Literal('none'), Type.Literal('unchecked')], {
        description:
          'whether a node that runs work (--role worker or all) is alive, this one or another; none leaves an api node ready: it still queues, and the work runs once a worker starts',
      }),
      disk: Type.Union([Type.Literal('ok'), Type.Literal('full'), Type.Literal('unchecked')], {
        description: "room in SQLite's data directory (full: under 1 MiB); unchecked on PostgreSQL",
      }),
      stopping: Type.Boolean(),
    });
    app.get(
      '/readyz',
      {
        schema: {
          tags: ['operations'],
          summary: 'Readiness: migrations applied, database answering, a worker able to start, and no stop under way',
          security: [],
          response: {
            200: Type.Object({ status: Type.Literal('ready'), checks }),
            503: Type.Object({ status: Type.Literal('not_ready'), not_ready: Type.Array(Type.String()), checks }),
          },
        },
      },
      async (_request, reply) => sendProbeAnswer(reply, await services.health.readinessAnswer()),
    );
  };
}
