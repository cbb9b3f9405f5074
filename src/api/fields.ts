// `include` and `exclude`: comma-separated field names applied to the `data` of every response.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { invalid } from '../model/errors.js';

// Spaces around the commas are allowed (`include=id, email`): clients build these lists by hand. An empty list is
// the parameter's default (every field), as clients that always send it leave it.
const FIELD_LIST = '^\\s*([A-Za-z0-9_$]+\\s*(,\\s*[A-Za-z0-9_$]+\\s*)*)?$';

/** Schema properties every endpoint accepts, in its query (GET) or body (POST). */
export const fieldParams = {
  include: Type.Optional(Type.String({ pattern: FIELD_LIST, description: 'Comma-separated field names to include; default all' })),
  exclude: Type.Optional(Type.String({ pattern: FIELD_LIST, description: 'Comma-separated field names to exclude; default none' })),
};

interface FieldSelection {
  include?: string[];
  exclude?: string[];
}

/**
 * Whether the body holds the request's parameters, `include` and `exclude` among them: a route without a body schema
 * (checkBodyFields holds such a body to those two) or one whose schema declares them. A body that is data of its own
 * (a manual run's event) is not read: an event with an `include` field would trim the answer.
 */
function bodyTakesFields(request: FastifyRequest, name: 'include' | 'exclude'): boolean {
  const schema = request.routeOptions.schema?.body as SchemaNode | undefined;
  return !schema || Object.hasOwn(schema.properties ?? {}, name);
}

function selectionOf(request: FastifyRequest): FieldSelection | undefined {
  const read = (source: unknown, name: 'include' | 'exclude'): string[] | undefined => {
    const value = source && typeof source === 'object' ? (source as Record<string, unknown>)[name] : undefined;
    return typeof value === 'string' && value.trim() !== '' ? value.split(',').map((field) => field.trim()) : undefined;
  };
  const fromBody = (name: 'include' | 'exclude') => (bodyTakesFields(request, name) ? read(request.body, name) : undefined);
  const include = fromBody('include') ?? read(request.query, 'include');
  const exclude = fromBody('exclude') ?? read(request.query, 'exclude');
  if (!include && !exclude) return undefined;
  return { ...(include && { include }), ...(exclude && { exclude }) };
}

function pick(item: unknown, selection: FieldSelection): unknown {
  if (!item || typeof item !== 'object' || Array.isArray(item)) return item;
  const entries = Object.entries(item).filter(([name]) => (!selection.include || selection.include.includes(name)) && !selection.exclude?.includes(name));
  return Object.fromEntries(entries);
}

/** Trims one item of `data` to the fields a request asks for. */
export type FieldSelector = (item: unknown) => unknown;

/**
 * How to trim each item of `data` for this request; undefined when it asks for every field, so that a caller that
 * shares one serialisation between clients (the live streams) keeps doing so for all that do not trim.
 */
export function fieldSelectorOf(request: FastifyRequest): FieldSelector | undefined {
  const selection = selectionOf(request);
  return selection && ((item) => pick(item, selection));
}

/** The body trimmed to the fields the request asks for; only `{ data }` bodies are trimmed, anything else passes. */
export function selectFields(request: FastifyRequest, body: unknown): unknown {
  const select = fieldSelectorOf(request);
  if (!select || typeof body !== 'object' || body === null || (body as { data?: unknown }).data === undefined) return body;
  const { data } = body as { data: unknown };
  return { ...body, data: Array.isArray(data) ? data.map(select) : select(data) };
}

const FIELD_LIST_PATTERN = new RegExp(FIELD_LIST);

/** What is wrong with an `include` or `exclude` value, in the words of the schemas that declare them; else undefined. */
function fieldListProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return 'must be string';
  return FIELD_LIST_PATTERN.test(value) ? undefined : `must match pattern "${FIELD_LIST}"`;
}

/** A query parameter that takes one value, given `count` times. */
function givenTimes(count: number): string {
  return `is given ${count} times; give it once`;
}

/**
 * A POST whose route declares no body (webhooks, subscriptions) still reads `include` and `exclude` from it, as every
 * endpoint does: they are checked as a body schema's `fieldParams` would be, so a malformed one is a 400 before anything
 * is created rather than an answer trimmed to nothing. Any other field of such a body is refused, naming the query
 * parameter it was meant as, rather than ignored.
 */
function checkBodyFields(request: FastifyRequest): void {
  const body = request.body;
  if (request.routeOptions.schema?.body || body === undefined) return;
  // Such a body may only be an object (of include / exclude), as a body schema's would: `[]`, `null`, `5` are refused.
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalid('invalid body: must be object', [{ in: 'body', message: 'must be object' }]);
  }
  for (const field of ['include', 'exclude'] as const) {
    if (!Object.hasOwn(body, field)) continue;
    const value = (body as Record<string, unknown>)[field];
    const message = fieldListProblem(value);
    if (message) throw invalid(`invalid body: ${field} ${message}`, [{ in: 'body', field, message }]);
  }
  // Any other field would be dropped unread: `{"event_name": "orders"}` made (or deleted!) the default stream's subscription.
  const queryFields = Object.keys((request.routeOptions.schema?.querystring as { properties?: object } | undefined)?.properties ?? {});
  for (const field of Object.keys(body)) {
    if (field === 'include' || field === 'exclude') continue;
    const message = queryFields.includes(field)
      ? `is a query parameter of this endpoint, not a body field: send it as ?${field}=…`
      : 'is not a field of this endpoint, whose body may only hold include and exclude';
    throw invalid(`invalid body: ${field} ${message}`, [{ in: 'body', field, message }]);
  }
}

type SchemaNode = { type?: unknown; anyOf?: SchemaNode[]; oneOf?: SchemaNode[]; properties?: Record<string, SchemaNode> };

function takesList(schema: SchemaNode | undefined): boolean {
  return schema?.type === 'array' || [...(schema?.anyOf ?? []), ...(schema?.oneOf ?? [])].some(takesList);
}

/**
 * A query parameter given twice (`?limit=1&limit=2`) reads as a list, which the schema words as "limit must be integer":
 * it is refused as given twice instead, naming it, for every parameter that takes one value.
 */
function checkRepeatedQuery(request: FastifyRequest): void {
  const properties = (request.routeOptions.schema?.querystring as SchemaNode | undefined)?.properties;
  if (!properties) return;
  for (const [name, value] of Object.entries(request.query as Record<string, unknown>)) {
    if (!Array.isArray(value) || !Object.hasOwn(properties, name) || takesList(properties[name])) continue;
    const message = givenTimes(value.length);
    throw invalid(`invalid querystring: ${name} ${message}`, [{ in: 'querystring', field: name, message }]);
  }
}

/**
 * `include` and `exclude` are read from the query of any route (selectionOf), but only a route whose query schema
 * declares them (GET, DELETE) has them checked by it. On the others (a POST or PUT with a body) a malformed one would
 * trim the answer to nothing, the id of what was just created included, and one given twice would be dropped unread:
 * they are checked here as that schema would check them, before anything is created.
 */
function checkQueryFields(request: FastifyRequest): void {
  const properties = (request.routeOptions.schema?.querystring as SchemaNode | undefined)?.properties ?? {};
  const query = (request.query ?? {}) as Record<string, unknown>;
  for (const field of ['include', 'exclude'] as const) {
    if (Object.hasOwn(properties, field) || !Object.hasOwn(query, field)) continue;
    const value = query[field];
    const message = Array.isArray(value) ? givenTimes(value.length) : fieldListProblem(value);
    if (message) throw invalid(`invalid querystring: ${field} ${message}`, [{ in: 'querystring', field, message }]);
  }
}

/** Filters after serialisation, so that response schemas keep serialising the full shape; only requests that ask pay. */
export function installFieldSelection(app: FastifyInstance): void {
  // Before the query is validated: a body holding `url` is answered so, not with "must have required property 'url'".
  app.addHook('preValidation', async (request) => {
    checkRepeatedQuery(request);
    checkQueryFields(request);
    checkBodyFields(request);
  });
  app.addHook('onSend', async (request, reply, payload) => {
    if (typeof payload !== 'string' || payload === '' || reply.statusCode >= 300 || !selectionOf(request)) return payload;
    // A 204's empty body and bodies without `data` pass as they are.
    const body = JSON.parse(payload) as unknown;
    const selected = selectFields(request, body);
    return selected === body ? payload : JSON.stringify(selected);
  });
}
