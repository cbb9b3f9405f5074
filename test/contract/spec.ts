// The specification's JSON Schemas (schemas/*.json, written from /work/shared/spec/interface.md, not from the code),
// the validators the contract tests use, and the structural comparison of those schemas with the served OpenAPI document.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { expect } from 'vitest';
import { ERRORS } from '../../src/model/errors.js';

type Json = any;

const SCHEMA_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'schemas');
const BASE = 'https://tributary.invalid/contract/';

/** Every schema file, by file name (`user.json`), as written. */
export const SCHEMAS: Record<string, Json> = Object.fromEntries(
  fs
    .readdirSync(SCHEMA_DIR)
    .filter((f) => f.endsWith('.json'))
    .map((f) => [f, JSON.parse(fs.readFileSync(path.join(SCHEMA_DIR, f), 'utf8'))]),
);

/** A schema reference as the tests name it: a file, or a file and one of its `$defs` (`source.json#listItem`). */
export type SchemaName =
  | 'user.json'
  | 'component.json'
  | 'source.json'
  | 'source.json#listItem'
  | 'source.json#updated'
  | 'source.json#timerProp'
  | 'source.json#httpProp'
  | 'subscription.json'
  | 'auto-subscription.json'
  | 'webhook.json'
  | 'webhook.json#listItem'
  | 'event-summary.json'
  | 'event-summary.json#errorEvent'
  | 'event-summary.json#workflowErrorEvent'
  | 'page-info.json'
  | 'error.json'
  | 'envelope.json'
  | 'page.json'
  | 'list.json';

function uriOf(name: SchemaName): string {
  const [file, def] = name.split('#');
  return def ? `${BASE}${file}#/$defs/${def}` : `${BASE}${file}`;
}

/** The schema object a name designates (a file, or one of its `$defs`). */
export function schemaOf(name: SchemaName): Json {
  const [file, def] = name.split('#') as [string, string | undefined];
  const schema = SCHEMAS[file];
  if (!schema) throw new Error(`no schema file ${file}`);
  return def ? schema.$defs[def] : schema;
}

const ajv = new Ajv({ allErrors: true, strict: true });
for (const schema of Object.values(SCHEMAS)) ajv.addSchema(schema);
// The error body's code is one of the registered codes: the registry is the list, not a copy of it.
const errorCodes = ajv.compile({
  type: 'object',
  required: ['code'],
  properties: { code: { enum: Object.keys(ERRORS) } },
});

function validator(name: SchemaName): ValidateFunction {
  const validate = ajv.getSchema(uriOf(name));
  if (!validate) throw new Error(`schema ${name} not found`);
  return validate;
}

function explain(errors: ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`);
}

/** The problems `value` has under the schema: an empty list when it conforms. */
export function problemsOf(name: SchemaName, value: unknown): string[] {
  const validate = validator(name);
  return validate(value) ? [] : explain(validate.errors);
}

/** Asserts that `value` conforms to the schema, listing every problem when it does not. */
export function expectValid(name: SchemaName, value: unknown, what: string = name): void {
  expect(problemsOf(name, value), `${what} against ${name}: ${JSON.stringify(value)?.slice(0, 1500)}`).toEqual([]);
}

/** `{ data: <item> }`. */
export function expectSingle(body: unknown, item: SchemaName, what?: string): void {
  expectValid('envelope.json', body, what);
  expectValid(item, (body as Json)?.data, what);
}

/** `{ page_info, data: [<item>] }`. */
export function expectPage(body: unknown, item: SchemaName, what?: string): void {
  expectValid('page.json', body, what);
  const data = (body as Json)?.data;
  if (Array.isArray(data)) data.forEach((d, i) => expectValid(item, d, `${what ?? item} item ${i}`));
  const info = (body as Json)?.page_info;
  if (info && Array.isArray(data)) expect(info.count, 'page_info.count is the number of items in this page').toBe(data.length);
}

/** `{ data: [<item>] }`, no page_info. */
export function expectList(body: unknown, item: SchemaName, what?: string): void {
  expectValid('list.json', body, what);
  const data = (body as Json)?.data;
  if (Array.isArray(data)) data.forEach((d, i) => expectValid(item, d, `${what ?? item} item ${i}`));
}

/** An error answer: the status, then `{ error, code, details? }` with a registered code whose status is this one. */
export function expectError(res: { status: number; body: unknown }, status: number, code?: keyof typeof ERRORS, what?: string): void {
  expect(res.status, `${what ?? 'error'}: status (body ${JSON.stringify(res.body)?.slice(0, 500)})`).toBe(status);
  expectValid('error.json', res.body, what);
  expect(errorCodes(res.body) ? [] : explain(errorCodes.errors), `${what ?? 'error'}: code is registered`).toEqual([]);
  const registered = ERRORS[(res.body as Json)?.code as keyof typeof ERRORS];
  if (registered) expect(registered.status, `${what ?? 'error'}: the registry's status for ${(res.body as Json).code}`).toBe(status);
  if (code) expect((res.body as Json)?.code, what).toBe(code);
}

/** The field names the spec gives an object (a schema's properties; for unions, those of every shape). */
export function fieldsOf(name: SchemaName): string[] {
  const schema = schemaOf(name);
  const shapes: Json[] = schema.anyOf ?? schema.oneOf ?? [schema];
  return [...new Set(shapes.flatMap((s) => Object.keys(s.properties ?? {})))];
}

/** The fields the spec requires of an object (for unions, those of the shape `value` has). */
export function requiredFieldsOf(name: SchemaName, value?: unknown): string[] {
  const schema = schemaOf(name);
  const shapes: Json[] = schema.anyOf ?? schema.oneOf ?? [schema];
  const shape = shapes.find((s) => value === undefined || ajv.validate(s, value)) ?? shapes[0];
  return [...(shape.required ?? [])];
}

/**
 * A trimmed object (after `include` / `exclude`) against its schema: every field it still has conforms to the
 * schema of that field, and it has no field the schema does not know. Required fields are not required any more.
 */
export function expectValidPart(name: SchemaName, value: Json, what?: string): void {
  const schema = schemaOf(name);
  const shapes: Json[] = schema.anyOf ?? schema.oneOf ?? [schema];
  const problems = shapes.map((shape) => {
    const partial = { ...shape, required: [] as string[] };
    // The schema's own $defs references (#/$defs/...) must resolve against its file.
    const [file] = name.split('#');
    const rebased = JSON.parse(JSON.stringify(partial).replaceAll('"#/$defs/', `"${BASE}${file}#/$defs/`));
    delete rebased.$id;
    return ajv.validate(rebased, value) ? [] : explain(ajv.errors);
  });
  if (!problems.some((p) => p.length === 0)) expect(problems.flat(), `${what ?? name} (trimmed) against ${name}`).toEqual([]);
}

// ---------------------------------------------------------------------------------------------------------------
// The spec's endpoints.

export interface SpecEndpoint {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** The path as the spec writes it, relative to {base_url} (which ends in /v1), except the stream, which has no /v1. */
  path: string;
  /** True for the stream endpoint, whose address has no /v1 segment. */
  outsideV1?: boolean;
  /** The success status: the spec's where it gives one (200 source creation, 202 event deletion), else the README's. */
  status: number;
  /** The success body: envelope and item schema, when the spec (or, where noted, the README) shows it. */
  response?: { envelope: 'envelope.json' | 'page.json' | 'list.json'; item: SchemaName; from?: 'README' };
}

export const SPEC_ENDPOINTS: SpecEndpoint[] = [
  { method: 'POST', path: '/components', status: 200, response: { envelope: 'envelope.json', item: 'component.json' } },
  { method: 'GET', path: '/components/{key|id}', status: 200, response: { envelope: 'envelope.json', item: 'component.json' } },
  { method: 'GET', path: '/components/registry/{key}', status: 200, response: { envelope: 'envelope.json', item: 'component.json' } },
  { method: 'GET', path: '/users/me/sources/', status: 200, response: { envelope: 'page.json', item: 'source.json#listItem' } },
  { method: 'POST', path: '/sources/', status: 200, response: { envelope: 'envelope.json', item: 'source.json' } },
  { method: 'PUT', path: '/sources/{id}', status: 200, response: { envelope: 'envelope.json', item: 'source.json#updated', from: 'README' } },
  { method: 'DELETE', path: '/sources/{id}', status: 204 },
  { method: 'GET', path: '/sources/{id}/sse', outsideV1: true, status: 200 },
  { method: 'GET', path: '/sources/{id}/event_summaries', status: 200, response: { envelope: 'page.json', item: 'event-summary.json' } },
  { method: 'DELETE', path: '/sources/{id}/events', status: 202 },
  { method: 'POST', path: '/subscriptions', status: 200, response: { envelope: 'envelope.json', item: 'subscription.json', from: 'README' } },
  { method: 'POST', path: '/auto_subscriptions', status: 200, response: { envelope: 'envelope.json', item: 'auto-subscription.json', from: 'README' } },
  { method: 'DELETE', path: '/subscriptions', status: 204 },
  { method: 'GET', path: '/users/me/subscriptions', status: 200, response: { envelope: 'list.json', item: 'subscription.json' } },
  { method: 'POST', path: '/webhooks', status: 200, response: { envelope: 'envelope.json', item: 'webhook.json' } },
  { method: 'GET', path: '/users/me/webhooks', status: 200, response: { envelope: 'page.json', item: 'webhook.json#listItem' } },
  { method: 'GET', path: '/workflows/{workflow_id}/event_summaries', status: 200, response: { envelope: 'page.json', item: 'event-summary.json' } },
  { method: 'GET', path: '/workflows/{workflow_id}/$errors/event_summaries', status: 200, response: { envelope: 'page.json', item: 'event-summary.json' } },
  { method: 'GET', path: '/users/me', status: 200, response: { envelope: 'envelope.json', item: 'user.json' } },
];

/** The whole response schema of an endpoint: its envelope with `data` (or its items) replaced by the item schema. */
export function responseSchemaOf(endpoint: SpecEndpoint): Json | undefined {
  if (!endpoint.response) return undefined;
  const envelope = structuredClone(SCHEMAS[endpoint.response.envelope]);
  const item = inline(schemaOf(endpoint.response.item), endpoint.response.item.split('#')[0]!);
  if (endpoint.response.envelope === 'envelope.json') envelope.properties.data = item;
  else envelope.properties.data.items = item;
  return inline(envelope, endpoint.response.envelope);
}

/** Replaces every `$ref` of a spec schema by what it designates, so that the comparison walks plain schemas. */
function inline(schema: Json, file: string): Json {
  if (Array.isArray(schema)) return schema.map((s) => inline(s, file));
  if (!schema || typeof schema !== 'object') return schema;
  if (typeof schema.$ref === 'string') {
    const [target, pointer] = (schema.$ref as string).split('#') as [string, string | undefined];
    const targetFile = target === '' ? file : target;
    let resolved: Json = SCHEMAS[targetFile];
    for (const part of (pointer ?? '').split('/').filter(Boolean)) resolved = resolved[part];
    return inline(resolved, targetFile);
  }
  return Object.fromEntries(
    Object.entries(schema)
      .map(([k, v]) => [k, k === '$defs' ? undefined : inline(v, file)])
      .filter(([, v]) => v !== undefined),
  );
}

// ---------------------------------------------------------------------------------------------------------------
// The OpenAPI document against the spec's schemas.
//
// What "the OpenAPI schema describes the spec's response" means here, checked node by node from the root:
//  1. every field the spec requires is a property of the OpenAPI object (it is described, not merely allowed);
//  2. the OpenAPI type admits every value the spec allows (its JSON types include the spec's; integer fits number;
//     an unconstrained OpenAPI schema admits anything); for objects and arrays this recurses into fields and items;
//  3. the OpenAPI object requires no field the spec leaves optional (a client generated from it would reject
//     conforming answers); fields the spec leaves optional but OpenAPI describes must have compatible types too.
// OpenAPI may be looser than the spec (a nullable cursor, an optional user_id): that describes a superset, which
// a client accepts. The spec's unions (the two User shapes) are compared shape by shape; when OpenAPI itself is a
// union, one of its object branches must satisfy the rules. $ref in the OpenAPI document is followed.

type TypeSet = Set<string>;

function jsonTypeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function deref(doc: Json, schema: Json): Json {
  let s = schema;
  for (let i = 0; s && typeof s.$ref === 'string' && i < 20; i++) {
    s = (s.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .reduce((node: Json, part: string) => node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
  }
  return s ?? {};
}

function typesOf(doc: Json, schema: Json): TypeSet {
  const s = deref(doc, schema);
  const branches: Json[] | undefined = s.anyOf ?? s.oneOf;
  if (branches) return new Set(branches.flatMap((b) => [...typesOf(doc, b)]));
  if (s.allOf) {
    const sets = (s.allOf as Json[]).map((b) => typesOf(doc, b)).filter((t) => !t.has('any'));
    if (sets.length) {
      // The intersection: a type every branch admits.
      const [first, ...rest] = sets as [TypeSet, ...TypeSet[]];
      return new Set([...first].filter((t) => rest.every((b) => b.has(t) || (t === 'integer' && b.has('number')))));
    }
  }
  if (s.const !== undefined) return new Set([jsonTypeOf(s.const)]);
  if (Array.isArray(s.enum)) return new Set((s.enum as unknown[]).map(jsonTypeOf));
  if (s.type !== undefined) {
    const types = new Set<string>(Array.isArray(s.type) ? s.type : [s.type]);
    if (s.nullable === true) types.add('null');
    return types;
  }
  return new Set(['any']);
}

function admits(oas: TypeSet, spec: TypeSet): boolean {
  if (oas.has('any')) return true;
  if (spec.has('any')) return false;
  return [...spec].every((t) => oas.has(t) || (t === 'integer' && oas.has('number')));
}

/** The object schemas an OpenAPI node stands for: itself, or its object branches (allOf merged). */
function objectShapes(doc: Json, schema: Json): Json[] {
  const s = deref(doc, schema);
  const branches: Json[] | undefined = s.anyOf ?? s.oneOf;
  if (branches) return branches.flatMap((b) => objectShapes(doc, b));
  if (s.allOf) {
    const parts = (s.allOf as Json[]).map((b) => deref(doc, b));
    return [
      {
        type: 'object',
        properties: Object.assign({}, s.properties, ...parts.map((p) => p.properties ?? {})),
        required: [...(s.required ?? []), ...parts.flatMap((p) => p.required ?? [])],
      },
    ];
  }
  return s.properties || typesOf(doc, s).has('object') ? [s] : [];
}

function arrayItems(doc: Json, schema: Json): Json | undefined {
  const s = deref(doc, schema);
  const branches: Json[] | undefined = s.anyOf ?? s.oneOf;
  if (branches) return branches.map((b) => arrayItems(doc, b)).find((i) => i !== undefined);
  return typesOf(doc, s).has('array') ? (s.items ?? {}) : undefined;
}

/** Problems of the OpenAPI node `oas` as a description of the spec node `spec`; empty when it describes it. */
export function describeProblems(doc: Json, spec: Json, oas: Json, at = '$'): string[] {
  const shapes: Json[] | undefined = spec.anyOf ?? spec.oneOf;
  if (shapes?.every((s) => s.properties)) {
    return shapes.flatMap((shape, i) => describeProblems(doc, shape, oas, `${at}<${shape.title ?? `shape ${i}`}>`));
  }
  const problems: string[] = [];
  const specTypes = typesOf(doc, spec);
  const oasTypes = typesOf(doc, oas);
  if (!admits(oasTypes, specTypes)) {
    problems.push(`${at}: the spec allows ${[...specTypes].join('|')}, OpenAPI ${[...oasTypes].join('|')}`);
    return problems;
  }
  if (spec.properties) {
    const candidates = objectShapes(doc, oas);
    if (candidates.length === 0) return [...problems, `${at}: OpenAPI describes no object here`];
    const byCandidate = candidates.map((candidate) => objectProblems(doc, spec, candidate, at));
    const best = byCandidate.reduce((a, b) => (b.length < a.length ? b : a));
    problems.push(...best);
  }
  if (spec.items) {
    const items = arrayItems(doc, oas);
    if (items === undefined) problems.push(`${at}: OpenAPI describes no array here`);
    else problems.push(...describeProblems(doc, spec.items, items, `${at}[]`));
  }
  return problems;
}

function objectProblems(doc: Json, spec: Json, oasObject: Json, at: string): string[] {
  const problems: string[] = [];
  const specRequired = new Set<string>(spec.required ?? []);
  const oasProps: Record<string, Json> = deref(doc, oasObject).properties ?? {};
  for (const [name, sub] of Object.entries<Json>(spec.properties)) {
    const described = oasProps[name];
    if (described === undefined) {
      if (specRequired.has(name)) problems.push(`${at}.${name}: required by the spec, not described by OpenAPI`);
      else if (deref(doc, oasObject).additionalProperties === false) problems.push(`${at}.${name}: allowed by the spec, refused by OpenAPI`);
      continue;
    }
    problems.push(...describeProblems(doc, sub, described, `${at}.${name}`));
  }
  for (const name of deref(doc, oasObject).required ?? []) {
    if (!specRequired.has(name)) problems.push(`${at}.${name}: required by OpenAPI, optional or absent in the spec`);
  }
  return problems;
}

/** `/v1/components/{keyOrId}` and `/components/{key|id}` alike: parameters as `{}`, no trailing slash. */
export function normalisePath(p: string): string {
  return p.replace(/\{[^}]*\}/g, '{}').replace(/\/+$/, '') || '/';
}

/** The OpenAPI operation documenting a spec endpoint, if any. */
export function operationOf(doc: Json, endpoint: SpecEndpoint): Json | undefined {
  const wanted = normalisePath(`${endpoint.outsideV1 ? '' : '/v1'}${endpoint.path}`);
  const entry = Object.entries<Json>(doc.paths ?? {}).find(([p]) => normalisePath(p) === wanted);
  return entry?.[1]?.[endpoint.method.toLowerCase()];
}
