// Subscriptions and auto-subscriptions: route an emitter's stream to a source, workflow or webhook listener.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { SubscriptionService } from '../../services/subscriptions.js';
import { dataOf, noBody } from '../envelope.js';
import { fieldParams } from '../fields.js';
import { MAX_CHANNEL_NAME_CHARS } from '../../runtime/worker/limits.js';

export const subscriptionSchema = Type.Object({
  id: Type.String({ description: 'prefix sub_' }),
  emitter_id: Type.String({ description: 'source (dc_) or workflow (p_) id, or the glob dc_* / p_*' }),
  listener_id: Type.String({ description: 'source (dc_), workflow (p_) or webhook (wh_) id' }),
  event_name: Type.String({ description: 'stream: "" or "default", "$errors", "$logs" or a channel name' }),
});

const autoSubscriptionSchema = Type.Object({
  id: Type.String({ description: 'prefix sub_' }),
  listener_id: Type.String(),
  event_name: Type.String(),
});

// Tributary's own: what POST answers, and when it was made.
const listedAutoSubscriptionSchema = Type.Object({
  ...autoSubscriptionSchema.properties,
  created_at: Type.Integer({ description: 'Unix seconds' }),
});

const eventName = Type.String({
  maxLength: MAX_CHANNEL_NAME_CHARS,
  description: 'Stream: "" or "default" (default stream), "$errors", "$logs", or a custom channel name',
});
const emitterId = Type.String({ minLength: 1, maxLength: 100, description: 'Source or workflow id, or the glob dc_* (all sources) / p_* (all workflows)' });
const listenerId = Type.String({ minLength: 1, maxLength: 100, description: 'Source (dc_), workflow (p_) or webhook (wh_) id' });

// Any other parameter is refused: a misspelt `event_nme=orders` would subscribe to, or delete, the default stream's.
const subscriptionQuery = Type.Object(
  {
    emitter_id: emitterId,
    listener_id: listenerId,
    event_name: Type.Optional(eventName),
    ...fieldParams,
  },
  { additionalProperties: false },
);
const autoSubscriptionQuery = Type.Object({ event_name: eventName, listener_id: listenerId, ...fieldParams }, { additionalProperties: false });

export function subscriptionRoutes(services: { subscriptions: SubscriptionService }): FastifyPluginAsync {
  return async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
    const toRequest = (q: { emitter_id: string; listener_id: string; event_name?: string | undefined }) => ({
      emitterId: q.emitter_id,
      listenerId: q.listener_id,
      eventName: q.event_name ?? '',
    });

    app.post(
      '/subscriptions',
      {
        schema: {
          tags: ['subscriptions'],
          summary: "Deliver events of an emitter's stream to a listener (idempotent: the same triple returns the existing subscription)",
          querystring: subscriptionQuery,
          response: { 200: dataOf(subscriptionSchema) },
        },
      },
      async (request) => ({ data: await services.subscriptions.create(request.account.id, toRequest(request.query)) }),
    );

    app.delete(
      '/subscriptions',
      {
        schema: {
          tags: ['subscriptions'],
          summary: 'Remove the subscription with exactly this triple (event_name= for one made without a name); 404 when none matched',
          querystring: subscriptionQuery,
          response: { 204: noBody },
        },
      },
      async (request, reply) => {
        await services.subscriptions.delete(request.account.id, toRequest(request.query));
        return reply.status(204).send(null);
      },
    );

    app.get(
      '/users/me/subscriptions',
      {
        schema: {
          tags: ['subscriptions'],
          summary: 'Every subscription of the account (not paginated)',
          querystring: Type.Object(fieldParams),
          response: { 200: Type.Object({ data: Type.Array(subscriptionSchema) }) },
        },
      },
      async (request) => ({ data: await services.subscriptions.list(request.account.id) }),
    );

    app.post(
      '/auto_subscriptions',
      {
        schema: {
          tags: ['subscriptions'],
          summary: 'Subscribe the listener to this stream of every source created from now on (existing ones are not affected)',
          querystring: autoSubscriptionQuery,
          response: { 200: dataOf(autoSubscriptionSchema) },
        },
      },
      async (request) => ({
        data: await services.subscriptions.createAuto(request.account.id, { listenerId: request.query.listener_id, eventName: request.query.event_name }),
      }),
    );

    app.get(
      '/users/me/auto_subscriptions',
      {
        schema: {
          tags: ['subscriptions', 'extensions'],
          summary: 'Every auto-subscription of the account, newest first (not paginated); GET /users/me/subscriptions lists only the subscriptions they made',
          querystring: Type.Object(fieldParams),
          response: { 200: Type.Object({ data: Type.Array(listedAutoSubscriptionSchema) }) },
        },
      },
      async (request) => ({ data: await services.subscriptions.listAuto(request.account.id) }),
    );

    app.delete(
      '/auto_subscriptions',
      {
        schema: {
          tags: ['subscriptions', 'extensions'],
          summary: 'Stop subscribing sources created from now on (subscriptions already made stay)',
          querystring: autoSubscriptionQuery,
          response: { 204: noBody },
        },
      },
      async (request, reply) => {
        await services.subscriptions.deleteAuto(request.account.id, { listenerId: request.query.listener_id, eventName: request.query.event_name });
        return reply.status(204).send(null);
      },
    );
  };
}
