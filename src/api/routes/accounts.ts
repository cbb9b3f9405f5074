// Connected accounts (extension): create, list, read, rotate and delete an app's credentials; no route returns them.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { APP_SLUG, CREDENTIAL_FIELD, type ConnectedAccountService, MAX_CREDENTIAL_BYTES, MAX_CREDENTIAL_FIELDS } from '../../services/connected-accounts.js';
import { dataOf, noBody, pageBody, pageOf, paginationQuery, toPageRequest } from '../envelope.js';
import { fieldParams } from '../fields.js';

const TAGS = ['accounts', 'extensions'];

export const connectedAccountSchema = Type.Object({
  id: Type.String({ description: 'prefix apn_; an app prop takes it as { "authProvisionId": "apn_…" }' }),
  app: Type.String({ description: 'the app name slug, as app props declare it' }),
  name: Type.String(),
  fields: Type.Array(Type.String(), { description: 'names of the credential fields; their values are never returned' }),
  healthy: Type.Boolean({ description: 'false after an OAuth token refresh failed, until one succeeds or the credentials are replaced' }),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
});

const credentialsSchema = Type.Record(Type.String({ pattern: CREDENTIAL_FIELD }), Type.Union([Type.String(), Type.Number(), Type.Boolean()]), {
  minProperties: 1,
  maxProperties: MAX_CREDENTIAL_FIELDS,
  description:
    `A flat object, at most ${MAX_CREDENTIAL_FIELDS} fields and ${MAX_CREDENTIAL_BYTES / 1024} KiB, given to components as this.<app>.$auth ` +
    '(api_key, site_domain, …; OAuth: oauth_access_token, oauth_refresh_token, expires_at in epoch seconds or ISO 8601, ' +
    'oauth_client_id, oauth_client_secret, oauth_token_url, oauth_client_auth "basic" or "body"). Encrypted at rest, never returned.',
});

const name = Type.String({ minLength: 1, maxLength: 200 });

// Bodies hold only their fields: a misspelt `credentails` in a PUT would otherwise answer 200, renamed, with the old
// credentials still in use.
const idParams = Type.Object({ id: Type.String() });

export function accountRoutes(services: { connectedAccounts: ConnectedAccountService }): FastifyPluginAsync {
  return async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
    const accounts = services.connectedAccounts;

    app.post(
      '/accounts',
      {
        schema: {
          tags: TAGS,
          summary: 'Connect an app account: its credentials are stored encrypted, and app props name it by id',
          body: Type.Object(
            {
              app: Type.String({ pattern: APP_SLUG, description: 'app name slug: 1 to 64 of a-z 0-9 _' }),
              name,
              credentials: credentialsSchema,
              ...fieldParams,
            },
            { additionalProperties: false },
          ),
          response: { 200: dataOf(connectedAccountSchema) },
        },
      },
      async (request) => ({ data: await accounts.create(request.account.id, request.body) }),
    );

    app.get(
      '/users/me/accounts',
      {
        schema: {
          tags: TAGS,
          summary: "The account's connected accounts, newest first",
          querystring: Type.Object(paginationQuery),
          response: { 200: pageOf(connectedAccountSchema) },
        },
      },
      async (request) => pageBody(await accounts.list(request.account.id, toPageRequest(request.query)), (a) => a),
    );

    app.get(
      '/accounts/:id',
      {
        schema: {
          tags: TAGS,
          summary: 'One connected account (without its credentials)',
          params: idParams,
          querystring: Type.Object(fieldParams),
          response: { 200: dataOf(connectedAccountSchema) },
        },
      },
      async (request) => ({ data: await accounts.get(request.account.id, request.params.id) }),
    );

    app.put(
      '/accounts/:id',
      {
        schema: {
          tags: TAGS,
          summary: 'Rename a connected account or replace its credentials (the next run sees them)',
          params: idParams,
          body: Type.Object({ name: Type.Optional(name), credentials: Type.Optional(credentialsSchema), ...fieldParams }, { additionalProperties: false }),
          response: { 200: dataOf(connectedAccountSchema) },
        },
      },
      async (request) => ({ data: await accounts.update(request.account.id, request.params.id, request.body) }),
    );

    app.delete(
      '/accounts/:id',
      {
        schema: {
          tags: TAGS,
          summary: 'Delete a connected account; 409 while sources or workflows use it, unless force=true deactivates them first',
          params: idParams,
          querystring: Type.Object({
            force: Type.Optional(Type.Boolean({ default: false, description: 'deactivate the sources and workflows that use it, then delete it' })),
            ...fieldParams,
          }),
          response: { 204: noBody },
        },
      },
      async (request, reply) => {
        await accounts.delete(request.account.id, request.params.id, request.query.force === true);
        return reply.status(204).send(null);
      },
    );
  };
}
