// Components API: saving code (both module styles, every prop form), load failures, imports, URLs, look-ups.
import http from 'node:http';
import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client, request } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';

const CJS = `
const common = {
  props: { db: "$.service.db" },
  methods: { greet() { return "hi"; } },
};
const github = {
  type: "app",
  app: "github",
  propDefinitions: {
    repo: { type: "string", label: "Repository", description: "owner/name" },
  },
};
module.exports = {
  key: "github-new-stars",
  name: "New Stars",
  version: "0.1.0",
  props: {
    ...common.props,
    github,
    http: "$.interface.http",
    token: "string",
    repo: { propDefinition: [github, "repo"], optional: true },
    limit: { type: "integer", label: "Limit", description: "How many", min: 1, max: 50, default: 10, optional: true },
    mode: { type: "string", options: ["a", { label: "B", value: "b" }] },
    secretKey: { type: "string", secret: true },
    timer: { type: "$.interface.timer", default: { intervalSeconds: 300 } },
    hook: { type: "$.interface.http", customResponse: true },
  },
  methods: { ...common.methods },
  async run() {},
};
`;

const ESM = `
import { axios } from "@pipedream/platform";
import crypto from "crypto";
export default {
  name: "ESM Source",
  version: "2.0.0",
  props: { flag: { type: "boolean", optional: true } },
  async run() { this.$emit({ hasAxios: typeof axios === "function", hash: crypto.createHash("sha1").update("x").digest("hex") }); },
};
`;

describe.each(DIALECTS)('components API on %s', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    server = await startTestServer(dialect, { loadTimeout: 2, allowPrivateNetwork: false });
    api = client(server.url, (await server.createUser()).apiKey);
  });
  afterAll(() => server?.destroy());

  it('saves a CommonJS component with every prop form, in declaration order', async () => {
    const res = await api.post('/v1/components', { component_code: CJS });
    expect(res.status).toBe(200);
    const data = res.body.data;
    expect(Object.keys(data).sort()).toEqual(['code', 'code_hash', 'configurable_props', 'created_at', 'id', 'name', 'updated_at', 'version']);
    expect(data.id).toMatch(/^sc_[0-9a-z]{26}$/);
    expect(data.code).toBe(CJS);
    expect(data.code_hash).toBe(createHash('sha256').update(CJS).digest('hex'));
    expect(data).toMatchObject({ name: 'New Stars', version: '0.1.0' });
    expect(data.configurable_props).toEqual([
      { name: 'db', type: '$.service.db' },
      { name: 'github', type: 'app', app: 'github' },
      { name: 'http', type: '$.interface.http' },
      { name: 'token', type: 'string' },
      { name: 'repo', type: 'string', label: 'Repository', description: 'owner/name', optional: true, propDefinition: ['github', 'repo'] },
      { name: 'limit', type: 'integer', label: 'Limit', description: 'How many', min: 1, max: 50, default: 10, optional: true },
      { name: 'mode', type: 'string', options: ['a', { label: 'B', value: 'b' }] },
      { name: 'secretKey', type: 'string', secret: true },
      { name: 'timer', type: '$.interface.timer', default: { intervalSeconds: 300 } },
      { name: 'hook', type: '$.interface.http', customResponse: true },
    ]);
    expect(Math.abs(data.created_at - Date.now() / 1000)).toBeLessThan(60);
  });

  it('saves an ES module that imports @pipedream/platform and a built-in, and runs it', async () => {
    const res = await api.post('/v1/components', { component_code: ESM });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ name: 'ESM Source', version: '2.0.0', configurable_props: [{ name: 'flag', type: 'boolean', optional: true }] });
  });

  it('saves a component written in TypeScript, its types stripped, and runs it with stacks naming component.js', async () => {
    const code = `interface Order { n: number }
      export default {
        name: "Typed", version: "0.1.0",
        props: { http: { type: "$.interface.http" } as const },
        async run(event: { body: Order }): Promise<void> {
          const n: number = event.body.n;
          if (n < 0) throw new Error("negative " + (n as number));
          this.$emit({ doubled: n * 2 });
        },
      };`;
    const saved = await api.post('/v1/components', { component_code: code });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    expect(saved.body.data).toMatchObject({ name: 'Typed', configurable_props: [{ name: 'http', type: '$.interface.http' }] });
    const source = (await api.post('/v1/sources', { component_id: saved.body.data.id })).body.data;
    const url = source.configured_props.http.endpoint_url;
    expect((await request('POST', url, { raw: { body: '{"n":21}', contentType: 'application/json' } })).status).toBe(200);
    expect((await request('POST', url, { raw: { body: '{"n":-1}', contentType: 'application/json' } })).status).toBe(200);
    const emitted = await waitFor(
      () => api.get(`/v1/sources/${source.id}/event_summaries?expand=event`),
      (r) => r.body.data.length === 1,
      { what: "the typed source's event" },
    );
    expect(emitted.body.data[0].event).toEqual({ doubled: 42 });
    const errors = await waitFor(
      () => api.get(`/v1/sources/${source.id}/$errors/event_summaries?expand=event`),
      (r) => r.body.data.length === 1,
      { what: "the typed source's error" },
    );
    expect(errors.body.data[0].event.error.stack).toMatch(/negative -1\n\s+at .*component\.js:7:/);
    // What parses as neither is a JavaScript syntax error, as before...
    const broken = await api.post('/v1/components', { component_code: 'export default { name: "x", version: "1", run() { return ; ) } };' });
    expect(broken.body.code).toBe('component_invalid');
    expect(broken.body.details[0]).toMatchObject({ reason: 'syntax_error', line: 1 });
    // ...unless TypeScript reads further: then the slip in the TypeScript is what is said, not its first annotation.
    const slip = await api.post('/v1/components', {
      component_code: 'interface A { n: number }\nexport default { name: "x", version: "1", run(e: A) {\n  return e.n ) } };',
    });
    expect(slip.body.details[0]).toMatchObject({ reason: 'syntax_error', line: 3 });
  });

  it("finds a component by id and by key (the latest), and hides other accounts' components", async () => {
    const first = (await api.post('/v1/components', { component_code: CJS })).body.data;
    const second = (await api.post('/v1/components', { component_code: CJS.replace('0.1.0', '0.2.0') })).body.data;
    expect((await api.get(`/v1/components/${first.id}`)).body.data.id).toBe(first.id);
    const byKey = await api.get('/v1/components/github-new-stars');
    expect(byKey.status).toBe(200);
    expect(byKey.body.data).toMatchObject({ id: second.id, version: '0.2.0' });
    const stranger = client(server.url, (await server.createUser()).apiKey);
    const hidden = await stranger.get(`/v1/components/${first.id}`);
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({ error: `component "${first.id}" not found`, code: 'not_found' });
    expect((await stranger.get('/v1/components/github-new-stars')).status).toBe(404);
  });

  it('serves the shipped registry components by key', async () => {
    for (const key of ['http-new-requests', 'schedule-custom-interval', 'json_feed-new-items']) {
      const res = await api.get(`/v1/components/registry/${key}`);
      expect(res.status, key).toBe(200);
      expect(res.body.data.version).toMatch(/^\d+\.\d+\.\d+/);
    }
    const polling = (await api.get('/v1/components/registry/json_feed-new-items')).body.data;
    expect(polling.configurable_props.map((p: { name: string }) => p.name)).toEqual(['db', 'timer', 'feedUrl', 'maxItems']);
    expect((await api.get('/v1/components/registry/nope-nothing')).status).toBe(404);
  });

  it("publishes a saved component in the account's registry: semantic, increasing, immutable versions", async () => {
    const owner = client(server.url, (await server.createUser()).apiKey);
    const other = client(server.url, (await server.createUser()).apiKey);
    const save = async (version: string, key = 'acme-pinger') =>
      (await owner.post('/v1/components', { component_code: `module.exports = { key: "${key}", name: "Pinger", version: "${version}", run() {} };` })).body
        .data;
    const v1 = await save('1.0.0');
    const published = await owner.post(`/v1/components/${v1.id}/publish`, {});
    expect(published.status).toBe(200);
    expect(published.body.data).toEqual(v1);
    expect((await owner.get('/v1/components/registry/acme-pinger')).body.data.id).toBe(v1.id);
    expect((await other.get('/v1/components/registry/acme-pinger')).status).toBe(404);
    expect((await other.post(`/v1/components/${v1.id}/publish`, {})).status).toBe(404);

    const again = await owner.post(`/v1/components/${v1.id}/publish`, {});
    expect(again.status).toBe(409);
    expect(again.body).toEqual({
      error: 'version 1.0.0 of "acme-pinger" is not greater than the published 1.0.0; published versions never change',
      code: 'conflict',
    });
    const older = await owner.post(`/v1/components/${(await save('0.9.0')).id}/publish`, {});
    expect(older.status).toBe(409);
    const notSemver = await owner.post(`/v1/components/${(await save('1.2')).id}/publish`, {});
    expect(notSemver.status).toBe(422);
    expect(notSemver.body.error).toBe('version "1.2" is not a semantic version (for example 1.2.0)');
    const noKey = (await owner.post('/v1/components', { component_code: 'module.exports = { name: "k", version: "1.0.0", run() {} };' })).body.data;
    expect((await owner.post(`/v1/components/${noKey.id}/publish`, {})).body.details).toEqual([{ reason: 'not_publishable' }]);

    // The version is the code's own: a body naming another is refused, and nothing is published.
    const versioned = await owner.post(`/v1/components/${(await save('1.0.5')).id}/publish`, { version: '3.0.0' });
    expect([versioned.status, versioned.body]).toEqual([
      400,
      {
        error: 'invalid body: must not have the field "version"',
        code: 'invalid_request',
        details: [{ in: 'body', field: 'version', message: 'must not have the field "version"' }],
      },
    ]);
    expect((await owner.get('/v1/components/registry/acme-pinger')).body.data.version).toBe('1.0.0');

    const v11 = await save('1.1.0');
    // With no body at all, as a POST that has nothing to say is usually sent.
    expect((await owner.post(`/v1/components/${v11.id}/publish`)).status).toBe(200);
    expect((await owner.get('/v1/components/registry/acme-pinger')).body.data.version).toBe('1.1.0');
    const deployed = await owner.post('/v1/sources', { key: 'acme-pinger' });
    expect(deployed.body.data.component_id).toBe(v11.id);

    // SemVer 2.0 build metadata is a semantic version; it does not order versions, so a build of the highest is no newer.
    const build = await save('1.2.0+build.5');
    const builtPublished = await owner.post(`/v1/components/${build.id}/publish`, {});
    expect([builtPublished.status, builtPublished.body.data?.version]).toEqual([200, '1.2.0+build.5']);
    expect((await owner.get('/v1/components/registry/acme-pinger')).body.data.id).toBe(build.id);
    const rebuilt = await owner.post(`/v1/components/${(await save('1.2.0+build.6')).id}/publish`, {});
    expect(rebuilt.status).toBe(409);
    expect(rebuilt.body).toEqual({
      error:
        'version 1.2.0+build.6 of "acme-pinger" is not greater than the published 1.2.0+build.5 (build metadata, after "+", does not order versions); published versions never change',
      code: 'conflict',
    });
    const prefixed = await owner.post(`/v1/components/${(await save('v2.0.0')).id}/publish`, {});
    expect([prefixed.status, prefixed.body.error]).toEqual([422, 'version "v2.0.0" is not a semantic version (for example 1.2.0)']);
    expect((await owner.post(`/v1/components/${(await save('1.2.1')).id}/publish`, {})).status).toBe(200);

    // An account's published key comes before the global registry's, for that account only.
    const shadow = await save('9.0.0', 'http-new-requests');
    expect((await owner.post(`/v1/components/${shadow.id}/publish`, {})).status).toBe(200);
    expect((await owner.get('/v1/components/registry/http-new-requests')).body.data.id).toBe(shadow.id);
    expect((await other.get('/v1/components/registry/http-new-requests')).body.data.id).not.toBe(shadow.id);
  });

  it('answers 400 when neither code nor URL is given', async () => {
    const res = await api.post('/v1/components', {});
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'component_code or component_url is required', code: 'invalid_request' });
  });

  it.each([
    ['an action without run', 'module.exports = { name: "a", version: "1.0.0", type: "action" };', 'action "a" has no run method; an action needs one'],
    [
      'an action with hooks',
      'module.exports = { name: "a", version: "1.0.0", type: "action", hooks: { async deploy() {} }, async run() {} };',
      'action "a" declares hooks (deploy); hooks are for sources',
    ],
    [
      'an action with dedupe',
      'module.exports = { name: "a", version: "1.0.0", type: "action", dedupe: "unique", async run() {} };',
      'action "a" declares dedupe; dedupe is for sources',
    ],
    // Saved, then a step whose endpoint or timer never came to be.
    [
      'an action with interface props',
      'module.exports = { name: "a", version: "1.0.0", type: "action", props: { http: "$.interface.http", timer: { type: "$.interface.timer", default: { intervalSeconds: 60 } } }, async run() {} };',
      'action "a" declares "http" ($.interface.http), "timer" ($.interface.timer); interface props are for sources (a workflow\'s HTTP endpoint or timer is its trigger)',
    ],
  ])('refuses %s with 422 and saves nothing', async (_, code, message) => {
    const before = (await server.running.services.store.db.selectFrom('components').select('id').execute()).length;
    const res = await api.post('/v1/components', { component_code: code });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ error: message, code: 'component_invalid', details: [{ reason: 'authoring_contract' }] });
    expect((await server.running.services.store.db.selectFrom('components').select('id').execute()).length).toBe(before);
  });

  it('refuses code that throws a long message while loading at once, with that message, not a load timeout', async () => {
    // One long word and no slash: the message's server paths were stripped by a regular expression that backtracked
    // over it (quadratic), the worker busy past --load-timeout (10 s) and the answer a misleading load_timeout.
    for (const code of ['x'.repeat(200_000), `throw new Error("${'y'.repeat(500_000)}");`]) {
      const started = Date.now();
      const res = await api.post('/v1/components', { component_code: code });
      expect(Date.now() - started).toBeLessThan(5000);
      expect([res.status, res.body.code, res.body.details]).toEqual([422, 'component_invalid', [{ reason: 'load_failed' }]]);
      expect(res.body.error).toMatch(/^the component threw while loading: (ReferenceError: x+ is not defined|Error: y+)$/);
    }
  });

  it('saves a source without run (it emits its triggering event) and an action with run', async () => {
    expect((await api.post('/v1/components', { component_code: 'module.exports = { name: "s", version: "1.0.0" };' })).status).toBe(200);
    expect((await api.post('/v1/components', { component_code: 'module.exports = { name: "a", version: "1.0.0", type: "action", run() {} };' })).status).toBe(
      200,
    );
  });

  const failures: Array<[string, string, string, RegExp]> = [
    [
      'a syntax error, with line and column',
      'module.exports = {\n  name: "x",\n  version: "1",\n  run() { return ; ) }\n};',
      'syntax_error',
      /line 4, column \d+/,
    ],
    ['no exported component', 'const x = 1;', 'no_component_exported', /export/],
    ['a missing name', 'module.exports = { version: "1", run() {} };', 'missing_name', /name/],
    ['a missing version', 'module.exports = { name: "x", run() {} };', 'missing_version', /version/],
    ['an empty version', 'module.exports = { name: "x", version: "", run() {} };', 'load_failed', /^version must be a non-empty string, not an empty string$/],
    ['a blank version', 'module.exports = { name: "x", version: " ", run() {} };', 'load_failed', /^version must be a non-empty string, not only whitespace$/],
    [
      'a version that is not a string',
      'module.exports = { name: "x", version: 1, run() {} };',
      'load_failed',
      /^version must be a non-empty string, not a number$/,
    ],
    ['an empty name', 'module.exports = { name: "", version: "1", run() {} };', 'load_failed', /^name must be a non-empty string, not an empty string$/],
    ['a name that is null', 'module.exports = { name: null, version: "1", run() {} };', 'load_failed', /^name must be a non-empty string, not null$/],
    ['an unknown prop type', 'module.exports = { name: "x", version: "1", props: { p: { type: "float" } }, run() {} };', 'unknown_prop_type', /float/],
    [
      'a relative import',
      'import helper from "./helper.js";\nexport default { name: "x", version: "1", run() { helper(); } };',
      'relative_import',
      /\.\/helper\.js/,
    ],
    [
      'a key that is not a string',
      'module.exports = { name: "x", version: "1", key: {}, run() {} };',
      'load_failed',
      /^key must be a non-empty string, not an object$/,
    ],
    [
      'an empty key',
      'module.exports = { name: "x", version: "1", key: "", run() {} };',
      'load_failed',
      /^key must be a non-empty string, not an empty string$/,
    ],
    [
      'a blank key',
      'module.exports = { name: "x", version: "1", key: " ", run() {} };',
      'load_failed',
      /^key must be a non-empty string, not only whitespace$/,
    ],
    ['a NUL in its name', 'module.exports = { name: "a\\u0000b", version: "1", run() {} };', 'load_failed', /^name "a\\u0000b" holds control characters/],
    [
      'an unknown component type',
      'module.exports = { name: "x", version: "1", type: "wat", run() {} };',
      'load_failed',
      /^type must be "action", or "source" \(the same as no type\), not "wat"$/,
    ],
    ['a run that is not a method', 'module.exports = { name: "x", version: "1", run: 5 };', 'load_failed', /^run must be a method, not a number$/],
    [
      'a prop whose min is above its max',
      'module.exports = { name: "x", version: "1", props: { n: { type: "integer", min: 10, max: 1 } }, run() {} };',
      'load_failed',
      /^prop "n": min 10 is greater than max 1/,
    ],
    [
      'an integer prop whose min is no integer',
      'module.exports = { name: "x", version: "1", props: { n: { type: "integer", min: 1.5 } }, run() {} };',
      'load_failed',
      /^prop "n": min must be an integer \(its prop is an integer\), not 1\.5$/,
    ],
    [
      'an integer list prop whose max is a string',
      'module.exports = { name: "x", version: "1", props: { n: { type: "integer[]", max: "9" } }, run() {} };',
      'load_failed',
      /^prop "n": max must be an integer \(its prop is an integer\), not a string$/,
    ],
    [
      'a secret flag that is not a boolean (the value would be kept in clear)',
      'module.exports = { name: "x", version: "1", props: { s: { type: "string", secret: "true" } }, run() {} };',
      'load_failed',
      /^prop "s": secret must be a boolean, not a string$/,
    ],
    [
      'an optional flag that is not a boolean',
      'module.exports = { name: "x", version: "1", props: { s: { type: "string", optional: 1 } }, run() {} };',
      'load_failed',
      /^prop "s": optional must be a boolean, not a number$/,
    ],
    [
      'a customResponse that is not a boolean',
      'module.exports = { name: "x", version: "1", props: { h: { type: "$.interface.http", customResponse: "yes" } }, run() {} };',
      'load_failed',
      /^prop "h": customResponse must be a boolean, not a string$/,
    ],
    [
      'options that are neither a list nor a method',
      'module.exports = { name: "x", version: "1", props: { c: { type: "string", options: 5 } }, run() {} };',
      'load_failed',
      /^prop "c": options must be/,
    ],
    [
      'an app prop without its app',
      'module.exports = { name: "x", version: "1", props: { a: { type: "app" } }, run() {} };',
      'load_failed',
      /^prop "a": an app prop needs `app`/,
    ],
    [
      'a getter that throws while the export is read',
      'module.exports = { get name() { throw new Error("getter broke"); }, version: "1", run() {} };',
      'load_failed',
      /^the component threw while its export was read: Error: getter broke$/,
    ],
    ['an endless loop at load', 'while (true) {}\nmodule.exports = { name: "x", version: "1", run() {} };', 'load_timeout', /took longer than 2000 ms/],
    [
      'an uninstallable package',
      'import x from "tributary-no-such-package-zz9";\nexport default { name: "x", version: "1", run() { x(); } };',
      'package_install_failed',
      /tributary-no-such-package-zz9/,
    ],
  ];

  for (const [what, code, reason, message] of failures) {
    it(`answers 422 for ${what}, and stays healthy`, async () => {
      const res = await api.post('/v1/components', { component_code: code });
      expect(res.status).toBe(422);
      expect(res.body.code).toBe('component_invalid');
      expect(res.body.error).toMatch(message);
      expect(res.body.details[0].reason).toBe(reason);
      expect((await request('GET', `${server.url}/healthz`)).status).toBe(200);
    });
  }

  it('refuses a method named like a prop, and a prop or method named $emit, which would each hide the other from this', async () => {
    const clash = await api.post('/v1/components', {
      component_code: 'module.exports = { name: "x", version: "1", props: { x: { type: "string" } }, methods: { x() { return 1; } }, run() {} };',
    });
    expect(clash.status).toBe(422);
    expect(clash.body).toEqual({
      error: 'prop "x" and method "x" share a name: this.x would be the method, and the prop\'s value would be lost',
      code: 'component_invalid',
      details: [{ reason: 'load_failed', prop: 'x' }],
    });
    const emitProp = await api.post('/v1/components', {
      component_code: 'module.exports = { name: "x", version: "1", props: { $emit: { type: "string" } }, run() { this.$emit(1); } };',
    });
    expect(emitProp.status).toBe(422);
    expect(emitProp.body).toEqual({
      error: 'prop "$emit" has a reserved name: this.$emit is the function that emits events',
      code: 'component_invalid',
      details: [{ reason: 'load_failed', prop: '$emit' }],
    });
    const emitMethod = await api.post('/v1/sources', {
      component_code: 'module.exports = { name: "x", version: "1", methods: { $emit() {} }, run() { this.$emit(1); } };',
    });
    expect(emitMethod.status).toBe(422);
    expect(emitMethod.body).toEqual({
      error: 'method "$emit" has a reserved name: this.$emit is the function that emits events',
      code: 'component_invalid',
      details: [{ reason: 'load_failed' }],
    });
    // An action has no $emit: the name is free there.
    const action = await api.post('/v1/components', {
      component_code: 'module.exports = { name: "x", version: "1", type: "action", props: { $emit: { type: "string" } }, run() {} };',
    });
    expect(action.status).toBe(200);
  });

  it('fetches component_url with the outbound guard, and keeps the URL when code is also given', async () => {
    const host = http.createServer((_req, res) => res.end('module.exports = { name: "From URL", version: "1.0.0", run() {} };'));
    await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(host.address() as AddressInfo).port}/component.js`;
    try {
      const blocked = await api.post('/v1/components', { component_url: url });
      expect(blocked.status).toBe(400);
      expect(blocked.body.error).toContain('private address');
      const both = await api.post('/v1/components', { component_url: url, component_code: 'module.exports = { name: "Inline", version: "1", run() {} };' });
      expect(both.status).toBe(200);
      expect(both.body.data.name).toBe('Inline');
      const open = await startTestServer(dialect, { allowPrivateNetwork: true });
      try {
        const openApi = client(open.url, (await open.createUser()).apiKey);
        const fetched = await openApi.post('/v1/components', { component_url: url });
        expect(fetched.status).toBe(200);
        expect(fetched.body.data.name).toBe('From URL');
        // A port that was just free: nothing listens there, so the connection is refused.
        const closed = http.createServer();
        await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
        const port = (closed.address() as AddressInfo).port;
        await new Promise<void>((resolve) => closed.close(() => resolve()));
        const refused = await openApi.post('/v1/components', { component_url: `http://127.0.0.1:${port}/component.js` });
        expect([refused.status, refused.body]).toEqual([
          400,
          {
            error: `cannot fetch component_url: http://127.0.0.1:${port}/component.js could not be reached: ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:${port}`,
            code: 'invalid_request',
          },
        ]);
      } finally {
        await open.destroy();
      }
    } finally {
      host.close();
    }
    expect((await api.post('/v1/components', { component_url: 'ftp://example.com/x.js' })).status).toBe(400);
  });

  it('refuses an ill-formed component_url kept as metadata beside component_code or component_id, saving nothing', async () => {
    const own = client(server.url, (await server.createUser()).apiKey);
    const code = 'module.exports = { name: "Inline", version: "1", run() {} };';
    const refused = (raw: string, how: string) => ({ error: `component_url "${raw}" ${how}`, code: 'invalid_request' });
    const ftp = await own.post('/v1/components', { component_code: code, component_url: 'ftp://example.com/x.js' });
    expect([ftp.status, ftp.body]).toEqual([400, refused('ftp://example.com/x.js', 'must use http or https and name a host')]);
    const relative = await own.post('/v1/components', { component_code: code, component_url: 'not a url' });
    expect([relative.status, relative.body]).toEqual([400, refused('not a url', 'is not an absolute URL; expected http:// or https:// and a host')]);
    // A C1 control is percent-encoded as the URL is parsed, so the URL kept would not be the one fetched.
    const nel = await own.post('/v1/components', { component_code: code, component_url: 'https://example.com/a\u0085.js' });
    expect([nel.status, nel.body]).toEqual([
      400,
      refused('https://example.com/a\u0085.js', 'holds control characters or surrounding spaces; send the URL alone'),
    ]);
    expect((await own.get('/v1/users/me/components')).body.page_info.total_count).toBe(0);
    const viaSource = await own.post('/v1/sources', { component_code: code, component_url: 'ftp://example.com/x.js' });
    expect([viaSource.status, viaSource.body]).toEqual([400, refused('ftp://example.com/x.js', 'must use http or https and name a host')]);
    const saved = await own.post('/v1/components', { component_code: code, component_url: 'https://example.com/x.js' });
    expect(saved.status).toBe(200);
    const byId = await own.post('/v1/sources', { component_id: saved.body.data.id, component_url: 'ftp://example.com/x.js' });
    expect([byId.status, byId.body]).toEqual([400, refused('ftp://example.com/x.js', 'must use http or https and name a host')]);
    expect((await own.get('/v1/users/me/sources')).body.page_info.total_count).toBe(0);
  });

  it('refuses a C1 control character (U+0080–U+009F) in a name, version or key as it refuses a C0 one, saving nothing', async () => {
    const own = client(server.url, (await server.createUser()).apiKey);
    // U+0085 is a line break to some readers, U+009B a terminal's escape (CSI).
    const cases: [string, string, string][] = [
      ['name', 'module.exports = { name: "a\\u0085b", version: "1", run() {} };', 'a\u0085b'],
      ['version', 'module.exports = { name: "x", version: "1\\u009b", run() {} };', '1\u009b'],
      ['key', 'module.exports = { name: "x", version: "1", key: "\\u0080k", run() {} };', '\u0080k'],
      ['name', 'module.exports = { name: "a\\u0001b", version: "1", run() {} };', 'a\u0001b'],
    ];
    for (const [field, code, value] of cases) {
      for (const path of ['/v1/components', '/v1/sources']) {
        const res = await own.post(path, { component_code: code });
        expect([res.status, res.body], `${path} ${JSON.stringify(value)}`).toEqual([
          422,
          {
            error: `${field} ${JSON.stringify(value)} holds control characters, which names and keys may not`,
            code: 'component_invalid',
            details: [{ reason: 'load_failed' }],
          },
        ]);
      }
    }
    expect((await own.get('/v1/users/me/components')).body.page_info.total_count).toBe(0);
    expect((await own.get('/v1/users/me/sources')).body.page_info.total_count).toBe(0);
  });
});
