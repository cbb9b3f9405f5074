// Event summaries of sources (default stream, $logs, $errors) and workflows (default, $errors), and the deletion of
// a source's events.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { EmitterRef, EventService } from '../../services/events.js';
import type { StreamKind } from '../../store/schema.js';
import { acceptedWithoutBody, noBody, pageBody, pageOf, paginationQuery, toPageRequest } from '../envelope.js';
import { fieldParams } from '../fields.js';
import { eventSummarySchema } from '../schemas.js';
import { sourceIdParams } from '../schemas.js';

const summariesQuery = Type.Object({
  ...paginationQuery,
  expand: Type.Optional(Type.Literal('event', { description: 'event: return full event data (otherwise data over 1 KB is truncated)' })),
});

// The specification documents the first; the $logs and $errors streams of a source are extensions.
const STREAMS: Array<{ path: string; kind: EmitterRef['kind']; stream: StreamKind; summary: string; tags: string[] }> = [
  { path: '/sources/:id/event_summaries', kind: 'source', stream: 'emit', summary: 'Events the source emitted, newest first', tags: ['events'] },
  {
    path: '/sources/:id/$logs/event_summaries',
    kind: 'source',
    stream: '$logs',
    summary: "Console output of the source's runs and hooks, newest first",
    tags: ['events', 'extensions'],
  },
  {
    path: '/sources/:id/$errors/event_summaries',
    kind: 'source',
    stream: '$errors',
    summary: "Errors of the source's runs, newest first",
    tags: ['events', 'extensions'],
  },
  { path: '/workflows/:id/event_summaries', kind: 'workflow', stream: 'emit', summary: 'Events the workflow emitted, newest first', tags: ['workflows'] },
  {
    path: '/workflows/:id/$errors/event_summaries',
    kind: 'workflow',
    stream: '$errors',
    summary: 'Errors of the workflow, with the original event, newest first',
    tags: ['workflows'],
  },
];

export function eventRoutes(services: { events: EventService }): FastifyPluginAsync {
  return async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();

    for (const { path, kind, stream, summary, tags } of STREAMS) {
      app.get(
        path,
        { schema: { tags, summary, params: sourceIdParams, querystring: summariesQuery, response: { 200: pageOf(eventSummarySchema) } } },
        async (request) => {
          const page = await services.events.list(
            request.account.id,
            { kind, id: request.params.id },
            stream,
            toPageRequest(request.query),
            request.query.expand === 'event',
          );
          return pageBody(page, (e) => e);
        },
      );
    }

    app.delete(
      '/sources/:id/events',
      {
        schema: {
          tags: ['events'],
          summary: 'Delete events: all, from start_id on, up to end_id, or the inclusive range',
          params: sourceIdParams,
          querystring: Type.Object(
            {
              start_id: Type.Optional(Type.String({ description: 'event id; deletes it and every later one' })),
              end_id: Type.Optional(Type.String({ description: 'event id; deletes it and every earlier one' })),
              ...fieldParams,
            },
            { additionalProperties: false },
          ),
          response: { 202: noBody },
        },
      },
      async (request, reply) => {
        // Done before answering, so the events are gone when the client sees 202 (the spec only requires "soon").
        await services.events.deleteRange(request.account.id, { kind: 'source', id: request.params.id }, request.query.start_id, request.query.end_id);
        return acceptedWithoutBody(reply);
      },
    );
  };
}
