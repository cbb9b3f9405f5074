// GET /sources/{id}/sse (and under /v1): a source's events live as Server-Sent Events, resumable with Last-Event-ID.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { LiveStreams } from '../../services/live.js';
import { sourceIdParams } from '../schemas.js';
import { fieldParams, fieldSelectorOf } from '../fields.js';
import { MAX_CHANNEL_NAME_CHARS } from '../../runtime/worker/limits.js';
import { STREAM_HEADERS, type StreamHeaders } from '../../delivery/sse-requests.js';

const schema = {
  tags: ['events'],
  summary: "Live stream of the source's events (Server-Sent Events)",
  description:
    'Each event is `id: <event id>` and `data: <event summary JSON>` (trimmed by `include` / `exclude`); a `:sse-handshake` comment is sent at connect and every 15 s. ' +
    '`Last-Event-ID` replays the retained events after it (one after the newest event goes live); one that is no event id is a 400.',
  params: sourceIdParams,
  querystring: Type.Object({
    event_name: Type.Optional(
      Type.String({
        maxLength: MAX_CHANNEL_NAME_CHARS,
        description: '$logs or $errors streams those; a channel name (or default) only that channel; absent: every emit',
      }),
    ),
    // Checked before the stream opens (a 400 like any endpoint's), then applied to each event's summary.
    ...fieldParams,
  }),
  headers: Type.Object({ 'last-event-id': Type.Optional(Type.String({ maxLength: 64, description: 'replay retained events after this event id' })) }),
  response: { 200: { description: 'text/event-stream', content: { 'text/event-stream': { schema: Type.String() } } } },
};

const workflowSchema = {
  tags: ['workflows', 'extensions'],
  summary: "Live stream of the workflow's $.send.sse() payloads (Server-Sent Events)",
  description: 'Each frame is an event summary whose `event` is the payload and `metadata.name` is `$sse:<channel>`; `Last-Event-ID` replays.',
  params: sourceIdParams,
  querystring: Type.Object({
    channel: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_CHANNEL_NAME_CHARS, description: 'one channel; absent: every channel' })),
    ...fieldParams,
  }),
  headers: schema.headers,
  response: schema.response,
};

/**
 * A HEAD request gets the headers a stream would, and ends: Node sends nothing of a HEAD response before its end, so
 * streaming to it would hang the client without even a status line, holding one of the account's streams.
 */
function answerHead(reply: FastifyReply): FastifyReply {
  return reply.headers(STREAM_HEADERS).send();
}

/**
 * What the request's hooks set on the reply (its id, the rate limit it counts against): a taken-over response writes
 * its own head, which would drop them, so that a GET said less than its HEAD does.
 */
function hookHeaders(request: FastifyRequest, reply: FastifyReply): StreamHeaders {
  const headers: StreamHeaders = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) headers[name] = value;
  return { ...headers, 'x-request-id': request.id };
}

/** Mounted twice, under /v1 and at the walkthrough's address outside it; both install the auth hook before it. */
export function sseRoutes(services: { live: LiveStreams }): FastifyPluginAsync {
  return async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
    app.get('/sources/:id/sse', { schema }, async (request, reply) => {
      const stream = await services.live.prepare({
        accountId: request.account.id,
        sourceId: request.params.id,
        eventName: request.query.event_name,
        lastEventId: request.headers['last-event-id'],
        apiKey: request.apiKey,
        headers: hookHeaders(request, reply),
        select: fieldSelectorOf(request),
        probe: request.method === 'HEAD',
      });
      if (request.method === 'HEAD') return answerHead(reply);
      reply.hijack();
      await stream(reply.raw);
    });

    app.get('/workflows/:id/sse', { schema: workflowSchema }, async (request, reply) => {
      const stream = await services.live.prepareWorkflow({
        accountId: request.account.id,
        workflowId: request.params.id,
        channel: request.query.channel,
        lastEventId: request.headers['last-event-id'],
        apiKey: request.apiKey,
        headers: hookHeaders(request, reply),
        select: fieldSelectorOf(request),
        probe: request.method === 'HEAD',
      });
      if (request.method === 'HEAD') return answerHead(reply);
      reply.hijack();
      await stream(reply.raw);
    });
  };
}
