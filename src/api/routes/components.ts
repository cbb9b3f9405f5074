// POST /components, GET /components/{key|id}, GET /components/registry/{key}.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { ComponentService } from '../../services/components.js';
import { toComponentView } from '../../services/components.js';
import { dataOf } from '../envelope.js';
import { fieldParams } from '../fields.js';
import { componentSchema } from '../schemas.js';

export function componentRoutes(services: { components: ComponentService }): FastifyPluginAsync {
  return async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
    const response = { 200: dataOf(componentSchema) };

    app.post(
      '/components',
      {
        schema: {
          tags: ['components'],
          summary: 'Save a component from its code or a URL',
          body: Type.Object({
            component_code: Type.Optional(Type.String({ description: 'Full component code; wins over component_url' })),
            component_url: Type.Optional(Type.String({ description: 'URL the code is fetched from (kept as metadata when code is given)' })),
            ...fieldParams,
          }),
          response,
        },
      },
      async (request) => {
        const body = request.body;
        const row = await services.components.save(request.account.id, { code: body.component_code, url: body.component_url });
        return { data: toComponentView(row) };
      },
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
      '/components/:id/publish',
      {
        schema: {
          tags: ['components', 'extensions'],
          summary: "Publish a saved component under its key in the account's registry (semantic version, greater than the last)",
          params: Type.Object({ id: Type.String() }),
          body: Type.Optional(Type.Object(fieldParams)),
          response,
        },
      },
      async (request) => ({ data: toComponentView(await services.components.publishInAccount(request.account.id, request.params.id)) }),
    );
  };
}
