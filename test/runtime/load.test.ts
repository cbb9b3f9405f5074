// Preparing and inspecting components: module styles, prop forms, and every way a component can fail to load.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ComponentLoadError, type ComponentInfo } from '../../src/runtime/index.js';
import { createRuntime, request, source, type TestRuntime } from './helpers.js';

let t: TestRuntime;
beforeAll(() => {
  t = createRuntime({ poolSize: 2, loadTimeoutMs: 3_000 });
});
afterAll(async () => {
  await t.close();
});

async function inspect(code: string, accountId = 'acct_load'): Promise<ComponentInfo> {
  return t.runtime.inspect(accountId, await t.runtime.prepare(code));
}

async function loadError(code: string, accountId = 'acct_load'): Promise<ComponentLoadError> {
  const error = await t.runtime
    .prepare(code)
    .then((prepared) => t.runtime.inspect(accountId, prepared))
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(error).toBeInstanceOf(ComponentLoadError);
  return error as ComponentLoadError;
}

describe('prepare', () => {
  it('writes the bundle under <dataDir>/code once, named by a keyed hash, not by the SHA-256 of the code it shows', async () => {
    const code = source('this.$emit(event)');
    const first = await t.runtime.prepare(code);
    expect(first.codeHash).toBe(createHash('sha256').update(code).digest('hex'));
    expect(first.artifactPath).toMatch(new RegExp(`^${fs.realpathSync(t.dataDir)}/code/[0-9a-f]{64}\\.cjs$`));
    expect(path.basename(first.artifactPath)).not.toBe(`${first.codeHash}.cjs`);
    expect(fs.existsSync(first.artifactPath)).toBe(true);
    expect(first.packages).toEqual({});
    const mtime = fs.statSync(first.artifactPath).mtimeMs;
    const second = await t.runtime.prepare(code);
    expect(second).toEqual(first);
    expect(fs.statSync(first.artifactPath).mtimeMs).toBe(mtime);
  });

  it('never runs the code it prepares', async () => {
    const prepared = await t.runtime.prepare('for (;;) {}\nmodule.exports = {};');
    expect(fs.existsSync(prepared.artifactPath)).toBe(true);
  });

  it('reports a syntax error with its line and column', async () => {
    const error = await loadError('module.exports = {\n  name: "x",\n  version: "1",\n  run() { return 1 +; }\n};');
    expect(error.code).toBe('syntax_error');
    expect(error.details).toEqual({ line: 4, column: 21 });
    expect(error.message).toContain('line 4');
    expect(error.message).toContain('column 21');
  });

  it('refuses relative imports, naming the import', async () => {
    const error = await loadError('import helper from "./helper.js";\nexport default { name: "x", version: "1" };');
    expect(error.code).toBe('relative_import');
    expect(error.message).toBe('relative import "./helper.js" is not supported; bundle it into the component');
    expect(error.details).toEqual({ import: './helper.js' });
    const parent = await loadError('const x = require("../x");\nmodule.exports = { name: "x", version: "1" };');
    expect(parent.details).toEqual({ import: '../x' });
    const absolute = await loadError('const x = require("/etc/passwd");\nmodule.exports = { name: "x", version: "1" };');
    expect(absolute.code).toBe('relative_import');
    expect(absolute.message).toBe('import of the file "/etc/passwd" is not supported; bundle it into the component');
  });

  it("quotes a long name, type or dedupe in the component's load error, cut to its first 100 characters and its length", async () => {
    const long = 'a'.repeat(10_000);
    const cut = (text: string) => `${JSON.stringify(text.slice(0, 100))}… (${text.length} characters)`;
    const named = await loadError(`module.exports = { name: "\\u0001${long}", version: "1", run() {} };`);
    expect([named.code, named.message]).toEqual(['load_failed', `name ${cut(`\u0001${long}`)} holds control characters, which names and keys may not`]);
    const typed = await loadError(`module.exports = { name: "x", version: "1", type: "${long}", run() {} };`);
    expect(typed.message).toBe(`type must be "action", or "source" (the same as no type), not ${cut(long)}`);
    const deduped = await loadError(`module.exports = { name: "x", version: "1", dedupe: "${long}", run() {} };`);
    expect(deduped.message).toBe(`dedupe must be "unique", "greatest" or "last", not ${cut(long)}`);
  });

  it('quotes a long import in its error as every value a component gives: its first 100 characters and how long it was', async () => {
    const cut = (text: string) => `${JSON.stringify(text.slice(0, 100))}… (${text.length} characters)`;
    const refused = async (specifier: string) => loadError(`require(${JSON.stringify(specifier)});\nmodule.exports = { name: "x", version: "1" };`);
    const bang = '!'.repeat(10_000);
    const notName = await refused(bang);
    expect([notName.code, notName.message]).toEqual(['package_install_failed', `${cut(bang)} is not an npm package name`]);
    const relative = `./${'a'.repeat(300)}`;
    expect((await refused(relative)).message).toBe(`relative import ${cut(relative)} is not supported; bundle it into the component`);
    const file = `/${'a'.repeat(300)}`;
    expect((await refused(file)).message).toBe(`import of the file ${cut(file)} is not supported; bundle it into the component`);
    const platform = `@pipedream/platform/${'x'.repeat(300)}`;
    expect((await refused(platform)).message).toBe(`${cut(platform)} is not a module of @pipedream/platform`);
    // A registry nobody answers on, without retries: the install fails at once, naming the long range.
    const saved = { ...process.env };
    process.env.npm_config_registry = 'http://127.0.0.1:9/';
    process.env.npm_config_fetch_retries = '0';
    try {
      const ranged = `tributary-no-such-package-zz9@${'1'.repeat(300)}`;
      const install = await refused(ranged);
      expect([install.code, install.message]).toEqual([
        'package_install_failed',
        `could not install npm package ${cut(ranged)}: syscall connect; errno ECONNREFUSED`,
      ]);
    } finally {
      for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
      Object.assign(process.env, saved);
    }
  });

  it('keeps Node built-ins external, with and without the node: prefix', async () => {
    const prepared = await t.runtime.prepare(
      'import { createHash } from "node:crypto";\nconst util = require("util");\nexport default { name: "b", version: "1", run() { this.$emit({ h: createHash("sha1").update("x").digest("hex"), f: util.format("%d", 1) }); } };',
    );
    const result = await t.runtime.invoke(request('acct_load', prepared));
    expect(result.outcomes[0]!.emits).toEqual([{ event: { h: '11f6ad8ec52a2984abaafd7c3b516503785c2072', f: '1' } }]);
  });
});

describe('module styles', () => {
  it('loads a CommonJS component', async () => {
    const info = await inspect(`
      module.exports = {
        key: "acme-new-thing", name: "New thing", version: "0.1.2", description: "Emits things", dedupe: "unique",
        props: { db: "$.service.db" },
        hooks: { async deploy() {}, async activate() {} },
        async run(event) { this.$emit(event, { id: 1 }); },
      };`);
    expect(info).toEqual({
      key: 'acme-new-thing',
      name: 'New thing',
      version: '0.1.2',
      description: 'Emits things',
      dedupe: 'unique',
      props: [{ name: 'db', type: '$.service.db' }],
      hooks: { deploy: true, activate: true, deactivate: false },
      hasRun: true,
    });
  });

  it('loads an ES module component (export default)', async () => {
    const info = await inspect(`
      import { format } from "node:util";
      const label = format("%s", "Count");
      export default { name: "ESM", version: "1.0.0", type: "action", props: { n: { type: "integer", label } }, async run() {} };`);
    expect(info).toMatchObject({ name: 'ESM', version: '1.0.0', type: 'action', hasRun: true });
    expect(info.props).toEqual([{ name: 'n', type: 'integer', label: 'Count' }]);
  });

  it('loads a defineComponent(...) component importing @pipedream/platform', async () => {
    const info = await inspect(`
      import { defineComponent, axios, ConfigurationError } from "@pipedream/platform";
      export default defineComponent({
        name: "Platform", version: "0.0.1",
        props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 900 } } },
        async run() { if (typeof axios !== "function" || typeof ConfigurationError !== "function") throw new Error("no platform"); },
      });`);
    expect(info).toMatchObject({ name: 'Platform', hasRun: true });
    expect(info.props).toEqual([{ name: 'timer', type: '$.interface.timer', default: { intervalSeconds: 900 } }]);
  });

  it('reports a source without run', async () => {
    const info = await inspect('module.exports = { name: "relay", version: "1" };');
    expect(info.hasRun).toBe(false);
    expect(info.props).toEqual([]);
  });
});

describe('props', () => {
  it('normalises every form in declaration order', async () => {
    const info = await inspect(`
      const github = {
        type: "app",
        app: "github",
        propDefinitions: {
          repo: { type: "string", label: "Repository", description: "owner/name", options: ["a/b", { label: "C", value: "c/d" }] },
          org: { type: "string", label: "Organisation", async options() { return []; } },
        },
        methods: { base() { return "https://api.github.com"; } },
      };
      const common = {
        props: { github, db: "$.service.db" },
        methods: { shared() { return 1; } },
      };
      module.exports = {
        ...common,
        name: "All props", version: "1",
        props: {
          ...common.props,
          http: { type: "$.interface.http", customResponse: true },
          timer: { type: "$.interface.timer", intervalSeconds: 60, cron: "0 * * * *" },
          token: "string",
          secretKey: { type: "string", secret: true, optional: true, label: "Key" },
          count: { type: "integer", min: 1, max: 10, default: 5 },
          flags: { type: "boolean[]" },
          tags: { type: "string[]", default: ["x"] },
          nums: "integer[]",
          objs: { type: "object[]" },
          cfg: { type: "object", default: { a: 1 } },
          repo: { propDefinition: [github, "repo"], description: "Pick one" },
          org: { propDefinition: [github, "org", (c) => ({ c })], optional: true },
          other: github,
        },
        methods: { ...common.methods, own() { return this.shared(); } },
        async run() {},
      };`);
    expect(info.props).toEqual([
      { name: 'github', type: 'app', app: 'github' },
      { name: 'db', type: '$.service.db' },
      { name: 'http', type: '$.interface.http', customResponse: true },
      { name: 'timer', type: '$.interface.timer', intervalSeconds: 60, cron: '0 * * * *' },
      { name: 'token', type: 'string' },
      { name: 'secretKey', type: 'string', label: 'Key', secret: true, optional: true },
      { name: 'count', type: 'integer', default: 5, min: 1, max: 10 },
      { name: 'flags', type: 'boolean[]' },
      { name: 'tags', type: 'string[]', default: ['x'] },
      { name: 'nums', type: 'integer[]' },
      { name: 'objs', type: 'object[]' },
      { name: 'cfg', type: 'object', default: { a: 1 } },
      {
        name: 'repo',
        type: 'string',
        label: 'Repository',
        description: 'Pick one',
        options: ['a/b', { label: 'C', value: 'c/d' }],
        propDefinition: ['github', 'repo'],
      },
      { name: 'org', type: 'string', label: 'Organisation', optional: true, remoteOptions: true, propDefinition: ['github', 'org'] },
      { name: 'other', type: 'app', app: 'github' },
    ]);
  });

  it('refuses an unknown prop type, naming prop and type', async () => {
    const error = await loadError('module.exports = { name: "x", version: "1", props: { when: { type: "datetime" } } };');
    expect(error.code).toBe('unknown_prop_type');
    expect(error.message).toContain('"when"');
    expect(error.message).toContain('"datetime"');
    expect(error.details).toEqual({ prop: 'when' });
    const bare = await loadError('module.exports = { name: "x", version: "1", props: { svc: "$.service.queue" } };');
    expect(bare.code).toBe('unknown_prop_type');
    expect(bare.message).toContain('"$.service.queue"');
    // The hosted service's app hooks (Slack's sources use one) are named for what they are, with what to use instead.
    const apphook = await loadError('module.exports = { name: "x", version: "1", props: { hook: { type: "$.interface.apphook", appProp: "slack" } } };');
    expect(apphook.code).toBe('unknown_prop_type');
    expect(apphook.message).toBe(
      'prop "hook" is a $.interface.apphook, which takes events from the hosted service\'s own app integrations; Tributary has none: use a source that registers a webhook in its activate() hook, or an HTTP source the app posts to',
    );
  });

  it('names an http_request prop for what it is, with what to use instead', async () => {
    // Trimmed from PipedreamHQ/pipedream components/http/actions/custom-request/custom-request.mjs (with its
    // httpRequest propDefinition from components/http/http.app.mjs inlined): the HTTP app's request actions.
    const error = await loadError(`export default {
  key: "http-custom-request", name: "Send any HTTP Request", type: "action", version: "1.1.2",
  props: { httpRequest: { type: "http_request", label: "HTTP Request Configuration" } },
  async run({ $ }) { return await this.httpRequest.execute(); },
};`);
    expect([error.code, error.message, error.details]).toEqual([
      'unknown_prop_type',
      'prop "httpRequest" is an http_request, the hosted service\'s request builder (the HTTP app\'s "Send any HTTP Request", GET, POST and PUT actions use it); Tributary does not offer it: make the request in run() with axios from @pipedream/platform, its URL, method, headers and body as string or object props',
      { prop: 'httpRequest' },
    ]);
  });

  it('quotes a long or odd prop name in its errors, cut to its first 100 characters, and names its member as code reads it', async () => {
    const long = 'p'.repeat(10_000);
    const cut = `${JSON.stringify(long.slice(0, 100))}… (${long.length} characters)`;
    const typed = await loadError(`module.exports = { name: "x", version: "1", props: { "${long}": { type: "${long}" } } };`);
    expect([typed.code, typed.message]).toEqual(['unknown_prop_type', `prop ${cut} has an unknown type: ${cut}`]);
    const shared = await loadError(`module.exports = { name: "x", version: "1", props: { "${long}": "string" }, methods: { "${long}"() {} } };`);
    expect(shared.message).toBe(`prop ${cut} and method ${cut} share a name: this[${cut}] would be the method, and the prop's value would be lost`);
    const odd = await loadError('module.exports = { name: "x", version: "1", props: { "a\\"b\\n": { type: "float" } } };');
    expect(odd.message).toBe('prop "a\\"b\\n" has an unknown type: "float"');
    const spaced = await loadError('module.exports = { name: "x", version: "1", props: { "a b": "string" }, methods: { "a b"() {} } };');
    expect(spaced.message).toBe('prop "a b" and method "a b" share a name: this["a b"] would be the method, and the prop\'s value would be lost');
  });

  it('refuses a NaN or infinite min or max, naming the prop, rather than failing as a malformed worker message', async () => {
    const nan = await loadError('module.exports = { name: "x", version: "1", props: { a: { type: "integer", min: NaN } }, run() {} };');
    expect([nan.code, nan.message, nan.details]).toEqual(['load_failed', 'prop "a": min must be a finite number, not NaN', { prop: 'a' }]);
    const infinite = await loadError('module.exports = { name: "x", version: "1", props: { a: { type: "integer", max: Infinity } }, run() {} };');
    expect(infinite.message).toBe('prop "a": max must be a finite number, not Infinity');
  });

  it('refuses a propDefinition the app does not define', async () => {
    const error = await loadError(`
      const app = { type: "app", app: "slack", propDefinitions: {} };
      module.exports = { name: "x", version: "1", props: { app, channel: { propDefinition: [app, "channel"] } } };`);
    expect(error.code).toBe('load_failed');
    expect(error.message).toContain('channel');
  });
});

describe('load failures', () => {
  it('reports a module that exports no component', async () => {
    expect((await loadError('const x = 1;')).code).toBe('no_component_exported');
    expect((await loadError('module.exports = 42;')).code).toBe('no_component_exported');
    const five = await loadError('export default 5;');
    expect([five.code, five.message]).toEqual([
      'no_component_exported',
      'its default export is a number, not a component: use `module.exports = {…}` or `export default {…}`',
    ]);
    // An empty component is one: what it lacks is named.
    const empty = await loadError('export default defineComponent({});');
    expect([empty.code, empty.message]).toEqual(['missing_name', 'the component has no `name` (a string)']);
  });

  it('reports a missing name or version', async () => {
    const noName = await loadError('module.exports = { version: "1", run() {} };');
    expect(noName.code).toBe('missing_name');
    const noVersion = await loadError('export default { name: "x", run() {} };');
    expect(noVersion.code).toBe('missing_version');
  });

  it('reports a throw at load with its message', async () => {
    const error = await loadError('throw new Error("boom at load");\nmodule.exports = { name: "x", version: "1" };');
    expect(error.code).toBe('load_failed');
    expect(error.message).toContain('boom at load');
  });

  it('reports process.exit at load', async () => {
    const error = await loadError('process.exit(7);\nmodule.exports = { name: "x", version: "1" };');
    expect(error.code).toBe('load_failed');
    expect(error.message).toContain('process.exit(7)');
  });

  it('times out an endless loop at load, and the pool still works afterwards', async () => {
    const error = await loadError('for (;;) {}\nmodule.exports = { name: "x", version: "1" };');
    expect(error.code).toBe('load_timeout');
    expect(error.message).toContain('3000 ms');
    const info = await inspect(source('this.$emit(event)'));
    expect(info.name).toBe('test source');
  });

  it('reports memory exhaustion at load', async () => {
    const error = await loadError(
      'const hoard = []; for (;;) hoard.push(new Array(100000).fill({ n: Math.random() }));\nmodule.exports = { name: "x", version: "1" };',
    );
    expect(error.code).toBe('load_out_of_memory');
    expect((await inspect(source('this.$emit(event)'))).name).toBe('test source');
  });
});
