// Webhooks: create (the signing secret is shown once), list, read, rename or turn back on, delete, and the delivery log.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { WebhookService } from '../../services/webhooks.js';
import { dataOf, noBody, pageBody, pageOf, paginationQuery, toPageRequest } from '../envelope.js';
import { fieldParams } from '../fields.js';

const nullableString = Type.Union([Type.String(), Type.Null()]);

export const webhookSchema = Type.Object({
  id: Type.String({ description: 'prefix wh_; use it as a subscription listener_id' }),
  user_id: Type.Optional(Type.String({ description: 'prefix u_; in the create response only' })),
  name: nullableString,
  description: nullableString,
  url: Type.String(),
  active: Type.Boolean({ description: 'false once the URL answered 410 Gone' }),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
  secret: Type.Optional(Type.String({ description: 'whsec_… signing secret (Standard Webhooks); in the create response only' })),
});

const deliverySchema = Type.Object({
  id: Type.String({ description: 'prefix dl_; one attempt' }),
  event_id: Type.String({ description: 'id of the delivered event summary' }),
  emitter_id: Type.String(),
  attempt: Type.Integer({ description: '1 for the first attempt' }),
  state: Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')]),
  status_code: Type.Union([Type.Integer(), Type.Null()], { description: 'HTTP status the URL answered; null when there was no answer' }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'why there was no answer (connection, timeout, blocked address)' }),
  duration_ms: Type.Union([Type.Integer(), Type.Null()]),
  attempted_at_ms: Type.Union([Type.Integer(), Type.Null()]),
  next_attempt_at_ms: Type.Union([Type.Integer(), Type.Null()], { description: 'pending: when it is due; failed: when the retry is due, null when none' }),
  created_at: Type.Integer(),
});

const webhookIdParams = Type.Object({ id: Type.String() });

export function webhookRoutes(services: { webhooks: WebhookService }): FastifyPluginAsync {
  return async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();

    app.post(
      '/webhooks',
      {
        schema: {
          tags: ['webhooks'],
          summary: 'Create a webhook; the response alone carries its signing secret',
          querystring: Type.Object(
            {
              url: Type.String({ minLength: 1, maxLength: 2048, description: 'http or https URL with a host; port and path allowed' }),
              name: Type.Optional(Type.String({ maxLength: 200 })),
              description: Type.Optional(Type.String({ maxLength: 2000 })),
              ...fieldParams,
            },
            { additionalProperties: false },
          ),
          response: { 200: dataOf(webhookSchema) },
        },
      },
      async (request) => ({ data: await services.webhooks.create(request.account.id, request.query) }),
    );

    app.get(
      '/users/me/webhooks',
      {
        schema: {
          tags: ['webhooks'],
          summary: "The account's webhooks, newest first",
          querystring: Type.Object(paginationQuery),
          response: { 200: pageOf(webhookSchema) },
        },
      },
      async (request) => pageBody(await services.webhooks.list(request.account.id, toPageRequest(request.query)), (w) => w),
    );

    app.get(
      '/webhooks/:id',
      {
        schema: {
          tags: ['webhooks', 'extensions'],
          summary: 'One webhook',
          params: webhookIdParams,
          querystring: Type.Object(fieldParams),
          response: { 200: dataOf(webhookSchema) },
        },
      },
      async (request) => ({ data: await services.webhooks.get(request.account.id, request.params.id) }),
    );

    app.patch(
      '/webhooks/:id',
      {
        schema: {
          tags: ['webhooks', 'extensions'],
          summary: 'Rename a webhook, or turn it back on after a 410 Gone retired it; omitted fields keep their values',
          params: webhookIdParams,
          body: Type.Object(
            {
              active: Type.Optional(Type.Literal(true, { description: 'true turns a webhook a 410 retired back on' })),
              name: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
              description: Type.Optional(Type.Union([Type.String({ maxLength: 2000 }), Type.Null()])),
            },
            { additionalProperties: false },
          ),
          response: { 200: dataOf(webhookSchema) },
        },
      },
      async (request) => ({ data: await services.webhooks.update(request.account.id, request.params.id, request.body) }),
    );

    app.delete(
      '/webhooks/:id',
      {
        schema: {
          tags: ['webhooks', 'extensions'],
          summary: 'Delete a webhook with its pending deliveries, its log and the subscriptions naming it',
          params: webhookIdParams,
          querystring: Type.Object(fieldParams),
          response: { 204: noBody },
        },
      },
      async (request, reply) => {
        await services.webhooks.delete(request.account.id, request.params.id);
        return reply.status(204).send(null);
      },
    );

    app.get(
      '/webhooks/:id/deliveries',
      {
        schema: {
          tags: ['webhooks', 'extensions'],
          summary: 'Delivery attempts of a webhook, newest first, pending ones included',
          params: webhookIdParams,
          querystring: Type.Object(paginationQuery),
          response: { 200: pageOf(deliverySchema) },
        },
      },
      async (request) => pageBody(await services.webhooks.deliveries(request.account.id, request.params.id, toPageRequest(request.query)), (d) => d),
    );
  };
}
