// POST /components (and /components/stream, the same save telling its npm installs as they happen), GET
// /components/{key|id}, GET /components/registry/{key}, and prop configuration: a prop's options and the props
// additionalProps() adds.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { ComponentService } from '../../services/components.js';
import { toComponentView } from '../../services/components.js';
import type { PropConfigurationService } from '../../services/prop-configuration.js';
import { absentBodyAsEmpty, dataOf, pageBody, pageOf, paginationQuery, toPageRequest } from '../envelope.js';
import { fieldParams } from '../fields.js';
import { progressResponse, streamSave } from '../progress-stream.js';
import { componentSchema, propDescriptorSchema } from '../schemas.js';

const saveBody = Type.Object({
  component_code: Type.Optional(Type.String({ description: 'Full component code; wins over component_url' })),
  component_url: Type.Optional(Type.String({ description: 'URL the code is fetched from (kept as metadata when code is given)' })),
  ...fieldParams,
});

/**
 * The body of both prop configuration endpoints; `page`, `prev_context` and `query` are for options only. No other
 * field: a `prevContext` (as options() names it) or `configuredProps` would otherwise be dropped and the first page
 * answered again.
 */
const configureBody = Type.Object(
  {
    configured_props: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Values of the props configured so far, as for a deploy' })),
    page: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'options({ page }): counts from 0; default 0' })),
    prev_context: Type.Optional(
      Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.String(), Type.Null()], {
        description: 'options({ prevContext }): the context the previous page returned ({ nextPageToken }); a string is taken as its nextPageToken',
      }),
    ),
    query: Type.Optional(Type.String({ maxLength: 1000, description: 'options({ query }): search text' })),
    ...fieldParams,
  },
  { additionalProperties: false },
);

const optionsSchema = Type.Object({
  options: Type.Union([Type.Array(Type.String()), Type.Array(Type.Object({ label: Type.String(), value: Type.Unknown() }))], {
    description: 'Strings when every choice is one, else { label, value } each; empty when errors is not',
  }),
  context: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], { description: 'Pass it back as prev_context for the next page' }),
  errors: Type.Array(Type.String(), { description: "What went wrong running the prop's options()" }),
});

const reloadSchema = Type.Object({
  configurable_props: Type.Array(propDescriptorSchema, { description: 'The static props, then those additionalProps() returns' }),
  errors: Type.Array(Type.String(), { description: 'What went wrong running additionalProps()' }),
});

export function componentRoutes(services: { components: ComponentService; propConfiguration: PropConfigurationService }): FastifyPluginAsync {
  return async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
    const response = { 200: dataOf(componentSchema) };

    app.post(
      '/components',
      { schema: { tags: ['components'], summary: 'Save a component from its code or a URL', body: saveBody, response } },
      async (request) => {
        const body = request.body;
        const row = await services.components.save(request.account.id, { code: body.component_code, url: body.component_url });
        return { data: toComponentView(row) };
      },
    );

    app.post(
      '/components/stream',
      {
        schema: {
          tags: ['components', 'extensions'],
          summary: 'Save a component as POST /v1/components does, telling each npm install step as it happens (Server-Sent Events)',
          body: saveBody,
          response: progressResponse('POST /v1/components'),
        },
      },
      async (request, reply) => {
        const body = request.body;
        return streamSave(request, reply, response[200], async (onProgress) => {
          const row = await services.components.save(request.account.id, { code: body.component_code, url: body.component_url }, onProgress);
          return { data: toComponentView(row) };
        });
      },
    );

    app.get(
      '/users/me/components',
      {
        schema: {
          tags: ['components', 'extensions'],
          summary: "The account's saved components (code steps included), newest first",
          querystring: Type.Object(paginationQuery),
          response: { 200: pageOf(componentSchema) },
        },
      },
      async (request) => pageBody(await services.components.list(request.account.id, toPageRequest(request.query)), toComponentView),
    );

    app.get(
      '/components/registry/:key',
      {
        schema: {
          tags: ['components'],
          summary: "The highest version the account published under this key, else the global registry's component",
          params: Type.Object({ key: Type.String() }),
          querystring: Type.Object(fieldParams),
          response,
        },
      },
      async (request) => ({ data: toComponentView(await services.components.getRegistry(request.account.id, request.params.key)) }),
    );

    app.get(
      '/components/:keyOrId',
      {
        schema: {
          tags: ['components'],
          summary: 'The latest component with this key, or this id, in the account',
          params: Type.Object({ keyOrId: Type.String() }),
          querystring: Type.Object(fieldParams),
          response,
        },
      },
      async (request) => ({ data: toComponentView(await services.components.get(request.account.id, request.params.keyOrId)) }),
    );

    app.post(
      '/components/:id/props/:prop/options',
      {
        schema: {
          tags: ['components', 'extensions'],
          summary: "A prop's choices: runs its async options({ page, prevContext, query }) in the account's sandbox; failures come back in errors",
          params: Type.Object({ id: Type.String(), prop: Type.String() }),
          body: Type.Optional(configureBody),
          response: { 200: dataOf(optionsSchema) },
        },
        preValidation: absentBodyAsEmpty,
      },
      async (request) => {
        const { id, prop } = request.params;
        return { data: await services.propConfiguration.options(request.account.id, id, prop, request.body ?? {}) };
      },
    );

    app.post(
      '/components/:id/props/reload',
      {
        schema: {
          tags: ['components', 'extensions'],
          summary: 'The full prop list for these configured values: the static props, then those additionalProps() returns',
          params: Type.Object({ id: Type.String() }),
          body: Type.Optional(configureBody),
          response: { 200: dataOf(reloadSchema) },
        },
        preValidation: absentBodyAsEmpty,
      },
      async (request) => ({ data: await services.propConfiguration.reload(request.account.id, request.params.id, request.body ?? {}) }),
    );

    app.post(
      '/components/:id/publish',
      {
        schema: {
          tags: ['components', 'extensions'],
          summary: "Publish a saved component under its key in the account's registry (semantic version, greater than the last)",
          params: Type.Object({ id: Type.String() }),
          // The version published is the code's own: a `{"version": "2.0.0"}` would otherwise answer 200 having published
          // another, so any field but include / exclude is refused.
          body: Type.Optional(
            Type.Object(fieldParams, { additionalProperties: false, description: "none, or only include / exclude: the version is the code's own" }),
          ),
          response,
        },
        preValidation: absentBodyAsEmpty,
      },
      async (request) => ({ data: toComponentView(await services.components.publishInAccount(request.account.id, request.params.id)) }),
    );
  };
}
