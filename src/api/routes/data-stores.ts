// GET /data_stores (the account's key-value stores, paginated) and GET /data_stores/{name or id}/keys.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { DataStoreService } from '../../services/data-stores.js';
import { dataOf, pageBody, pageOf, paginationQuery, toPageRequest } from '../envelope.js';
import { fieldParams } from '../fields.js';

const dataStoreSchema = Type.Object({
  id: Type.String({ description: 'prefix ds_' }),
  name: Type.String({ description: 'what data_store props name it by; made on the first write to that name' }),
  key_count: Type.Integer({ description: 'records that have not expired' }),
  created_at: Type.Integer({ description: 'epoch seconds' }),
  updated_at: Type.Integer({ description: 'epoch seconds of the last commit that wrote to it' }),
});

export function dataStoreRoutes(services: { dataStores: DataStoreService }): FastifyPluginAsync {
  return async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();

    app.get(
      '/data_stores',
      {
        schema: {
          tags: ['data stores', 'extensions'],
          summary: "The account's data stores, newest first",
          querystring: Type.Object(paginationQuery),
          response: { 200: pageOf(dataStoreSchema) },
        },
      },
      async (request) => pageBody(await services.dataStores.list(request.account.id, toPageRequest(request.query)), (view) => view),
    );

    app.get(
      '/data_stores/:store/keys',
      {
        schema: {
          tags: ['data stores', 'extensions'],
          summary: "A data store's keys (by its name or id), in key order",
          params: Type.Object({ store: Type.String({ minLength: 1 }) }),
          querystring: Type.Object(fieldParams),
          response: { 200: dataOf(Type.Object({ id: Type.String(), name: Type.String(), keys: Type.Array(Type.String()) })) },
        },
      },
      async (request) => ({ data: await services.dataStores.keys(request.account.id, request.params.store) }),
    );
  };
}
