// Completes the served OpenAPI document where @fastify/swagger cannot: the error answers each operation may give, and request bodies that may be left out.
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { ERRORS } from '../model/errors.js';
import { absentBodyAsEmpty } from './envelope.js';

/** Set on an operation whose body may be left out, read (and removed) by `completeDocument`. */
const OPTIONAL_BODY = 'x-tributary-optional-body';

/** `{ error, code, details? }`, the body of every error answer (README, Errors). */
export const errorBodySchema = {
  type: 'object',
  required: ['error', 'code'],
  properties: {
    error: { type: 'string', description: 'what went wrong, in words' },
    code: { type: 'string', enum: Object.keys(ERRORS), description: 'stable snake_case code; see the README for the status of each' },
    details: { type: 'array', items: { type: 'object', additionalProperties: true }, description: 'each refused field, when there are several' },
  },
  additionalProperties: false,
};

const errorAnswer = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

interface Operation {
  responses?: Record<string, unknown>;
  requestBody?: { required?: boolean };
  [OPTIONAL_BODY]?: boolean;
}
interface Document {
  components?: { schemas?: Record<string, unknown> };
  paths?: Record<string, Record<string, Operation | unknown>>;
}

type Transform = NonNullable<Extract<FastifyDynamicSwaggerOptions, { transform?: unknown }>['transform']>;
type TransformObject = NonNullable<FastifyDynamicSwaggerOptions['transformObject']>;

/** Marks a route whose body may be absent (an optional body schema, or one read as `{}` when absent). */
export const markOptionalBodies: Transform = ({ schema, url, route }) => {
  const body = (schema as { body?: Record<string, unknown> } | undefined)?.body;
  const preValidation = route.preValidation;
  const hooks = Array.isArray(preValidation) ? preValidation : [preValidation];
  const optional = body !== undefined && (body['~optional'] === true || hooks.includes(absentBodyAsEmpty));
  return { schema: optional ? { ...schema, [OPTIONAL_BODY]: true } : schema, url } as ReturnType<Transform>;
};

/** Adds the error schema and a `4XX` and `5XX` answer to each API operation, and unmarks the bodies that may be absent. */
export const completeDocument: TransformObject = (documentObject) => {
  const doc = ('openapiObject' in documentObject ? documentObject.openapiObject : documentObject.swaggerObject) as Document;
  doc.components ??= {};
  doc.components.schemas = { ...doc.components.schemas, Error: errorBodySchema };
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    const api = path.startsWith('/v1/') || path.endsWith('/sse');
    for (const value of Object.values(item)) {
      const operation = value as Operation;
      if (typeof value !== 'object' || value === null || !operation.responses) continue;
      if (operation[OPTIONAL_BODY]) {
        delete operation[OPTIONAL_BODY];
        if (operation.requestBody) operation.requestBody.required = false;
      }
      if (!api) continue;
      operation.responses['4XX'] ??= errorAnswer('The request failed: an invalid parameter or body, a missing or unknown key, an unknown id, …');
      operation.responses['5XX'] ??= errorAnswer('A failure on the service side');
    }
  }
  return doc as ReturnType<TransformObject>;
};
