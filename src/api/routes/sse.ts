// GET /sources/{id}/sse (and under /v1): a source's events live as Server-Sent Events, resumable with Last-Event-ID.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Services } from '../../app.js';
import type { EventSummary } from '../../core/event-pipeline.js';
import { ServiceError } from '../../core/errors.js';
import type { Account } from '../../core/users.js';
import type { StreamKind } from '../../store/schema.js';
import { readBearerKey } from '../auth.js';
import { sourceIdParams } from './sources.js';

/** The stream a request asks for: the source's emits by default, `$logs`, `$errors`, or one channel. */
export function streamOf(eventName: string | undefined): { kind: StreamKind; filter: (e: EventSummary) => boolean } {
  if (eventName === '$errors' || eventName === '$logs') return { kind: eventName, filter: (e) => e.metadata.name === eventName };
  if (eventName === undefined) return { kind: 'emit', filter: (e) => e.metadata.name !== '$errors' && e.metadata.name !== '$logs' };
  const channel = eventName === 'default' ? '' : eventName;
  return { kind: 'emit', filter: (e) => e.metadata.name === channel };
}

const schema = {
  tags: ['events'],
  summary: 'Live stream of the source\'s events (Server-Sent Events)',
  description:
    'Each event is `id: <event id>` and `data: <event summary JSON>`; a `:sse-handshake` comment is sent at connect and every 15 s. ' +
    '`Last-Event-ID` replays the retained events after it.',
  params: sourceIdParams,
  querystring: Type.Object({
    event_name: Type.Optional(Type.String({ maxLength: 200, description: '$logs or $errors streams those; a channel name (or default) only that channel; absent: every emit' })),
  }),
  headers: Type.Object({ 'last-event-id': Type.Optional(Type.String({ maxLength: 64, description: 'replay retained events after this event id' })) }),
  response: { 200: { description: 'text/event-stream', content: { 'text/event-stream': { schema: Type.String() } } } },
};

/**
 * `authenticate`: the route lives outside /v1 (the walkthrough's address), where no auth hook runs,
 * so it checks the key itself; under /v1 the hook has done so.
 */
export function sseRoutes(services: Services, options: { authenticate: boolean }): FastifyPluginAsync {
  const accountOf = async (request: FastifyRequest): Promise<Account> => {
    if (!options.authenticate) return request.account;
    const account = await services.users.authenticate(readBearerKey(request));
    if (!account) throw new ServiceError('unauthorized', 'invalid API key');
    return account;
  };

  return async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
    app.get('/sources/:id/sse', { schema }, async (request, reply) => {
      const account = await accountOf(request);
      const { source } = await services.sources.get(account.id, request.params.id);
      const { kind, filter } = streamOf(request.query.event_name);
      const lastEventId = request.headers['last-event-id'];
      reply.hijack();
      await services.sse.open(reply.raw, {
        emitterId: source.id,
        filter,
        replay: lastEventId ? async () => (await services.events.after(source.id, kind, lastEventId)).filter(filter) : undefined,
        headers: { 'x-request-id': request.id },
      });
    });
  };
}
