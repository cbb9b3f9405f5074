// Sources: list, create, update, delete, and a manual run.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { RunService } from '../../services/runs.js';
import type { SourceService } from '../../services/sources.js';
import { dataOf, noBody, pageBody, pageOf, paginationQuery, toPageRequest } from '../envelope.js';
import { fieldParams } from '../fields.js';
import { sourceIdParams, sourceSchema } from '../schemas.js';

const sourceBody = {
  component_id: Type.Optional(Type.String({ description: 'Saved component id (preferred when several are given)' })),
  component_code: Type.Optional(Type.String({ description: 'Full component code' })),
  component_url: Type.Optional(Type.String({ description: 'URL of the component code' })),
  key: Type.Optional(Type.String({ description: 'Key of a registry component' })),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  configured_props: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  ...fieldParams,
};

/** What a GET shows and a client may send back with its changes (GET, edit, PATCH): taken and ignored. */
const readOnlyEchoes = {
  id: Type.Optional(Type.String({ description: 'read-only: ignored' })),
  user_id: Type.Optional(Type.String({ description: 'read-only: ignored' })),
  name_slug: Type.Optional(Type.String({ description: 'read-only: ignored' })),
  created_at: Type.Optional(Type.Integer({ description: 'read-only: ignored' })),
  updated_at: Type.Optional(Type.Integer({ description: 'read-only: ignored' })),
};

export function sourceRoutes(services: { sources: SourceService; runs: RunService }): FastifyPluginAsync {
  return async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();

    app.get(
      '/users/me/sources',
      {
        schema: {
          tags: ['sources'],
          summary: "The account's sources, newest first",
          querystring: Type.Object(paginationQuery),
          response: { 200: pageOf(sourceSchema) },
        },
      },
      async (request) => pageBody(await services.sources.list(request.account.id, toPageRequest(request.query)), (s) => s),
    );

    app.get(
      '/sources/:id',
      {
        schema: {
          tags: ['sources', 'extensions'],
          summary: 'One source, as the list shows it',
          params: sourceIdParams,
          querystring: Type.Object(fieldParams),
          response: { 200: dataOf(sourceSchema) },
        },
      },
      async (request) => ({ data: await services.sources.view(request.account.id, request.params.id) }),
    );

    // A new source is active (the specification); `active: false` is refused rather than ignored.
    const createBody = Type.Object({
      ...sourceBody,
      active: Type.Optional(Type.Literal(true, { description: 'a new source starts active; deactivate it with PUT or PATCH' })),
    });
    app.post(
      '/sources',
      { schema: { tags: ['sources'], summary: 'Deploy a source', body: createBody, response: { 200: dataOf(sourceSchema) } } },
      async (request) => ({ data: await services.sources.create(request.account.id, request.body) }),
    );

    const updateBody = Type.Object({ ...sourceBody, active: Type.Optional(Type.Boolean({ description: 'false disables the source' })) });
    app.put(
      '/sources/:id',
      {
        schema: {
          tags: ['sources'],
          summary: 'Replace a source: one of component_id, component_code, component_url or key required; name defaults to the name slug, active to true',
          params: sourceIdParams,
          body: updateBody,
          response: { 200: dataOf(sourceSchema) },
        },
      },
      async (request) => ({ data: await services.sources.update(request.account.id, request.params.id, request.body, 'replace') }),
    );

    // PATCH is Tributary's own, so it need not keep the specification's lenient reading of POST and PUT: a misspelt
    // `actve` or `configured_prop` would answer 200 having changed nothing. What a GET shows may still come back.
    const patchBody = Type.Object({ ...updateBody.properties, ...readOnlyEchoes }, { additionalProperties: false });
    app.patch(
      '/sources/:id',
      {
        schema: {
          tags: ['sources', 'extensions'],
          summary: 'Change only the given fields of a source (code, props, name, active); omitted fields keep their values',
          params: sourceIdParams,
          body: patchBody,
          response: { 200: dataOf(sourceSchema) },
        },
      },
      async (request) => ({ data: await services.sources.update(request.account.id, request.params.id, request.body, 'patch') }),
    );

    app.delete(
      '/sources/:id',
      {
        schema: {
          tags: ['sources'],
          summary: 'Delete a source with its events, logs, db and subscriptions',
          params: sourceIdParams,
          querystring: Type.Object(fieldParams),
          response: { 204: noBody },
        },
      },
      async (request, reply) => {
        await services.sources.delete(request.account.id, request.params.id);
        return reply.status(204).send(null);
      },
    );

    app.post(
      '/sources/:id/run',
      {
        schema: {
          tags: ['sources', 'extensions'],
          summary: 'Queue a manual run; the JSON body, when any, is the event passed to run()',
          params: sourceIdParams,
          body: Type.Optional(Type.Unknown()),
          response: { 202: dataOf(Type.Object({ id: Type.String({ description: 'invocation id, prefix inv_' }) })) },
        },
      },
      async (request, reply) => {
        const id = await services.runs.runNow(request.account.id, request.params.id, request.body === undefined ? {} : request.body);
        return reply.status(202).send({ data: { id } });
      },
    );
  };
}
