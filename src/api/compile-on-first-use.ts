// Route schemas compiled the first time a request needs them instead of at start.
//
// Why: the ~70 request validators and as many response serializers cost about 10 MB of resident memory and a good
// part of the start-up time, and most servers answer a handful of routes. A schema that cannot compile fails its
// first request instead of the start; the contract fuzz suite calls every documented operation, so it fails there.
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { ValidateFunction } from 'ajv';
import type { FastifyInstance } from 'fastify';

/** A validator compiled the first time it runs; Fastify reads `errors` after each call, as on Ajv's own. */
export function validatorOnFirstUse(compile: () => ValidateFunction): ValidateFunction {
  let validate: ValidateFunction | undefined;
  const onFirstUse = ((data: unknown) => {
    validate ??= compile();
    const valid = validate(data);
    onFirstUse.errors = validate.errors;
    return valid;
  }) as ValidateFunction;
  return onFirstUse;
}

/** Fastify's own response serializers (fast-json-stringify, with its defaults), each compiled when its route first answers. */
export function installSerializersOnFirstUse(app: FastifyInstance): void {
  // No shared schemas are added to the server (no addSchema), so the compiler gets none.
  const compile = SerializerSelector()({}, {});
  app.setSerializerCompiler((route) => {
    let serialize: ((payload: unknown) => string) | undefined;
    return (payload: unknown) => {
      // The compiler reads only the schema; Fastify leaves httpStatus out where no status applies.
      serialize ??= compile({ method: route.method, url: route.url, httpStatus: route.httpStatus ?? 'default', schema: route.schema });
      return serialize(payload);
    };
  });
}
