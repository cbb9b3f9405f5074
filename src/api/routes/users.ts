// GET /users/me: the authenticated account, in the spec's free-plan or paid-plan shape; POST /users/me/api_key replaces its key.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { UserService } from '../../services/users.js';
import { absentBodyAsEmpty, dataOf } from '../envelope.js';
import { fieldParams } from '../fields.js';

const userSchema = Type.Object({
  id: Type.String(),
  username: Type.String(),
  email: Type.String(),
  api_key: Type.Optional(Type.String()),
  daily_compute_time_quota: Type.Optional(Type.Integer({ description: 'milliseconds of run time per UTC day' })),
  daily_compute_time_used: Type.Optional(Type.Integer({ description: 'milliseconds of run time used today (UTC)' })),
  daily_invocations_quota: Type.Optional(Type.Integer()),
  daily_invocations_used: Type.Optional(Type.Integer()),
  billing_period_start_ts: Type.Optional(Type.Integer()),
  billing_period_end_ts: Type.Optional(Type.Integer()),
  billing_period_invocations: Type.Optional(Type.Integer()),
});

export function userRoutes(services: { users: UserService }): FastifyPluginAsync {
  return async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
    app.get(
      '/users/me',
      { schema: { tags: ['users'], summary: 'The authenticated user', querystring: Type.Object(fieldParams), response: { 200: dataOf(userSchema) } } },
      async (request) => ({ data: await services.users.describe(request.account, request.apiKey) }),
    );

    app.post(
      '/users/me/api_key',
      {
        schema: {
          tags: ['users', 'extensions'],
          summary: 'Replace the API key: the new key is returned once, and the key of this request stops working at once',
          body: Type.Object(fieldParams, { additionalProperties: false, description: 'none, or only include / exclude: a key cannot be chosen' }),
          response: { 200: dataOf(Type.Object({ api_key: Type.String({ description: 'the new key; only its hash is stored' }) })) },
        },
        // A POST with no body is the usual call; any other body than include / exclude is refused.
        preValidation: absentBodyAsEmpty,
      },
      async (request) => ({ data: { api_key: (await services.users.rotateKey(request.account.id)).apiKey } }),
    );
  };
}
