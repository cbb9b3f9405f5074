// GET /data_stores (the account's key-value stores, paginated), GET /data_stores/{name or id}/keys, and one record's
// GET, PUT and DELETE /data_stores/{name or id}/records?key=.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { DataStoreService } from '../../services/data-stores.js';
import { MAX_DATA_STORE_KEY_CHARS } from '../../runtime/worker/limits.js';
import { dataOf, noBody, pageBody, pageOf, paginationQuery, toPageRequest } from '../envelope.js';
import { fieldParams } from '../fields.js';
import { refuseUndecodableQuery } from '../text-guard.js';

const dataStoreSchema = Type.Object({
  id: Type.String({ description: 'prefix ds_' }),
  name: Type.String({ description: 'what data_store props name it by; made on the first write to that name' }),
  key_count: Type.Integer({ description: 'records that have not expired' }),
  created_at: Type.Integer({ description: 'epoch seconds' }),
  updated_at: Type.Integer({ description: 'epoch seconds of the last commit that wrote to it' }),
});

const storeParams = Type.Object({ store: Type.String({ minLength: 1, description: 'the store by its name or id' }) });

/**
 * The key travels in the query, not the path: a key may be any text, and a path segment of `.` or `..` (or `%2E%2E`)
 * is resolved away by browsers, fetch and curl before it is sent, so those keys could never be named there.
 */
const recordQuery = Type.Object({
  key: Type.String({ minLength: 1, maxLength: MAX_DATA_STORE_KEY_CHARS, description: "the record's key, percent-encoded as any query value" }),
  ...fieldParams,
});

/**
 * A write's key, without the read's length bounds: the service refuses a key in the words a component's set() is
 * refused in. Any other parameter is refused, as on the routes that create: a misspelt `tll=60` is not ignored.
 */
const writeQuery = Type.Object(
  { key: Type.String({ description: "the record's key, percent-encoded as any query value" }), ...fieldParams },
  { additionalProperties: false },
);

const writeBody = Type.Object(
  {
    value: Type.Unknown({ description: "any JSON value, stored as a component's set(key, value) stores it (null too)" }),
    ttl: Type.Optional(
      Type.Union([Type.Number(), Type.Null()], {
        description: 'seconds until the record expires (up to 100 years), counted from the write; null or left out: never, as set() without a ttl',
      }),
    ),
    ...fieldParams,
  },
  { additionalProperties: false },
);

const recordSchema = Type.Object({
  key: Type.String(),
  value: Type.Unknown({ description: 'the JSON value the component stored' }),
  expires_at: Type.Optional(Type.Integer({ description: 'only with a ttl: epoch seconds, rounded up' })),
  expires_at_ms: Type.Optional(Type.Integer({ description: 'only with a ttl: epoch milliseconds' })),
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
      '/data_stores/:store',
      {
        schema: {
          tags: ['data stores', 'extensions'],
          summary: 'One data store (by its name or id), as the list shows it',
          params: storeParams,
          querystring: Type.Object(fieldParams),
          response: { 200: dataOf(dataStoreSchema) },
        },
      },
      async (request) => ({ data: await services.dataStores.get(request.account.id, request.params.store) }),
    );

    app.delete(
      '/data_stores/:store',
      {
        schema: {
          tags: ['data stores', 'extensions'],
          summary: 'Delete a data store (by its name or id) and all its records; a data_store prop naming it makes a new, empty one at its next write',
          params: storeParams,
          response: { 204: noBody },
        },
      },
      async (request, reply) => {
        await services.dataStores.delete(request.account.id, request.params.store);
        return reply.status(204).send(null);
      },
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

    app.get(
      '/data_stores/:store/records',
      {
        // The key names what is read: one that does not decode is refused, as a change's is (text-guard.ts).
        preValidation: async (request) => refuseUndecodableQuery(request),
        schema: {
          tags: ['data stores', 'extensions'],
          summary: "One record of a data store: its key's value as the component stored it, and its expiry",
          params: storeParams,
          querystring: recordQuery,
          response: { 200: dataOf(recordSchema) },
        },
      },
      async (request) => ({ data: await services.dataStores.record(request.account.id, request.params.store, request.query.key) }),
    );

    app.put(
      '/data_stores/:store/records',
      {
        schema: {
          tags: ['data stores', 'extensions'],
          summary:
            "Set one record of a data store, as a component's set(key, value, { ttl }) would: same limits and messages; a store named that the account has not is made (an unknown id is a 404)",
          params: storeParams,
          querystring: writeQuery,
          body: writeBody,
          response: { 200: dataOf(recordSchema) },
        },
      },
      async (request) => {
        const { store } = request.params;
        return { data: await services.dataStores.setRecord(request.account.id, store, request.query.key, request.body.value, request.body.ttl) };
      },
    );

    app.delete(
      '/data_stores/:store/records',
      {
        schema: {
          tags: ['data stores', 'extensions'],
          summary: "Delete one record of a data store, as a component's delete(key) would; 404 when it is not there",
          params: storeParams,
          querystring: recordQuery,
          response: { 204: noBody },
        },
      },
      async (request, reply) => {
        await services.dataStores.deleteRecord(request.account.id, request.params.store, request.query.key);
        return reply.status(204).send(null);
      },
    );
  };
}
