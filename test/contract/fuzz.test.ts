// Property-based fuzzing driven by the server's own OpenAPI document: for every documented operation, random valid
// requests (from its parameter and body schemas, with the account's real ids) and random invalid ones (wrong types,
// missing or extra fields, huge and odd strings, bad limits, cursors, field lists, content types and JSON, bad keys),
// then concurrent conflicting writes, and a second account that must never see the first one's data.
//
// Every answer: never 5xx, no hang; every error is JSON `{ error, code }` with a registered code and its status;
// the server answers GET /v1/users/me after every request.
//
// FUZZ_SEED=<n> changes the seed (fixed by default, so a run is repeatable); FUZZ_RUNS=<n> sets the runs of every
// property; FUZZ_SHRINK=1 shrinks a counterexample (off by default: each shrink step replays requests against a
// server whose state has moved on). fast-check prints the seed and path of a failure; the message names the request.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERRORS } from '../../src/model/errors.js';
import { account, emitsOf } from '../helpers/account.js';
import type { ApiResponse } from '../helpers/client.js';
import { emitterSource, HOOKS_SOURCE, PROPS_SOURCE } from '../helpers/components.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : 260126;
const RUNS = process.env.FUZZ_RUNS ? Number(process.env.FUZZ_RUNS) : undefined;
/** Runs per documented operation (valid, invalid, url), of the concurrency and of the intruder properties. */
const DEFAULT_RUNS = { valid: 40, invalid: 120, url: 6, concurrent: 40, intruder: 100 };
const HANG_MS = 20_000;

function settings(numRuns: number): fc.Parameters<unknown> {
  return { seed: SEED, numRuns: RUNS ?? numRuns, endOnFailure: !process.env.FUZZ_SHRINK };
}

/** fast-check's report (seed, path, counterexample) with the assertion that failed. */
function reportOf(error: unknown): string {
  const e = error as Error;
  return e.cause instanceof Error && !e.message.includes(e.cause.message) ? `${e.message}\nCaused by: ${e.cause.message}` : e.message;
}

/** Runs one property per documented operation, all of them, then fails with every operation that failed. */
async function forEveryOperation(ops: Op[], check: (op: Op) => Promise<void>): Promise<void> {
  const failures: string[] = [];
  for (const op of ops) {
    try {
      await check(op);
    } catch (error) {
      failures.push(`■ ${op.key}\n${reportOf(error)}`);
    }
  }
  if (failures.length) throw new Error(`${failures.length} of ${ops.length} operations failed:\n\n${failures.join('\n\n')}`);
}

// ---------------------------------------------------------------------------------------------------------------
// The OpenAPI document, as far as the fuzzer reads it.

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  default?: unknown;
  additionalProperties?: boolean | Schema;
  anyOf?: Schema[];
}

interface Param {
  in: 'path' | 'query' | 'header' | 'cookie';
  name: string;
  required?: boolean;
  schema: Schema;
}

interface Op {
  key: string;
  method: string;
  path: string;
  params: Param[];
  body: { required: boolean; schema: Schema } | undefined;
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
  secured: boolean;
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

function operationsOf(doc: any): Op[] {
  const ops: Op[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, raw] of Object.entries<any>(item)) {
      if (!METHODS.includes(method.toUpperCase())) continue;
      const json = raw.requestBody?.content?.['application/json'];
      ops.push({
        key: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        params: raw.parameters ?? [],
        body: json ? { required: Boolean(raw.requestBody.required), schema: json.schema ?? {} } : undefined,
        responses: raw.responses ?? {},
        secured: !(Array.isArray(raw.security) && raw.security.length === 0),
      });
    }
  }
  return ops;
}

/** Field names of the `data` the operation answers with (for include/exclude). */
function dataFieldsOf(op: Op): string[] {
  for (const status of ['200', '202']) {
    const data = op.responses[status]?.content?.['application/json']?.schema?.properties?.data;
    const item = data?.type === 'array' ? data.items : data;
    if (item?.properties) return Object.keys(item.properties);
  }
  return [];
}

const isObjectSchema = (schema: Schema) => schema.type === 'object' || schema.properties !== undefined;

// ---------------------------------------------------------------------------------------------------------------
// Requests: templates whose ids, cursors and big texts are resolved only when sent (ids change as the run goes).

type RefKind = 'source' | 'webhook' | 'component' | 'event' | 'cursor';

/** One of the account's real ids (or cursors, event ids…) of this kind, chosen by `n` when the request is sent. */
class Ref {
  constructor(
    readonly kind: RefKind,
    readonly n: number,
    readonly list = '',
  ) {}
  [fc.toStringMethod](): string {
    return `ref(${this.kind}${this.list ? `:${this.list}` : ''}#${this.n})`;
  }
}

/** A text built when sent (huge strings, deep JSON), printed by its label in counterexamples. */
class Text {
  constructor(
    readonly label: string,
    readonly make: () => string,
  ) {}
  [fc.toStringMethod](): string {
    return this.label;
  }
}

type Val = string | Ref | Text;

interface Req {
  method: string;
  path: string;
  pathParams: Record<string, Val>;
  query: Array<[string, Val]>;
  headers: Record<string, Val>;
  auth: 'A' | 'none' | { header: string };
  body?: { json: unknown } | { text: Val; contentType?: string | undefined } | undefined;
  /** Appended to the query string as is (deliberately malformed encodings). */
  rawQuery?: string;
  /** Path parameters inserted without encoding. */
  rawPath?: boolean;
  pathSuffix?: string;
}

interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string | Uint8Array | undefined;
}

interface Answer {
  status: number;
  contentType: string;
  text: string;
  json: any;
  headers: Headers;
}

const big = (unit: string, times: number) => new Text(`${JSON.stringify(unit)}.repeat(${times})`, () => unit.repeat(times));

// ---------------------------------------------------------------------------------------------------------------
// Values.

const REGISTRY_KEYS = ['http-new-requests', 'schedule-custom-interval', 'json_feed-new-items'];
const COMPONENT_KEYS = ['test-hooks'];
const HELPER_CODE = [HOOKS_SOURCE, PROPS_SOURCE, emitterSource(), emitterSource('unique'), emitterSource('greatest')];
/** Code that is refused, at parse or in a worker's load (each load costs about 100 ms, so there are few). */
const BAD_CODE = [
  'module.exports = {}',
  'module.exports = { name: "x", version: "1", props: { p: "no-such-type" }, async run() {} }',
  'export default { name: "Throws", version: "1", async run() {} }; throw new Error("at load")',
  'module.exports = {',
];
/** Webhook and component URLs that fail fast here: private, unresolvable, or not http. */
const WEBHOOK_URLS = ['https://hooks.example.invalid/in', 'http://example.invalid:8080/p?q=1', 'http://127.0.0.1:9/x', 'ftp://example.invalid/x'];
const COMPONENT_URLS = ['http://127.0.0.1:9/c.mjs', 'https://code.example.invalid/c.mjs', 'file:///etc/passwd', 'not a url'];
const CHANNELS = ['', 'default', '$logs', '$errors', 'orders'];

const ID_CHARS = '0123456789abcdefghjkmnpqrstvwxyzABCXYZ_-';
const idSuffix = fc.string({ unit: fc.constantFrom(...ID_CHARS), maxLength: 40 });
const prefixed = (prefix: string) => idSuffix.map((s) => `${prefix}${s}`);
const idArb = (kind: RefKind, prefix: string) =>
  fc.oneof({ weight: 3, arbitrary: fc.nat().map((n) => new Ref(kind, n)) }, { weight: 1, arbitrary: prefixed(prefix) });

/** Strings a careful client would never send: unicode, null bytes, control characters, lone surrogates. */
const ODD_STRINGS = [
  '\u0000',
  'a\u0000b',
  '\u0007\u001b[31m',
  '\r\n',
  'é',
  '日本語',
  '😀',
  'e\u0301',
  '\u202eevil',
  '\ufeff',
  '\ud800',
  '\udfff',
  '%00',
  '%',
  '../..',
  '<script>',
  "'; drop table sources; --",
  ' ',
  '$',
  '*',
];
const oddString = fc.oneof(fc.constantFrom(...ODD_STRINGS), fc.string({ unit: 'binary', maxLength: 30 }), fc.string({ unit: 'grapheme', maxLength: 30 }));
/** The same, without lone surrogates (URLs and headers cannot carry them). */
const oddUrlString = fc.oneof(fc.constantFrom(...ODD_STRINGS.filter((s) => !/[\ud800-\udfff]/.test(s))), fc.string({ unit: 'grapheme', maxLength: 30 }));
const hugeText = fc.tuple(fc.constantFrom('x', 'é', '😀', '\u0000', 'ab '), fc.integer({ min: 10_000, max: 600_000 })).map(([unit, times]) => big(unit, times));
const eventIdArb = fc.oneof(
  { weight: 3, arbitrary: fc.nat().map((n) => new Ref('event', n)) },
  { weight: 2, arbitrary: fc.tuple(fc.nat(2 ** 50), fc.nat(1_000_000)).map(([ms, seq]) => `${ms}-${seq}`) },
  { weight: 1, arbitrary: fc.constantFrom('0-0', '9999999999999999-999999999999', '1-1') },
);
const eventNameArb = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...CHANNELS) }, { weight: 1, arbitrary: fc.string({ maxLength: 40 }) });

function fromSchema(schema: Schema, depth = 0): fc.Arbitrary<unknown> {
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((s) => fromSchema(s, depth + 1)));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string':
      if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern), { maxLength: 60 });
      return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 60, 60) });
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1_000_000, max: schema.maximum ?? 1_000_000 });
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true, min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6 });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(schema.items ? fromSchema(schema.items, depth + 1) : fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 });
    case 'object': {
      if (schema.properties && depth < 3) {
        const model = Object.fromEntries(Object.entries(schema.properties).map(([name, s]) => [name, fromSchema(s, depth + 1)]));
        return fc.record(model, { requiredKeys: schema.required ?? [] });
      }
      return fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
    }
    default:
      return fc.jsonValue({ maxDepth: 3 });
  }
}

/** Include/exclude lists: names of the fields the operation answers with, or anything its pattern allows. */
function fieldListArb(op: Op, schema: Schema): fc.Arbitrary<string> {
  const fields = dataFieldsOf(op);
  const random = fromSchema(schema).map(String);
  if (!fields.length) return random;
  return fc.oneof({ weight: 3, arbitrary: fc.subarray(fields, { minLength: 1 }).map((f) => f.join(',')) }, { weight: 1, arbitrary: random });
}

/** A valid value of a query, path or header parameter: by its meaning where the fuzzer knows it, else from its schema. */
function validParam(op: Op, p: Param): fc.Arbitrary<Val> {
  const schemaValue = fromSchema(p.schema).map((v) => (typeof v === 'string' ? v : JSON.stringify(v)));
  const meant = ((): fc.Arbitrary<Val> | undefined => {
    switch (p.name) {
      case 'id':
        return op.path.includes('/webhooks/') ? idArb('webhook', 'wh_') : idArb('source', 'dc_');
      case 'keyOrId':
        return fc.oneof(idArb('component', 'sc_'), fc.constantFrom(...COMPONENT_KEYS, ...REGISTRY_KEYS));
      case 'key':
        return fc.oneof(fc.constantFrom(...REGISTRY_KEYS), fc.stringMatching(/^[a-z0-9_-]{1,40}$/));
      case 'limit':
        return fc.integer({ min: 1, max: 100 }).map(String);
      case 'after':
      case 'before':
        return fc.oneof(
          { weight: 4, arbitrary: fc.nat().map((n) => new Ref('cursor', n, op.path)) },
          { weight: 1, arbitrary: fc.nat().map((n) => new Ref('cursor', n)) },
        );
      case 'include':
      case 'exclude':
        return fieldListArb(op, p.schema);
      case 'expand':
        return fc.constant('event');
      case 'start_id':
      case 'end_id':
      case 'last-event-id':
        return eventIdArb;
      case 'emitter_id':
        return fc.oneof(idArb('source', 'dc_'), fc.constantFrom('dc_*', 'p_*'), prefixed('p_'));
      case 'listener_id':
        return fc.oneof(idArb('webhook', 'wh_'), idArb('source', 'dc_'), prefixed('p_'));
      case 'event_name':
        return eventNameArb;
      case 'url':
        return fc.constantFrom(...WEBHOOK_URLS);
      default:
        return undefined;
    }
  })();
  return meant ? fc.oneof({ weight: 4, arbitrary: meant }, { weight: 1, arbitrary: schemaValue }) : schemaValue;
}

const codeArb = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom(...HELPER_CODE) },
  { weight: 1, arbitrary: fc.constantFrom(...BAD_CODE) },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
);
const propsArb = fc.oneof(
  fc.record({ label: fc.string({ maxLength: 20 }), failIn: fc.constantFrom('', 'deploy', 'activate') }, { requiredKeys: [] }),
  fc.record(
    {
      token: fc.oneof(fc.string({ maxLength: 20 }), fc.constant('********')),
      count: fc.integer({ min: 0, max: 11 }),
      color: fc.constantFrom('red', 'green', 'blue', 'purple'),
      enabled: fc.boolean(),
      tags: fc.array(fc.string({ maxLength: 8 }), { maxLength: 3 }),
      extra: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
      timer: fc.oneof(
        fc.record({ intervalSeconds: fc.integer({ min: -5, max: 100_000 }) }),
        fc.record({ cron: fc.constantFrom('*/5 * * * *', '0 0 * * *', 'not a cron', '* * *') }),
      ),
    },
    { requiredKeys: ['token', 'count', 'color'] },
  ),
  fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
);

function bodyFieldArb(op: Op, name: string, schema: Schema): fc.Arbitrary<unknown> {
  const meant = ((): fc.Arbitrary<unknown> | undefined => {
    switch (name) {
      case 'component_code':
        return codeArb;
      case 'component_url':
        return fc.constantFrom(...COMPONENT_URLS);
      case 'component_id':
        return idArb('component', 'sc_');
      case 'key':
        return fc.constantFrom(...REGISTRY_KEYS, ...COMPONENT_KEYS);
      case 'configured_props':
        return propsArb;
      case 'include':
      case 'exclude':
        return fieldListArb(op, schema);
      default:
        return undefined;
    }
  })();
  const schemaValue = name === 'component_code' ? codeArb : fromSchema(schema);
  return meant ? fc.oneof({ weight: 4, arbitrary: meant }, { weight: 1, arbitrary: schemaValue }) : schemaValue;
}

function validBody(op: Op): fc.Arbitrary<Req['body']> {
  const schema = op.body!.schema;
  if (!schema.properties) return fc.jsonValue({ maxDepth: 3 }).map((json) => ({ json }));
  const model = Object.fromEntries(Object.entries(schema.properties).map(([name, s]) => [name, bodyFieldArb(op, name, s)]));
  return fc.record(model, { requiredKeys: schema.required ?? [] }).map((json) => ({ json }));
}

function validRequest(op: Op): fc.Arbitrary<Req> {
  const paramsIn = (where: Param['in']) => op.params.filter((p) => p.in === where);
  const recordOf = (params: Param[]) =>
    fc.record(Object.fromEntries(params.map((p) => [p.name, validParam(op, p)])) as Record<string, fc.Arbitrary<Val>>, {
      requiredKeys: params.filter((p) => p.required).map((p) => p.name),
    });
  return fc
    .record({
      pathParams: recordOf(paramsIn('path')),
      query: recordOf(paramsIn('query')),
      headers: recordOf(paramsIn('header')),
      body: op.body ? validBody(op) : fc.constant(undefined),
      auth: op.secured ? fc.constant<'A'>('A') : fc.constantFrom<'A' | 'none'>('A', 'none'),
    })
    .map(({ pathParams, query, headers, body, auth }) => ({
      method: op.method,
      path: op.path,
      pathParams: pathParams as Record<string, Val>,
      query: Object.entries(query as Record<string, Val>),
      headers: headers as Record<string, Val>,
      auth,
      body,
    }));
}

// ---------------------------------------------------------------------------------------------------------------
// Invalid requests: one mutation of a valid one.

class Mutation {
  constructor(
    readonly label: string,
    /** The answer must be a 4xx (the mutation breaks the documented schema or a documented rule). */
    readonly mustFail: boolean,
    readonly apply: (req: Req) => Req,
    readonly expectStatus?: number,
  ) {}
  [fc.toStringMethod](): string {
    return `mutation(${this.label})`;
  }
}

const setQuery = (req: Req, name: string, ...values: Val[]): Req => ({
  ...req,
  query: [...req.query.filter(([n]) => n !== name), ...values.map((v): [string, Val] => [name, v])],
});
const label = (v: unknown) => (v instanceof Text ? v.label : JSON.stringify(v)).slice(0, 80);

const BAD_INTEGERS = [
  'abc',
  '1.5',
  '-1',
  '0',
  '101',
  '-99999999999999999999',
  '99999999999999999999',
  '1e400',
  'NaN',
  'Infinity',
  '[]',
  '{}',
  '0x10',
  '1e1',
  ' 5',
  '+5',
  '',
  '9'.repeat(400),
];
const BAD_FIELD_LISTS = [',', 'a,,b', 'a b', '*', 'data.id', '../x', 'é', '\u0000', 'id,', ',id', 'id;name', '🙂'];
const BAD_AUTH = ['', 'Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', 'Bearer trb_unknown', 'Bearer a b', 'Token trb_x', 'Bearer \u00e9'];
const CONTENT_TYPES_REFUSED = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'application/jsonx',
  'text/json',
  'application/octet-stream',
];
const MALFORMED_JSON = ['', '{', '{"a":', '{"a":1,}', "{'a':1}", 'NaN', '[1,2', '{"a":1}garbage', 'undefined', '{"a":01}', '"\\x"'];
const POISONED_JSON = ['{"__proto__":{"polluted":1}}', '{"constructor":{"prototype":{"polluted":1}}}'];
const RAW_QUERIES = ['%', '%ZZ', '%FF%FE', '&&&', '=', '==', 'limit[]=1', '__proto__[x]=1', 'constructor[prototype][x]=1', 'a=%00', '%E0%A4%A', 'limit=%00'];

const deepJson = fc
  .tuple(fc.constantFrom('[', '{"a":'), fc.constantFrom(1_000, 10_000, 100_000))
  .map(
    ([open, depth]) =>
      new Text(`${open} nested ${depth} deep`, () => open.repeat(depth) + (open === '[' ? '' : '1') + (open === '[' ? ']' : '}').repeat(depth)),
  );

/** The path with this parameter inserted as is, and the others encoded as usual. */
function withRawPath(r: Req, name: string, value: string): Req {
  const encoded = Object.entries(r.pathParams).map(([k, x]) => [k, typeof x === 'string' ? encodeURIComponent(x) : x]);
  return { ...r, rawPath: true, pathParams: { ...Object.fromEntries(encoded), [name]: value } };
}

/**
 * What is wrong before any route sees it: a request line or header over Node's 16 KiB limit, a path parameter over the
 * router's 100 characters, a path that is not valid percent-encoded UTF-8. None of these can name anything, so each is a 4xx;
 * it must still be a registered JSON error like every other.
 */
function urlMutations(op: Op): fc.Arbitrary<Mutation> {
  const list: Array<fc.Arbitrary<Mutation>> = [
    fc.integer({ min: 17_000, max: 40_000 }).map((n) => new Mutation(`query of ${n} chars`, true, (r) => setQuery(r, 'pad', big('x', n)))),
    fc
      .integer({ min: 17_000, max: 40_000 })
      .map((n) => new Mutation(`header of ${n} chars`, true, (r) => ({ ...r, headers: { ...r.headers, 'x-pad': big('x', n) } }))),
  ];
  for (const p of op.params.filter((p) => p.in === 'path')) {
    list.push(
      fc
        .integer({ min: 101, max: 8_000 })
        .map((n) => new Mutation(`${p.name} of ${n} chars`, true, (r) => ({ ...r, pathParams: { ...r.pathParams, [p.name]: big('x', n) } }))),
    );
    list.push(
      fc
        .constantFrom('%FF', '%', '%E0%A4%A', '%ED%A0%80', '%C0%80', 'dc_%FE')
        .map((v) => new Mutation(`raw ${p.name}=${v}`, true, (r) => withRawPath(r, p.name, v))),
    );
  }
  return fc.oneof(...list);
}

function mutations(op: Op, ops: Op[]): fc.Arbitrary<Mutation> {
  const list: Array<fc.Arbitrary<Mutation>> = [];
  const add = (arb: fc.Arbitrary<Mutation>, weight = 1) => list.push(...Array.from({ length: weight }, () => arb));
  const query = op.params.filter((p) => p.in === 'query');
  const paths = op.params.filter((p) => p.in === 'path');
  const headers = op.params.filter((p) => p.in === 'header');

  for (const p of query) {
    if (p.required) {
      // A parameter with a default may be left out whatever `required` says; the others must be refused.
      add(fc.constant(new Mutation(`no ${p.name}`, p.schema.default === undefined, (r) => ({ ...r, query: r.query.filter(([n]) => n !== p.name) }))));
    }
    const s = p.schema;
    if (s.type === 'integer')
      add(
        fc.constantFrom(...BAD_INTEGERS).map((v) => new Mutation(`${p.name}=${v}`, true, (r) => setQuery(r, p.name, v))),
        2,
      );
    if (s.pattern) add(fc.constantFrom(...BAD_FIELD_LISTS).map((v) => new Mutation(`${p.name}=${label(v)}`, true, (r) => setQuery(r, p.name, v))));
    if (s.enum)
      add(fc.constantFrom('events', 'EVENT', 'event,event', '').map((v) => new Mutation(`${p.name}=${label(v)}`, true, (r) => setQuery(r, p.name, v))));
    if (s.minLength) add(fc.constant(new Mutation(`${p.name}= (empty)`, true, (r) => setQuery(r, p.name, ''))));
    if (s.maxLength !== undefined) {
      const max = s.maxLength;
      add(fc.integer({ min: max + 1, max: max + 3000 }).map((n) => new Mutation(`${p.name} of ${n} chars`, true, (r) => setQuery(r, p.name, big('x', n)))));
    }
    if (p.name === 'after' || p.name === 'before') {
      const bogus = fc.oneof(
        fc.constantFrom('!!!', '====', 'a+b/c', 'é', 'null', 'MA', '_-_-'),
        fc.base64String({ maxLength: 40 }),
        fc.string({ maxLength: 30 }),
        fc.nat().map((n) => new Text(`truncated cursor ${n}`, () => `${n}`)),
      );
      add(
        bogus.map((v) => new Mutation(`${p.name}=${label(v)}`, typeof v === 'string' && /[^A-Za-z0-9_-]/.test(v), (r) => setQuery(r, p.name, v))),
        2,
      );
      add(
        fc
          .tuple(fc.nat(), fc.nat())
          .map(
            ([a, b]) =>
              new Mutation('before and after', false, (r) =>
                setQuery(setQuery(r, 'after', new Ref('cursor', a, op.path)), 'before', new Ref('cursor', b, op.path)),
              ),
          ),
      );
    }
    // A repeated parameter reaches validation as an array.
    add(
      fc
        .tuple(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }))
        .map(([a, b]) => new Mutation(`${p.name} twice`, false, (r) => setQuery(r, p.name, a, b))),
    );
    add(oddUrlString.map((v) => new Mutation(`${p.name}=${label(v)}`, false, (r) => setQuery(r, p.name, v))));
  }
  add(
    fc
      .tuple(fc.string({ minLength: 1, maxLength: 12 }), oddUrlString)
      .map(([n, v]) => new Mutation(`extra query ${label(n)}`, false, (r) => setQuery(r, n, v))),
  );
  add(fc.constantFrom(...RAW_QUERIES).map((q) => new Mutation(`raw query ${q}`, false, (r) => ({ ...r, rawQuery: q }))));

  for (const p of paths) {
    add(
      oddUrlString.map((v) => new Mutation(`${p.name}=${label(v)}`, false, (r) => ({ ...r, pathParams: { ...r.pathParams, [p.name]: v } }))),
      2,
    );
    add(
      fc
        .constantFrom('%00', '..', '%2e%2e', '%2F', 'dc_%00', 'a%20b', '%C3%A9')
        .map((v) => new Mutation(`raw ${p.name}=${v}`, false, (r) => withRawPath(r, p.name, v))),
    );
    add(
      fc
        .integer({ min: 27, max: 100 })
        .map((n) => new Mutation(`${p.name} of ${n} chars`, false, (r) => ({ ...r, pathParams: { ...r.pathParams, [p.name]: big('x', n) } }))),
    );
  }
  for (const h of headers) {
    const max = h.schema.maxLength;
    if (max !== undefined)
      add(
        fc
          .integer({ min: max + 1, max: max + 4000 })
          .map((n) => new Mutation(`${h.name} of ${n} chars`, true, (r) => ({ ...r, headers: { ...r.headers, [h.name]: big('1', n) } }))),
      );
    add(fc.stringMatching(/^[\x21-\x7e]{1,60}$/).map((v) => new Mutation(`${h.name}: ${v}`, false, (r) => ({ ...r, headers: { ...r.headers, [h.name]: v } }))));
  }

  if (op.body) {
    const schema = op.body.schema;
    const objectBody = isObjectSchema(schema);
    add(fc.constant(new Mutation('no body', objectBody, (r) => ({ ...r, body: undefined }))));
    if (objectBody) {
      add(fc.constantFrom<unknown>([], 'x', 5, null, true, [{}]).map((v) => new Mutation(`body ${label(v)}`, true, (r) => ({ ...r, body: { json: v } }))));
      add(fc.constant(new Mutation('empty JSON body', true, (r) => ({ ...r, body: { text: '', contentType: 'application/json' } }))));
    }
    const withField = (r: Req, name: string, v: unknown): Req => ({
      ...r,
      body: { json: { ...((r.body && 'json' in r.body ? r.body.json : {}) as object), [name]: v } },
    });
    for (const [name, s] of Object.entries(schema.properties ?? {})) {
      const wrong: unknown[] =
        s.type === 'string' ? [[], [1], {}, { a: 1 }] : s.type === 'boolean' ? ['maybe', [], {}, 2] : isObjectSchema(s) ? ['x', 5, [1, 2], true, null] : [];
      if (wrong.length)
        add(
          fc.constantFrom(...wrong).map((v) => new Mutation(`${name}: ${label(v)}`, true, (r) => withField(r, name, v))),
          2,
        );
      if (s.type === 'string') {
        add(oddString.map((v) => new Mutation(`${name}: ${label(v)}`, false, (r) => withField(r, name, v))));
        add(hugeText.map((v) => new Mutation(`${name}: ${v.label}`, false, (r) => withField(r, name, v))));
        if (s.pattern) add(fc.constantFrom(...BAD_FIELD_LISTS).map((v) => new Mutation(`${name}: ${label(v)}`, true, (r) => withField(r, name, v))));
        if (s.maxLength !== undefined) add(fc.constant(new Mutation(`${name} too long`, true, (r) => withField(r, name, big('n', s.maxLength! + 1)))));
        if (s.minLength) add(fc.constant(new Mutation(`${name} empty`, true, (r) => withField(r, name, ''))));
      }
      if (isObjectSchema(s)) {
        add(
          fc
            .tuple(oddString, fc.jsonValue({ maxDepth: 4 }))
            .map(([k, v]) => new Mutation(`${name} with key ${label(k)}`, false, (r) => withField(r, name, { [k]: v, [`${k}x`]: k }))),
        );
      }
    }
    if (objectBody) {
      add(fc.tuple(oddString, fc.jsonValue({ maxDepth: 3 })).map(([k, v]) => new Mutation(`extra field ${label(k)}`, false, (r) => withField(r, k, v))));
      if (schema.properties?.configured_props) {
        // Deep JSON in an object prop of a component whose other props are valid, so that it is stored.
        const deepProps = (prop: string, t: Text) =>
          new Text(
            `PROPS_SOURCE with ${prop}: ${t.label}`,
            () => `{"component_code":${JSON.stringify(PROPS_SOURCE)},"configured_props":{"token":"t","count":5,"color":"red","${prop}":${t.make()}}}`,
          );
        add(
          fc.tuple(deepJson, fc.constantFrom('extra', 'x')).map(
            ([t, prop]) =>
              new Mutation(`configured_props.${prop} ${t.label}`, false, (r) => ({
                ...r,
                body: { text: deepProps(prop, t), contentType: 'application/json' },
              })),
          ),
          3,
        );
      } else {
        add(
          deepJson.map(
            (t) =>
              new Mutation(`extra field ${t.label}`, false, (r) => ({
                ...r,
                body: { text: new Text(`{"deep":${t.label}}`, () => `{"deep":${t.make()}}`), contentType: 'application/json' },
              })),
          ),
        );
      }
    } else {
      add(
        deepJson.map((t) => new Mutation(`body ${t.label}`, false, (r) => ({ ...r, body: { text: t, contentType: 'application/json' } }))),
        3,
      );
      add(hugeText.map((t) => new Mutation(`body string ${t.label}`, false, (r) => ({ ...r, body: { json: t } }))));
      add(
        fc.tuple(oddString, oddString).map(([k, v]) => new Mutation(`body {${label(k)}: ${label(v)}}`, false, (r) => ({ ...r, body: { json: { [k]: v } } }))),
      );
    }
    const jsonText = (r: Req): Val => (r.body && 'json' in r.body ? JSON.stringify(r.body.json ?? {}) : '{}');
    add(
      fc
        .constantFrom(...CONTENT_TYPES_REFUSED)
        .map((ct) => new Mutation(`content-type ${ct}`, true, (r) => ({ ...r, body: { text: jsonText(r), contentType: ct } }), 415)),
      2,
    );
    add(fc.constant(new Mutation('no content-type', true, (r) => ({ ...r, body: { text: jsonText(r), contentType: undefined } }))));
    add(
      fc.constant(
        new Mutation('content-type application/json; charset=utf-8', false, (r) => ({
          ...r,
          body: { text: jsonText(r), contentType: 'application/json; charset=utf-8' },
        })),
      ),
    );
    add(
      fc
        .constantFrom(...MALFORMED_JSON, ...POISONED_JSON)
        .map((t) => new Mutation(`JSON ${t}`, true, (r) => ({ ...r, body: { text: t, contentType: 'application/json' } }))),
      2,
    );
    // Over the default 4 MiB body limit.
    add(
      fc.constant(
        new Mutation(
          'body over the limit',
          true,
          (r) => ({ ...r, body: { text: new Text('{"x":"x"*4.5 MB}', () => `{"x":"${'x'.repeat(4_500_000)}"}`), contentType: 'application/json' } }),
          413,
        ),
      ),
    );
  } else if (op.method !== 'GET') {
    add(fc.jsonValue({ maxDepth: 2 }).map((json) => new Mutation('undocumented JSON body', false, (r) => ({ ...r, body: { json } }))));
    add(
      fc
        .constantFrom(...CONTENT_TYPES_REFUSED)
        .map((ct) => new Mutation(`undocumented ${ct} body`, false, (r) => ({ ...r, body: { text: 'a=1', contentType: ct } }))),
    );
    add(
      fc
        .constantFrom(...MALFORMED_JSON)
        .map((t) => new Mutation(`undocumented JSON ${t}`, false, (r) => ({ ...r, body: { text: t, contentType: 'application/json' } }))),
    );
  }

  if (op.secured) {
    add(
      fc
        .constantFrom(...BAD_AUTH)
        .map((h) => new Mutation(`authorization ${JSON.stringify(h)}`, true, (r) => ({ ...r, auth: h === '' ? 'none' : { header: h } }), 401)),
      2,
    );
  }
  const documented = new Set(ops.filter((o) => o.path === op.path).map((o) => o.method));
  const others = METHODS.filter((m) => !documented.has(m));
  // A method the path does not answer is refused (405 with Allow, or the answer of another route the path matches,
  // GET /v1/workflows/stream being GET /v1/workflows/{id}); OPTIONS lists the methods the path answers, 204.
  if (others.length) {
    add(fc.constantFrom(...others).map((m) => new Mutation(`method ${m}`, true, (r) => ({ ...r, method: m, body: m === 'GET' ? undefined : r.body }))));
  }
  add(fc.constant(new Mutation('method OPTIONS', false, (r) => ({ ...r, method: 'OPTIONS' }), 204)));
  add(fc.constantFrom('/', '//', '/x', '.json', '%00').map((s) => new Mutation(`path + ${s}`, false, (r) => ({ ...r, pathSuffix: s }))));
  return fc.oneof(...list);
}

// ---------------------------------------------------------------------------------------------------------------
// What the fuzzer knows of account A: ids it made (alive or deleted), event ids and cursors it was given.

class Ids {
  readonly all: string[] = [];
  readonly dead = new Set<string>();
  add(id: unknown): void {
    if (typeof id === 'string' && !this.all.includes(id)) this.all.push(id);
  }
  kill(id: string): void {
    this.dead.add(id);
  }
  alive(): string[] {
    return this.all.filter((id) => !this.dead.has(id));
  }
  /** Even `n`: an id still alive when there is one; odd: any id ever made (deleted ones answer 404). */
  pick(n: number, fallback: string): string {
    const alive = this.alive();
    const from = n % 2 === 0 && alive.length ? alive : this.all;
    return from.length ? from[(n >> 1) % from.length]! : fallback;
  }
}

class Known {
  readonly sources = new Ids();
  readonly webhooks = new Ids();
  readonly components = new Ids();
  readonly events = new Ids();
  readonly cursors = new Map<string, Ids>();
  readonly subscriptions: Array<{ emitter_id: string; listener_id: string; event_name: string }> = [];

  cursorsOf(list: string): Ids {
    let ids = this.cursors.get(list);
    if (!ids) this.cursors.set(list, (ids = new Ids()));
    return ids;
  }

  resolve(v: Val): string {
    if (typeof v === 'string') return v;
    if (v instanceof Text) return v.make();
    switch (v.kind) {
      case 'source':
        return this.sources.pick(v.n, 'dc_00000000000000000000000000');
      case 'webhook':
        return this.webhooks.pick(v.n, 'wh_00000000000000000000000000');
      case 'component':
        return this.components.pick(v.n, 'sc_00000000000000000000000000');
      case 'event':
        return this.events.pick(v.n, '1-0');
      case 'cursor': {
        if (v.list) return this.cursorsOf(v.list).pick(v.n, 'MA');
        const all = [...this.cursors.values()].flatMap((c) => c.all);
        return all.length ? all[v.n % all.length]! : 'MA';
      }
    }
  }

  /** Deep copy of a JSON body with its refs and texts resolved. */
  materialize(value: unknown): unknown {
    if (value instanceof Ref || value instanceof Text) return this.resolve(value);
    if (Array.isArray(value)) return value.map((v) => this.materialize(v));
    if (value && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value))
        Object.defineProperty(out, k, { value: this.materialize(v), enumerable: true, writable: true, configurable: true });
      return out;
    }
    return value;
  }

  /** Records what a successful answer tells: new ids, deletions, event ids, cursors. */
  learn(op: string, path: string, sent: Sent, answer: Answer): void {
    if (answer.status >= 300) return;
    const data = answer.json?.data;
    const id = sent.url.match(/\/(dc|wh)_[^/?]*/)?.[0]?.slice(1);
    if (op === 'POST /v1/sources' || op === 'PUT /v1/sources/{id}') {
      this.sources.add(data?.id);
      this.components.add(data?.component_id);
    }
    if (op === 'POST /v1/components') this.components.add(data?.id);
    if (op === 'POST /v1/webhooks') this.webhooks.add(data?.id);
    if (op === 'DELETE /v1/sources/{id}' && id) this.sources.kill(decodeURIComponent(id));
    if (op === 'DELETE /v1/webhooks/{id}' && id) this.webhooks.kill(decodeURIComponent(id));
    if (op === 'POST /v1/subscriptions' && data?.emitter_id)
      this.subscriptions.push({ emitter_id: data.emitter_id, listener_id: data.listener_id, event_name: data.event_name });
    const info = answer.json?.page_info;
    if (info) {
      this.cursorsOf(path).add(info.start_cursor ?? undefined);
      this.cursorsOf(path).add(info.end_cursor ?? undefined);
    }
    if (op.endsWith('event_summaries') && Array.isArray(data)) for (const e of data) this.events.add(e?.id);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Sending and checking.

function describeSent(s: Sent, keys: Record<string, string>): string {
  const redact = (text: string) => Object.entries(keys).reduce((t, [name, key]) => t.split(key).join(`<key of ${name}>`), text);
  const cut = (text: string, max = 1500) => (text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text);
  const body =
    s.body === undefined ? '' : `\n  body ${cut(typeof s.body === 'string' ? s.body : `<${s.body.length} bytes> ${Buffer.from(s.body).toString('utf8')}`)}`;
  return redact(
    `${s.method} ${cut(s.url)}\n  headers ${JSON.stringify(Object.fromEntries(Object.entries(s.headers).map(([n, v]) => [n, cut(v, 200)])))}${body}`,
  );
}

async function send(s: Sent): Promise<Answer> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), HANG_MS);
  try {
    const res = await fetch(s.url, { method: s.method, headers: s.headers, body: s.body, signal: controller.signal });
    const contentType = res.headers.get('content-type') ?? '';
    let text: string;
    if (contentType.startsWith('text/event-stream')) {
      // A live stream never ends: its first chunk (the handshake) is enough.
      const reader = res.body!.getReader();
      const first = await reader.read();
      text = first.value ? Buffer.from(first.value).toString('utf8') : '';
      await reader.cancel().catch(() => {});
    } else {
      text = await res.text();
    }
    let json: unknown;
    if (contentType.includes('json') && text) {
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
    }
    return { status: res.status, contentType, text, json, headers: res.headers };
  } catch (error) {
    if (controller.signal.aborted) throw new Error(`no answer within ${HANG_MS / 1000} s`);
    throw new Error(`request failed: ${String((error as Error).cause ?? error)}`);
  } finally {
    clearTimeout(timer);
  }
}

function expectWellFormed(answer: Answer, where: string): void {
  const said = `${where}\n→ ${answer.status} ${answer.contentType} ${answer.text.slice(0, 800)}`;
  expect(answer.status, `server error:\n${said}`).toBeLessThan(500);
  if (answer.status >= 400) {
    expect(answer.contentType, `error body is not JSON:\n${said}`).toMatch(/^application\/json/);
    expect(answer.json, `error body is not { error, code }:\n${said}`).toMatchObject({ error: expect.any(String), code: expect.any(String) });
    expect(Object.keys(ERRORS), `unregistered error code:\n${said}`).toContain(answer.json.code);
    expect(ERRORS[answer.json.code as keyof typeof ERRORS].status, `status does not match the code's:\n${said}`).toBe(answer.status);
  } else if (answer.status >= 200 && answer.contentType.includes('json') && answer.text) {
    expect(answer.json, `success body is not JSON:\n${said}`).toBeDefined();
  }
}

// ---------------------------------------------------------------------------------------------------------------

describe.each(DIALECTS)('fuzz over the OpenAPI document (%s)', (dialect) => {
  let server: TestServer;
  let A: Awaited<ReturnType<typeof account>>;
  let B: Awaited<ReturnType<typeof account>>;
  let ops: Op[];
  const known = new Known();

  function toSent(req: Req): Sent {
    let path = req.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
      const v = req.pathParams[name];
      const value = v === undefined ? '' : known.resolve(v);
      return req.rawPath ? value : encodeURIComponent(value);
    });
    path += req.pathSuffix ?? '';
    const search = new URLSearchParams(req.query.map(([n, v]): [string, string] => [n, known.resolve(v)])).toString();
    const q = [search, req.rawQuery].filter(Boolean).join('&');
    const headers: Record<string, string> = {};
    for (const [name, v] of Object.entries(req.headers)) headers[name] = known.resolve(v);
    if (req.auth === 'A') headers.authorization = `Bearer ${A.key}`;
    else if (typeof req.auth === 'object') headers.authorization = req.auth.header;
    let body: string | Uint8Array | undefined;
    if (req.body && req.method !== 'GET') {
      if ('json' in req.body) {
        body = JSON.stringify(known.materialize(req.body.json)) ?? 'null';
        headers['content-type'] = 'application/json';
      } else {
        const text = known.resolve(req.body.text);
        if (req.body.contentType) {
          body = text;
          headers['content-type'] = req.body.contentType;
        } else {
          body = new TextEncoder().encode(text); // fetch adds no content type to bytes
        }
      }
    }
    return { method: req.method, url: `${server.url}${path}${q ? `?${q}` : ''}`, headers, body };
  }

  async function exchange(req: Req, opKey: string): Promise<{ answer: Answer; where: string }> {
    const sent = toSent(req);
    const where = describeSent(sent, { A: A.key, B: B.key });
    let answer: Answer;
    try {
      answer = await send(sent);
    } catch (error) {
      throw new Error(`${(error as Error).message}:\n${where}`);
    }
    known.learn(opKey, req.path, sent, answer);
    return { answer, where };
  }

  /** Every source of account A, through every page of its list. */
  async function allSources(): Promise<Array<{ id: string; name_slug: string }>> {
    const all: Array<{ id: string; name_slug: string }> = [];
    for (let after: string | null = null; ; ) {
      const page: ApiResponse<{ data: Array<{ id: string; name_slug: string }>; page_info: { end_cursor: string | null } }> = await A.api.get(
        `/v1/users/me/sources?limit=100&include=id,name_slug${after ? `&after=${after}` : ''}`,
      );
      expect(page.status).toBe(200);
      all.push(...page.body.data);
      after = page.body.page_info.end_cursor;
      if (!after || page.body.data.length < 100) return all;
    }
  }

  async function expectAlive(): Promise<void> {
    const answer = await send({ method: 'GET', url: `${server.url}/v1/users/me`, headers: { authorization: `Bearer ${A.key}` } });
    expect(answer.status, `the server stopped answering GET /v1/users/me: ${answer.status} ${answer.text.slice(0, 300)}`).toBe(200);
  }

  /** Keeps a few live sources with events, so that requests on real ids reach real data. */
  async function ensureFixtures(): Promise<void> {
    while (known.sources.alive().length < 3) {
      const res = await A.api.post('/v1/sources', { component_code: emitterSource(), name: 'fixture' });
      expect(res.status).toBe(200);
      known.sources.add(res.body.data.id);
      known.components.add(res.body.data.component_id);
      await A.runAndWait(res.body.data.id, emitsOf([{ event: { n: 1 } }, { event: { n: 2 }, meta: { name: 'orders' } }, { event: { n: 3 } }]));
      await A.runAndWait(res.body.data.id, { fail: 'on purpose' });
      for (const stream of ['', '/$logs', '/$errors']) {
        const page = await A.api.get(`/v1/sources/${res.body.data.id}${stream}/event_summaries?limit=1`);
        expect(page.status).toBe(200);
        known.learn(
          `GET /v1/sources/{id}${stream}/event_summaries`,
          `/v1/sources/{id}${stream}/event_summaries`,
          { method: 'GET', url: '', headers: {} },
          {
            status: 200,
            contentType: 'application/json',
            text: page.text,
            json: page.body,
            headers: page.headers,
          },
        );
      }
    }
    while (known.webhooks.alive().length < 2) {
      const res = await A.api.post(`/v1/webhooks?url=${encodeURIComponent(WEBHOOK_URLS[0]!)}&name=fixture`);
      expect(res.status).toBe(200);
      known.webhooks.add(res.body.data.id);
    }
  }

  beforeAll(async () => {
    server = await startTestServer(dialect, { rateLimit: 0 });
    A = await account(server);
    B = await account(server);
    const doc = await A.api.get('/v1/openapi.json');
    expect(doc.status).toBe(200);
    // Rotating the key would lock the fuzzer out of its own account after one call; api-key-rotation.test.ts covers it.
    ops = operationsOf(doc.body).filter((op) => op.key !== 'POST /v1/users/me/api_key');
    for (const code of [HOOKS_SOURCE, PROPS_SOURCE, emitterSource()]) {
      const res = await A.api.post('/v1/components', { component_code: code });
      expect(res.status).toBe(200);
      known.components.add(res.body.data.id);
    }
    await ensureFixtures();
    const sub = await A.api.post(`/v1/subscriptions?emitter_id=${known.sources.all[0]}&listener_id=${known.webhooks.all[0]}`);
    expect(sub.status).toBe(200);
    known.subscriptions.push({ emitter_id: sub.body.data.emitter_id, listener_id: sub.body.data.listener_id, event_name: sub.body.data.event_name });
    for (const list of ['/v1/users/me/sources', '/v1/users/me/webhooks', `/v1/webhooks/${known.webhooks.all[0]}/deliveries`]) {
      const page = await A.api.get(`${list}?limit=1`);
      known.cursorsOf(list.replace(/wh_[^/]+/, '{id}')).add(page.body.page_info?.end_cursor ?? undefined);
    }
  });
  afterAll(() => server?.destroy());

  it('the document lists the operations the fuzzer drives', () => {
    expect(ops.length).toBeGreaterThanOrEqual(20);
    for (const key of [
      'POST /v1/sources',
      'PUT /v1/sources/{id}',
      'DELETE /v1/sources/{id}',
      'POST /v1/subscriptions',
      'GET /v1/users/me/webhooks',
      'GET /v1/sources/{id}/sse',
    ]) {
      expect(ops.map((o) => o.key)).toContain(key);
    }
  });

  it('answers valid requests of every documented operation without a server error', { timeout: 300_000 }, async () => {
    await forEveryOperation(ops, async (op) => {
      await ensureFixtures();
      await fc.assert(
        fc.asyncProperty(validRequest(op), async (req) => {
          const { answer, where } = await exchange(req, op.key);
          expectWellFormed(answer, `${op.key} (valid)\n${where}`);
          if (answer.status < 300 && op.responses['200']?.content?.['text/event-stream']) {
            expect(answer.text, `live stream without its handshake:\n${where}`).toMatch(/^:sse-handshake/);
          }
          await expectAlive();
        }),
        settings(DEFAULT_RUNS.valid),
      );
      await expectAlive();
    });
  });

  it('refuses invalid requests of every documented operation with a registered JSON error', { timeout: 300_000 }, async () => {
    await forEveryOperation(ops, async (op) => {
      await ensureFixtures();
      await fc.assert(
        fc.asyncProperty(validRequest(op), mutations(op, ops), async (valid, mutation) => {
          const { answer, where } = await exchange(mutation.apply(valid), op.key);
          const what = `${op.key} with ${mutation.label}\n${where}`;
          expectWellFormed(answer, what);
          if (mutation.mustFail) expect(answer.status, `accepted:\n${what}\n→ ${answer.status} ${answer.text.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
          if (mutation.expectStatus) expect(answer.status, `${what}\n→ ${answer.status} ${answer.text.slice(0, 300)}`).toBe(mutation.expectStatus);
          if (mutation.expectStatus === 401) expect(answer.headers.get('www-authenticate')).toBe('Bearer');
          await expectAlive();
        }),
        settings(DEFAULT_RUNS.invalid),
      );
      await expectAlive();
    });
  });

  it('answers over-long and malformed URLs and headers with a registered JSON error', { timeout: 300_000 }, async () => {
    await forEveryOperation(ops, async (op) => {
      await fc.assert(
        fc.asyncProperty(validRequest(op), urlMutations(op), async (valid, mutation) => {
          const { answer, where } = await exchange(mutation.apply(valid), op.key);
          const what = `${op.key} with ${mutation.label}\n${where}`;
          expectWellFormed(answer, what);
          expect(answer.status, `accepted:\n${what}\n→ ${answer.status} ${answer.text.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
          await expectAlive();
        }),
        settings(DEFAULT_RUNS.url),
      );
    });
  });

  it('keeps answers well-formed and the state consistent under concurrent conflicting writes', { timeout: 300_000 }, async () => {
    type Race =
      | { op: 'update'; body: Record<string, unknown> }
      | { op: 'deleteSource' | 'run' | 'deleteEvents' | 'deleteWebhook' | 'createNamed' | 'subscribeSelf' | 'read' }
      | { op: 'subscribe' | 'unsubscribe' | 'autoSubscribe' | 'autoUnsubscribe'; event_name: string };
    const eventName = fc.constantFrom('', '$errors', 'orders');
    const race: fc.Arbitrary<Race> = fc.oneof(
      fc
        .oneof(
          fc.record({ active: fc.boolean() }),
          fc.record({ name: fc.string({ minLength: 1, maxLength: 20 }) }),
          fc.constant({ configured_props: {} }),
          fc.constant({ component_code: emitterSource('unique') }),
        )
        .map((body) => ({ op: 'update' as const, body })),
      fc.constantFrom<Race>(
        { op: 'deleteSource' },
        { op: 'run' },
        { op: 'deleteEvents' },
        { op: 'deleteWebhook' },
        { op: 'createNamed' },
        { op: 'subscribeSelf' },
        { op: 'read' },
      ),
      eventName.map((event_name) => ({ op: 'subscribe' as const, event_name })),
      eventName.map((event_name) => ({ op: 'subscribe' as const, event_name })),
      eventName.map((event_name) => ({ op: 'unsubscribe' as const, event_name })),
      eventName.map((event_name) => ({ op: 'autoSubscribe' as const, event_name })),
      eventName.map((event_name) => ({ op: 'autoUnsubscribe' as const, event_name })),
    );
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(race, { minLength: 2, maxLength: 10 }), async (races) => {
        round++;
        const created = await A.api.post('/v1/sources', { component_code: emitterSource(), name: `race ${round}` });
        expect(created.status).toBe(200);
        const source: string = created.body.data.id;
        known.sources.add(source);
        const hook = await A.api.post(`/v1/webhooks?url=${encodeURIComponent(WEBHOOK_URLS[0]!)}`);
        expect(hook.status).toBe(200);
        const webhook: string = hook.body.data.id;
        known.webhooks.add(webhook);
        const sub = (q: Record<string, string>) => `?${new URLSearchParams(q)}`;

        const requests = races.map((r): { method: string; path: string; body?: unknown } => {
          switch (r.op) {
            case 'update':
              return { method: 'PUT', path: `/v1/sources/${source}`, body: r.body };
            case 'deleteSource':
              return { method: 'DELETE', path: `/v1/sources/${source}` };
            case 'run':
              return { method: 'POST', path: `/v1/sources/${source}/run`, body: { hello: round } };
            case 'deleteEvents':
              return { method: 'DELETE', path: `/v1/sources/${source}/events` };
            case 'deleteWebhook':
              return { method: 'DELETE', path: `/v1/webhooks/${webhook}` };
            case 'createNamed':
              return { method: 'POST', path: '/v1/sources', body: { component_code: emitterSource(), name: `race ${round}` } };
            case 'subscribeSelf':
              return { method: 'POST', path: `/v1/subscriptions${sub({ emitter_id: source, listener_id: source })}` };
            case 'read':
              return { method: 'GET', path: `/v1/sources/${source}/event_summaries` };
            case 'subscribe':
              return { method: 'POST', path: `/v1/subscriptions${sub({ emitter_id: source, listener_id: webhook, event_name: r.event_name })}` };
            case 'unsubscribe':
              return { method: 'DELETE', path: `/v1/subscriptions${sub({ emitter_id: source, listener_id: webhook, event_name: r.event_name })}` };
            case 'autoSubscribe':
              return { method: 'POST', path: `/v1/auto_subscriptions${sub({ listener_id: webhook, event_name: r.event_name })}` };
            case 'autoUnsubscribe':
              return { method: 'DELETE', path: `/v1/auto_subscriptions${sub({ listener_id: webhook, event_name: r.event_name })}` };
          }
        });
        const sents = requests.map((r): Sent => {
          const headers: Record<string, string> = { authorization: `Bearer ${A.key}` };
          if (r.body !== undefined) headers['content-type'] = 'application/json';
          return { method: r.method, url: `${server.url}${r.path}`, headers, body: r.body === undefined ? undefined : JSON.stringify(r.body) };
        });
        const batch = sents.map((s) => describeSent(s, { A: A.key, B: B.key })).join('\n');
        const answers = await Promise.all(
          sents.map((s) => send(s).catch((error: Error) => Promise.reject(new Error(`${error.message} in the batch:\n${batch}`)))),
        );
        answers.forEach((answer, i) => {
          expectWellFormed(answer, `${races[i]!.op} in a concurrent batch:\n${describeSent(sents[i]!, { A: A.key, B: B.key })}\nbatch:\n${batch}`);
        });
        const statusesOf = (op: Race['op']) => answers.filter((_, i) => races[i]!.op === op).map((a) => a.status);
        const summary = `batch:\n${races.map((r, i) => `${JSON.stringify(r)} → ${answers[i]!.status} ${answers[i]!.text.slice(0, 200)}`).join('\n')}`;
        for (const [i, a] of answers.entries()) if (races[i]!.op === 'createNamed' && a.status === 200) known.sources.add(a.json.data.id);

        // A source and a webhook are deleted once.
        const sourceDeletes = statusesOf('deleteSource').filter((s) => s === 204).length;
        const webhookDeletes = statusesOf('deleteWebhook').filter((s) => s === 204).length;
        expect(sourceDeletes, `the source was deleted twice\n${summary}`).toBeLessThanOrEqual(1);
        expect(webhookDeletes, `the webhook was deleted twice\n${summary}`).toBeLessThanOrEqual(1);
        if (sourceDeletes) known.sources.kill(source);
        if (webhookDeletes) known.webhooks.kill(webhook);

        // What was deleted is gone, and what was not is there.
        const sourceNow = await A.api.get(`/v1/sources/${source}/event_summaries`);
        expect(sourceNow.status, `source after the batch\n${summary}`).toBe(sourceDeletes ? 404 : 200);
        const webhookNow = await A.api.get(`/v1/webhooks/${webhook}`);
        expect(webhookNow.status, `webhook after the batch\n${summary}`).toBe(webhookDeletes ? 404 : 200);

        // Slugs stay unique in the account, also when sources with one name are created and renamed at once.
        const slugs = (await allSources()).map((s) => s.name_slug);
        const repeated = slugs.filter((slug, i) => slugs.indexOf(slug) !== i);
        expect(repeated, `name_slug taken twice in the account\n${summary}`).toEqual([]);

        // No subscription names a deleted source or webhook, and no triple is there twice.
        const subs = await A.api.get('/v1/users/me/subscriptions');
        expect(subs.status).toBe(200);
        const mine = (subs.body.data as Array<{ id: string; emitter_id: string; listener_id: string; event_name: string }>).filter(
          (s) => [s.emitter_id, s.listener_id].includes(source) || s.listener_id === webhook,
        );
        if (sourceDeletes)
          expect(
            mine.filter((s) => s.emitter_id === source || s.listener_id === source),
            `subscriptions of the deleted source\n${summary}`,
          ).toEqual([]);
        if (webhookDeletes)
          expect(
            mine.filter((s) => s.listener_id === webhook),
            `subscriptions of the deleted webhook\n${summary}`,
          ).toEqual([]);
        const triples = mine.map((s) => `${s.emitter_id} ${s.listener_id} ${s.event_name}`);
        expect(new Set(triples).size, `a subscription triple is there twice: ${JSON.stringify(mine)}\n${summary}`).toBe(triples.length);

        // Creating one triple at once, with nothing deleting it, makes one subscription.
        if (!sourceDeletes && !webhookDeletes) {
          for (const name of ['', '$errors', 'orders']) {
            if (races.some((r) => r.op === 'unsubscribe' && r.event_name === name)) continue;
            const ids = answers
              .filter((_, i) => races[i]!.op === 'subscribe' && (races[i] as { event_name: string }).event_name === name)
              .map((a) => a.json?.data?.id);
            expect(new Set(ids).size, `one triple created at once made several subscriptions: ${JSON.stringify(ids)}\n${summary}`).toBeLessThanOrEqual(1);
          }
        }
        await expectAlive();
      }),
      settings(DEFAULT_RUNS.concurrent),
    );
    await expectAlive();
  });

  it("answers another account's ids with 404 and leaves them as they were", { timeout: 300_000 }, async () => {
    await ensureFixtures();
    const snapshot = async () => {
      const [sources, webhooks, subscriptions] = await Promise.all([
        A.api.get('/v1/users/me/sources?limit=100&include=id,active,name,configured_props'),
        A.api.get('/v1/users/me/webhooks?limit=100&include=id,active,url'),
        A.api.get('/v1/users/me/subscriptions'),
      ]);
      return { sources: sources.body, webhooks: webhooks.body, subscriptions: subscriptions.body };
    };
    const before = await snapshot();
    type Triple = { emitter_id: string; listener_id: string; event_name: string };
    const intrusions: Array<
      (ids: { source: string; webhook: string; component: string; event: string; sub: Triple }) => { method: string; path: string; body?: unknown }
    > = [
      ({ source }) => ({ method: 'GET', path: `/v1/sources/${source}/event_summaries?expand=event` }),
      ({ source }) => ({ method: 'GET', path: `/v1/sources/${source}/$logs/event_summaries` }),
      ({ source }) => ({ method: 'GET', path: `/v1/sources/${source}/$errors/event_summaries` }),
      ({ source }) => ({ method: 'GET', path: `/v1/sources/${source}/sse` }),
      ({ source }) => ({ method: 'GET', path: `/sources/${source}/sse` }),
      ({ source }) => ({ method: 'PUT', path: `/v1/sources/${source}`, body: { active: false } }),
      ({ source }) => ({ method: 'PUT', path: `/v1/sources/${source}`, body: { name: 'taken', configured_props: {} } }),
      ({ source }) => ({ method: 'DELETE', path: `/v1/sources/${source}` }),
      ({ source }) => ({ method: 'POST', path: `/v1/sources/${source}/run`, body: { from: 'B' } }),
      ({ source, event }) => ({ method: 'DELETE', path: `/v1/sources/${source}/events?start_id=${event}` }),
      ({ source }) => ({ method: 'DELETE', path: `/v1/sources/${source}/events` }),
      ({ webhook }) => ({ method: 'GET', path: `/v1/webhooks/${webhook}` }),
      ({ webhook }) => ({ method: 'DELETE', path: `/v1/webhooks/${webhook}` }),
      ({ webhook }) => ({ method: 'GET', path: `/v1/webhooks/${webhook}/deliveries` }),
      ({ component }) => ({ method: 'GET', path: `/v1/components/${component}` }),
      ({ component }) => ({ method: 'POST', path: '/v1/sources', body: { component_id: component } }),
      ({ source, webhook }) => ({ method: 'POST', path: `/v1/subscriptions?emitter_id=${source}&listener_id=${webhook}` }),
      ({ source, webhook }) => ({ method: 'DELETE', path: `/v1/subscriptions?emitter_id=${source}&listener_id=${webhook}&event_name=` }),
      ({ sub }) => ({ method: 'DELETE', path: `/v1/subscriptions?${new URLSearchParams(sub)}` }),
      ({ sub }) => ({ method: 'POST', path: `/v1/subscriptions?${new URLSearchParams(sub)}` }),
      ({ webhook }) => ({ method: 'POST', path: `/v1/subscriptions?emitter_id=dc_*&listener_id=${webhook}` }),
      ({ source }) => ({ method: 'POST', path: `/v1/subscriptions?emitter_id=dc_*&listener_id=${source}` }),
      ({ webhook }) => ({ method: 'POST', path: `/v1/auto_subscriptions?event_name=default&listener_id=${webhook}` }),
      ({ webhook }) => ({ method: 'DELETE', path: `/v1/auto_subscriptions?event_name=default&listener_id=${webhook}` }),
    ];
    await fc.assert(
      fc.asyncProperty(fc.nat(intrusions.length - 1), fc.nat(), async (which, n) => {
        const ids = {
          source: known.sources.pick(n, 'dc_none'),
          webhook: known.webhooks.pick(n, 'wh_none'),
          component: known.components.pick(n, 'sc_none'),
          event: known.events.pick(n, '1-0'),
          sub: known.subscriptions[n % known.subscriptions.length]!,
        };
        const r = intrusions[which]!(ids);
        const headers: Record<string, string> = { authorization: `Bearer ${B.key}` };
        if (r.body !== undefined) headers['content-type'] = 'application/json';
        const sent: Sent = { method: r.method, url: `${server.url}${r.path}`, headers, body: r.body === undefined ? undefined : JSON.stringify(r.body) };
        const where = `account B on A's ids:\n${describeSent(sent, { A: A.key, B: B.key })}`;
        const answer = await send(sent);
        expectWellFormed(answer, where);
        expect({ status: answer.status, code: answer.json?.code }, `${where}\n→ ${answer.status} ${answer.text.slice(0, 300)}`).toEqual({
          status: 404,
          code: 'not_found',
        });
        await expectAlive();
      }),
      settings(DEFAULT_RUNS.intruder),
    );
    expect(await snapshot(), "account B's requests changed account A's data").toEqual(before);
  });

  it("shows the second account none of the first one's data", { timeout: 120_000 }, async () => {
    for (const list of ['/v1/users/me/sources?limit=100', '/v1/users/me/webhooks?limit=100']) {
      const res = await B.api.get(list);
      expect(res.status).toBe(200);
      expect(res.body, list).toMatchObject({ data: [], page_info: { total_count: 0, count: 0 } });
    }
    const subs = await B.api.get('/v1/users/me/subscriptions');
    expect(subs.body).toEqual({ data: [] });
    const paths = [
      ...known.sources.all.flatMap((id) => [
        `/v1/sources/${id}/event_summaries`,
        `/v1/sources/${id}/$logs/event_summaries`,
        `/v1/sources/${id}/$errors/event_summaries`,
      ]),
      ...known.webhooks.all.flatMap((id) => [`/v1/webhooks/${id}`, `/v1/webhooks/${id}/deliveries`]),
      ...known.components.all.map((id) => `/v1/components/${id}`),
      ...COMPONENT_KEYS.map((key) => `/v1/components/${key}`),
    ];
    for (const path of paths) {
      const res = await B.api.get(path);
      expect({ path, status: res.status, code: res.body?.code }).toEqual({ path, status: 404, code: 'not_found' });
    }
    await expectAlive();
  });
});
