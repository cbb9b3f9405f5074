// A component that replaces a built-in (JSON.stringify, Array.prototype.push, Promise.prototype.then…) breaks only its
// own code: the worker's protocol keeps working, so its run is recorded as any other, and the next run of another
// source of the same account, in the same worker (or a new one, after a change the worker counts as spoiling it),
// still works. Through the real API and endpoints.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, request } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

type Api = ReturnType<typeof client>;

/** What a run left behind: the events it emitted, or the error on its $errors stream. */
interface Aftermath {
  emitted: unknown[];
  error?: { name: string; message: string; code?: string };
}

/** `target` replaced by a function that throws an error naming it. */
function replaced(target: string): string {
  return `${target} = function () { throw new Error(${JSON.stringify(`replaced ${target}`)}); };`;
}

/**
 * Replacements on the prototypes the worker's own objects, functions and promises inherit from: the worker says it is
 * spoiled (worker/pristine.ts), and the account's next call gets a new worker.
 */
const SPOILING: ReadonlySet<string> = new Set(['Promise.prototype.then', 'Promise.prototype.catch', 'Function.prototype.call', 'Function.prototype.bind']);

/** Built-ins the worker's own code calls on its way from a request to the outcome it sends back. */
const TARGETS = [
  'JSON.stringify',
  'JSON.parse',
  'Array.prototype.push',
  'Array.prototype.map',
  'Array.prototype.slice',
  'Array.prototype.filter',
  'Array.prototype.join',
  'Array.prototype.some',
  'Array.prototype.find',
  'Array.prototype.includes',
  'Object.keys',
  'Object.entries',
  'Object.fromEntries',
  'Object.defineProperty',
  'Object.hasOwn',
  'Object.getPrototypeOf',
  'Object.freeze',
  'Map.prototype.get',
  'Map.prototype.set',
  'Map.prototype.has',
  'Map.prototype[Symbol.iterator]',
  'Set.prototype.has',
  'Set.prototype.add',
  'Promise',
  'Promise.prototype.then',
  'Promise.prototype.catch',
  'Promise.race',
  'Promise.resolve',
  'String.prototype.slice',
  'String.prototype.split',
  'String.prototype.replaceAll',
  'String.prototype.includes',
  'String.prototype.startsWith',
  'String.prototype.trim',
  'RegExp.prototype.test',
  'RegExp.prototype.exec',
  'Number.isFinite',
  'Number.isSafeInteger',
  'Number.isNaN',
  'Array.isArray',
  'Buffer.byteLength',
  'Date.now',
  'performance.now',
  'structuredClone',
  'Function.prototype.call',
  'Function.prototype.bind',
  'Reflect.apply',
];

/**
 * Built-ins that reading a component's export (its name, key, props, options, propDefinitions, methods) calls: a module
 * that replaces one as it loads is still described as it would be with the originals.
 */
const READ_AT_LOAD = [
  'Array.prototype.map',
  'Array.prototype.filter',
  'Array.prototype.find',
  'Array.prototype.includes',
  'Array.prototype.push',
  'Object.keys',
  'Object.entries',
  'Set.prototype.has',
  'Set.prototype.add',
  'RegExp.prototype.test',
  'RegExp.prototype.exec',
  'Array.isArray',
  'String.prototype.trim',
  'String.prototype.split',
  'JSON.stringify',
];

/** A component whose description takes every branch READ_AT_LOAD's built-ins are called on. */
const DESCRIBED = `
const github = { type: "app", app: "github", propDefinitions: { repo: { type: "string", label: "Repository" } } };
module.exports = {
  key: "described-source",
  name: "Described",
  version: "1.0.0",
  dedupe: "unique",
  props: {
    github,
    http: "$.interface.http",
    repo: { propDefinition: [github, "repo"], optional: true },
    mode: { type: "string", options: ["a", { label: "B", value: "b" }], default: "a" },
    note: { type: "alert", alertType: "warning", content: "read me" },
    tags: "string[]",
  },
  methods: { helper() { return 1; }, notAMethod: 2 },
  async run() {},
};`;

/** How DESCRIBED is described with the originals in place. */
const DESCRIBED_PROPS = [
  { name: 'github', type: 'app', app: 'github' },
  { name: 'http', type: '$.interface.http' },
  { name: 'repo', type: 'string', label: 'Repository', optional: true, propDefinition: ['github', 'repo'] },
  { name: 'mode', type: 'string', options: ['a', { label: 'B', value: 'b' }], default: 'a' },
  { name: 'note', type: 'alert', alertType: 'warning', content: 'read me', optional: true },
  { name: 'tags', type: 'string[]' },
];

/**
 * Built-ins that answering a prop's `options()` or a reload (`additionalProps()`) calls: a component that replaces one at
 * its top level is answered as with the originals.
 */
const READ_TO_CONFIGURE = [
  'Object.entries',
  'Object.fromEntries',
  'Object.keys',
  'Object.hasOwn',
  'Array.prototype.map',
  'Array.prototype.find',
  'Array.prototype.push',
  'Array.isArray',
  'JSON.stringify',
  'JSON.parse',
  'String.prototype.slice',
  'String.prototype.split',
  'Number.isFinite',
  'Buffer.byteLength',
  'Function.prototype.call',
  'Function.prototype.bind',
  'Reflect.apply',
];

/**
 * A component whose options() and additionalProps() take every branch READ_TO_CONFIGURE's built-ins are called on; its
 * own code calls none of them.
 */
const CONFIGURED = `
const forge = {
  type: "app",
  app: "forge",
  propDefinitions: { branch: { type: "string", label: "Branch", async options({ repo }) { return [{ label: repo + " main", value: repo + "#main" }]; } } },
};
module.exports = {
  name: "configured",
  version: "1.0.0",
  props: {
    forge,
    repo: {
      type: "string",
      async options({ page }) { return { options: ["alpha", { label: "Beta", value: "b" }, { value: 3 }, 4], context: { nextPageToken: "p" + page } }; },
    },
    branch: { propDefinition: [forge, "branch", (c) => ({ repo: c.repo })] },
    size: { type: "string", options: ["s", { label: "Large", value: "l" }] },
    broken: { type: "string", optional: true, async options() { return "nope"; } },
    mode: { type: "string", reloadProps: true },
  },
  async additionalProps(previous) {
    previous.size.label = "Size";
    if (this.mode === "fail") throw new RangeError("no mode " + this.mode);
    if (this.mode === "wide") return { width: { type: "integer", label: "Width", options: [1, { label: "Two", value: 2 }] } };
    return null;
  },
  async run() {},
};`;

/** How CONFIGURED's declared props are listed with the originals in place (what a failed reload answers). */
const CONFIGURED_PROPS = [
  { name: 'forge', type: 'app', app: 'forge' },
  { name: 'repo', type: 'string', remoteOptions: true },
  { name: 'branch', type: 'string', label: 'Branch', remoteOptions: true, propDefinition: ['forge', 'branch'] },
  { name: 'size', type: 'string', options: ['s', { label: 'Large', value: 'l' }] },
  { name: 'broken', type: 'string', optional: true, remoteOptions: true },
  { name: 'mode', type: 'string', reloadProps: true },
];

/** The declared props as a reload lists them: with the label its additionalProps() gave `size` on its copy. */
const RELOADED_PROPS = CONFIGURED_PROPS.map((prop) => (prop.name === 'size' ? { ...prop, label: 'Size' } : prop));

/** What Node's own internals call (its events and its channel's serializer): the worker cannot go on (README, Security model). */
const NODE_RELIES_ON = ['Array.prototype[Symbol.iterator]', 'Object.getPrototypeOf([][Symbol.iterator]()).next', 'Function.prototype.apply'];

describe.each(DIALECTS)('replaced built-ins on %s', (dialect) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(dialect, { allowPrivateNetwork: false, runTimeout: 6 });
  });
  afterAll(() => server?.destroy());

  /** Deploys `code` for `api`, triggers it once and waits for what it left. */
  async function runOnce(api: Api, id: string, endpoint: string, seen: number): Promise<Aftermath> {
    expect((await request('POST', endpoint, { body: {} })).status).toBe(200);
    const settled = await waitFor(
      async () => {
        const [events, errors] = await Promise.all([
          api.get(`/v1/sources/${id}/event_summaries?expand=event`),
          api.get(`/v1/sources/${id}/$errors/event_summaries?expand=event`),
        ]);
        return { emitted: events.body.data.map((e: { event: unknown }) => e.event), errors: errors.body.data };
      },
      (r) => r.emitted.length + r.errors.length > seen,
      { what: 'the run to finish' },
    );
    return { emitted: settled.emitted, error: settled.errors[0]?.event.error };
  }

  async function deploy(api: Api, code: string): Promise<{ status: number; id: string; endpoint: string; body: unknown }> {
    const created = await api.post('/v1/sources', { component_code: code });
    return { status: created.status, body: created.body, id: created.body.data?.id, endpoint: created.body.data?.configured_props?.http?.endpoint_url };
  }

  /**
   * A fresh account with a bystander source that reports its worker's pid and a per-worker counter; `prelude` runs at
   * the top of a second source's module (when it loads) and `body` in its run. Returns what each run recorded.
   */
  async function scenario(prelude: string, body: string) {
    const api = client(server.url, (await server.createUser()).apiKey);
    const bystander = await deploy(
      api,
      `module.exports = { name: "bystander", version: "1.0.0", props: { http: "$.interface.http" },
        async run() { globalThis.calls = (globalThis.calls ?? 0) + 1; this.$emit({ pid: process.pid, calls: globalThis.calls }); } };`,
    );
    expect(bystander.status).toBe(200);
    const before = await runOnce(api, bystander.id, bystander.endpoint, 0);
    const hostile = await deploy(
      api,
      `${prelude}\nmodule.exports = { name: "hostile", version: "1.0.0", props: { http: "$.interface.http" }, async run(event) { ${body} } };`,
    );
    const run = hostile.status === 200 ? await runOnce(api, hostile.id, hostile.endpoint, 0) : undefined;
    const after = await runOnce(api, bystander.id, bystander.endpoint, 1);
    return { deployed: hostile.status, deployError: hostile.status === 200 ? undefined : hostile.body, run, before, after };
  }

  /**
   * The hostile run did what it asked and the bystander's next run found the same worker, its state intact; or, when
   * `target` is one the worker counts as spoiling it (SPOILING), a new worker.
   */
  function expectContained(result: Awaited<ReturnType<typeof scenario>>, target: string): void {
    const [before] = result.before.emitted as Array<{ pid: number; calls: number }>;
    const [next] = result.after.emitted as Array<{ pid: number; calls: number }>;
    const retired = SPOILING.has(target);
    expect({ deployed: result.deployed, deployError: result.deployError, run: result.run, after: result.after }).toEqual({
      deployed: 200,
      deployError: undefined,
      run: { emitted: [{ done: true }], error: undefined },
      after: { emitted: [retired ? { pid: next?.pid, calls: 1 } : { pid: before!.pid, calls: 2 }, before], error: undefined },
    });
    if (retired) expect(next!.pid).not.toBe(before!.pid);
  }

  it.each(TARGETS)('in run: %s', async (target) => {
    expectContained(await scenario('', `${replaced(target)} this.$emit({ done: true });`), target);
  });

  it.each(TARGETS)('at load: %s', async (target) => {
    expectContained(await scenario(replaced(target), 'this.$emit({ done: true });'), target);
  });

  it.each(READ_AT_LOAD)('describes a component that replaced %s at load as with the original', async (target) => {
    const api = client(server.url, (await server.createUser()).apiKey);
    const saved = await api.post('/v1/components', { component_code: `${replaced(target)}\n${DESCRIBED}` });
    expect({ status: saved.status, name: saved.body.data?.name, props: saved.body.data?.configurable_props }).toEqual({
      status: 200,
      name: 'Described',
      props: DESCRIBED_PROPS,
    });
  });

  it.each(READ_AT_LOAD)("refuses a component that replaced %s at load with the worker's own words for what is wrong", async (target) => {
    const api = client(server.url, (await server.createUser()).apiKey);
    const clash = `${replaced(target)}
      module.exports = { name: "clash", version: "1.0.0", props: { token: "string" }, methods: { token() {} }, async run() {} };`;
    const saved = await api.post('/v1/components', { component_code: clash });
    expect({ status: saved.status, body: saved.body }).toEqual({
      status: 422,
      body: {
        error: `prop "token" and method "token" share a name: this.token would be the method, and the prop's value would be lost`,
        code: 'component_invalid',
        details: [{ reason: 'load_failed', prop: 'token' }],
      },
    });
  });

  it.each(READ_TO_CONFIGURE)('answers options() and reloads of a component that replaced %s at load as with the original', async (target) => {
    const api = client(server.url, (await server.createUser()).apiKey);
    const saved = await api.post('/v1/components', { component_code: `${replaced(target)}\n${CONFIGURED}` });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    const id = saved.body.data.id;
    const ask = async (path: string, body: object) => {
      const res = await api.post(`/v1/components/${id}/props/${path}`, body);
      return { status: res.status, body: res.body };
    };
    const answered = (data: object) => ({ status: 200, body: { data } });
    const none = { options: [], context: null };
    expect({
      repo: await ask('repo/options', { page: 1 }),
      branch: await ask('branch/options', { configured_props: { repo: 'ada' } }),
      size: await ask('size/options', {}),
      width: await ask('width/options', { configured_props: { mode: 'wide' } }),
      broken: await ask('broken/options', {}),
      unknown: await ask('nope/options', {}),
      wide: await ask('reload', { configured_props: { mode: 'wide' } }),
      narrow: await ask('reload', { configured_props: { mode: 'narrow' } }),
      failing: await ask('reload', { configured_props: { mode: 'fail' } }),
    }).toEqual({
      repo: answered({
        options: [
          { label: 'alpha', value: 'alpha' },
          { label: 'Beta', value: 'b' },
          { label: '3', value: 3 },
          { label: '4', value: 4 },
        ],
        context: { nextPageToken: 'p1' },
        errors: [],
      }),
      branch: answered({ options: [{ label: 'ada main', value: 'ada#main' }], context: null, errors: [] }),
      size: answered({
        options: [
          { label: 's', value: 's' },
          { label: 'Large', value: 'l' },
        ],
        context: null,
        errors: [],
      }),
      width: answered({
        options: [
          { label: '1', value: 1 },
          { label: 'Two', value: 2 },
        ],
        context: null,
        errors: [],
      }),
      broken: answered({ ...none, errors: ['TypeError: options() must return an array, or { options, context }, not a string'] }),
      unknown: answered({ ...none, errors: ['"nope" is not a prop of this component'] }),
      wide: answered({
        configurable_props: [...RELOADED_PROPS, { name: 'width', type: 'integer', label: 'Width', options: [1, { label: 'Two', value: 2 }] }],
        errors: [],
      }),
      narrow: answered({ configurable_props: RELOADED_PROPS, errors: [] }),
      failing: answered({ configurable_props: CONFIGURED_PROPS, errors: ['RangeError: no mode fail'] }),
    });
  });

  it('fails a run with its own error when the component uses a replacement it made at load that is broken', async () => {
    const result = await scenario(replaced('Array.prototype.map'), '[1].map((n) => n); this.$emit({ done: true });');
    expect(result.deployed).toBe(200);
    expect(result.run).toMatchObject({ emitted: [], error: { name: 'Error', message: 'replaced Array.prototype.map' } });
    const [before] = result.before.emitted as Array<{ pid: number; calls: number }>;
    expect(result.after).toEqual({ emitted: [{ pid: before!.pid, calls: 2 }, before], error: undefined });
  });

  it('words what it refuses to emit as it would with the original String.prototype.split', async () => {
    const result = await scenario(replaced('String.prototype.split'), 'this.$emit({ f() {} });');
    expect(result.run).toMatchObject({
      emitted: [],
      error: { name: 'TypeError', message: 'the emitted event is not JSON-serialisable: a function at key "f"' },
    });
  });

  it("refuses with the component's own error when its own top-level code uses a broken replacement", async () => {
    const result = await scenario(`${replaced('Array.prototype.map')} [1].map((n) => n);`, 'this.$emit({ done: true });');
    expect({ deployed: result.deployed, deployError: result.deployError }).toEqual({
      deployed: 422,
      deployError: {
        error: 'the component threw while loading: Error: replaced Array.prototype.map',
        code: 'component_invalid',
        details: [{ reason: 'load_failed' }],
      },
    });
    const [before] = result.before.emitted as Array<{ pid: number; calls: number }>;
    expect(result.after).toEqual({ emitted: [{ pid: before!.pid, calls: 2 }, before], error: undefined });
  });

  it("fails the run's worker with an error saying why when a built-in Node itself relies on is replaced", async () => {
    for (const target of NODE_RELIES_ON) {
      const result = await scenario('', `${replaced(target)} this.$emit({ done: true });`);
      expect(result.run?.emitted, target).toEqual([]);
      expect(result.run?.error, target).toMatchObject({
        name: 'WorkerCrashError',
        code: 'worker_crashed',
        // Node's channel serializer iterates an array: the worker's own fault names the replacement. Node's events apply
        // their listeners: its own handling of the error fails, which the server words.
        message: expect.stringContaining(
          target === 'Function.prototype.apply'
            ? "exit code 7: Node's own handling of an uncaught exception failed"
            : `tributary worker fault (the worker's own code failed; component code may have replaced a built-in it relies on): Error: replaced ${target}`,
        ),
      });
      // The next run of the account has a fresh worker.
      expect(result.after.emitted[0], target).toMatchObject({ calls: 1 });
      expect(result.after.error, target).toBeUndefined();
    }
  });

  it("fails the component's own run with its own error when it uses what it replaced", async () => {
    const result = await scenario('', `${replaced('JSON.stringify')} this.$emit({ before: true }); JSON.stringify({});`);
    expect(result.run).toMatchObject({ emitted: [], error: { name: 'Error', message: 'replaced JSON.stringify' } });
    const [before] = result.before.emitted as Array<{ pid: number; calls: number }>;
    expect(result.after).toEqual({ emitted: [{ pid: before!.pid, calls: 2 }, before], error: undefined });
  });
});
