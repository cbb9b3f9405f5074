// Response envelopes and the schemas of the pagination parameters, shared by every route.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type, type TSchema } from 'typebox';
import { invalid } from '../model/errors.js';
import type { Page, PageRequest } from '../model/pagination.js';
import { fieldParams } from './fields.js';

const DEFAULT_LIMIT = 10;

export const paginationQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: DEFAULT_LIMIT, description: 'Items per page, 1 to 100; default 10' })),
  after: Type.Optional(Type.String({ minLength: 1, description: 'Cursor: items after it' })),
  before: Type.Optional(Type.String({ minLength: 1, description: 'Cursor: items before it' })),
  ...fieldParams,
};

export const pageInfoSchema = Type.Object({
  total_count: Type.Integer(),
  count: Type.Integer(),
  start_cursor: Type.String({ description: 'Cursor of the first item; on an empty page, the position the page stands at' }),
  end_cursor: Type.String({ description: 'Cursor of the last item; on an empty page, the position the page stands at' }),
});

/** The schema of an answer without a body (204 No Content, 202 Accepted), so that the OpenAPI document states its status. */
export const noBody = Type.Null({ description: 'no body' });

/**
 * preValidation of a POST whose body may be left out: none is checked as an empty object (the schema's validator
 * refuses a missing body even when the schema is optional), and any other body, `null` too, as itself.
 */
export async function absentBodyAsEmpty(request: FastifyRequest): Promise<void> {
  // Only a missing body: a JSON `null` is a body, which the schema refuses as it refuses `[]`.
  if (request.body === undefined) request.body = {};
}

/** Answers 202 with no body at all: sent as null, it would be serialized as the text `null` (a 204 drops it itself). */
export function acceptedWithoutBody(reply: FastifyReply): FastifyReply {
  return reply.status(202).send();
}

export function dataOf<T extends TSchema>(schema: T) {
  return Type.Object({ data: schema });
}

export function pageOf<T extends TSchema>(schema: T) {
  return Type.Object({ page_info: pageInfoSchema, data: Type.Array(schema) });
}

export function toPageRequest(query: { limit?: number | undefined; after?: string | undefined; before?: string | undefined }): PageRequest {
  if (query.after !== undefined && query.before !== undefined) throw invalid('pass either "before" or "after", not both');
  return { limit: query.limit ?? DEFAULT_LIMIT, after: query.after, before: query.before };
}

export function pageBody<T, U>(page: Page<T>, map: (item: T) => U) {
  return {
    page_info: {
      total_count: page.totalCount,
      count: page.items.length,
      start_cursor: page.startCursor,
      end_cursor: page.endCursor,
    },
    data: page.items.map(map),
  };
}
