// What the worker does for a component's data stores, its respond() and its call's outcome uses the built-ins as they
// were before component code loaded: a component that replaced one (or hooked Object.prototype) gets its writes, its
// size limits and its failure recorded as with the originals, and the account's next run finds the same worker (a new
// one after an addition to Object.prototype, which spoils the worker: worker/pristine.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, request } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

type Api = ReturnType<typeof client>;

/** `target` replaced by a function that throws an error naming it. */
function replaced(target: string): string {
  return `${target} = function () { throw new Error(${JSON.stringify(`replaced ${target}`)}); };`;
}

/** Built-ins the data store methods call (get, set with a ttl, setTtl, has, delete, clear, keys, entries, for await). */
const STORE_TARGETS = [
  'JSON.stringify',
  'Map.prototype.get',
  'Map.prototype.set',
  'Map.prototype.has',
  'Map.prototype.delete',
  'Map.prototype.clear',
  'Map.prototype.keys',
  'Map.prototype[Symbol.iterator]',
  'Array.prototype.filter',
  'Array.prototype.map',
  'Array.prototype.reduce',
  'Array.prototype.push',
  'Array.isArray',
  'Number.isFinite',
  'structuredClone',
  'Buffer.byteLength',
  'String.prototype.trim',
  'RegExp.prototype.test',
];

/** Uses every method of its store after `prelude`, with none of STORE_TARGETS in its own code, and emits what it saw. */
function storeBody(prelude: string): string {
  return `${prelude}
    const s = this.store;
    await s.set("x", 0);
    await s.clear();
    await s.set("a", { n: 1 });
    await s.set("b", "two", { ttl: 60 });
    const ttl = await s.setTtl("a", 120);
    const deleted = await s.delete("b");
    await s.set("c", [3]);
    const iterated = [];
    for await (const entry of s) iterated[iterated.length] = entry;
    this.$emit({ ttl, deleted, keys: await s.keys(), entries: await s.entries(), a: await s.get("a"), b: await s.has("b"), iterated });`;
}

const STORE_SEEN = {
  ttl: true,
  deleted: true,
  keys: ['a', 'c'],
  entries: [
    ['a', { n: 1 }],
    ['c', [3]],
  ],
  a: { n: 1 },
  b: false,
  iterated: [
    ['a', { n: 1 }],
    ['c', [3]],
  ],
};

describe.each(DIALECTS)('replaced built-ins and effects on %s', (dialect) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(dialect, { allowPrivateNetwork: false, runTimeout: 6 });
  });
  afterAll(() => server?.destroy());

  async function deploy(api: Api, code: string): Promise<{ id: string; endpoint: string }> {
    const created = await api.post('/v1/sources', { component_code: code, configured_props: { store: 'shared' } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    return { id: created.body.data.id, endpoint: created.body.data.configured_props.http.endpoint_url };
  }

  /** Triggers a source once; answers the HTTP response and what the run left once it has left something. */
  async function runOnce(api: Api, source: { id: string; endpoint: string }, seen: number) {
    const response = await request('POST', source.endpoint, { body: {} });
    const settled = await waitFor(
      async () => {
        const [events, errors] = await Promise.all([
          api.get(`/v1/sources/${source.id}/event_summaries?expand=event`),
          api.get(`/v1/sources/${source.id}/$errors/event_summaries?expand=event`),
        ]);
        return { emitted: events.body.data.map((e: { event: unknown }) => e.event), errors: errors.body.data };
      },
      (r) => r.emitted.length + r.errors.length > seen,
      { what: 'the run to finish' },
    );
    return { status: response.status, body: response.body, emitted: settled.emitted, error: settled.errors[0]?.event.error };
  }

  /**
   * A fresh account with a bystander source that reports its worker's pid and a per-worker counter, and a source
   * whose run is `body` (with a data_store prop `store` and an HTTP prop answering as `customResponse` says). Returns
   * the second source's run, the store's record "a" after it, and whether the bystander's next run found the same worker.
   */
  async function scenario(body: string, customResponse = false) {
    const api = client(server.url, (await server.createUser()).apiKey);
    const props = `{ http: { type: "$.interface.http", customResponse: ${customResponse} }, store: { type: "data_store" } }`;
    const bystander = await deploy(
      api,
      `module.exports = { name: "bystander", version: "1.0.0", props: ${props},
        async run() { globalThis.calls = (globalThis.calls ?? 0) + 1; this.$emit({ pid: process.pid, calls: globalThis.calls }); } };`,
    );
    const before = (await runOnce(api, bystander, 0)).emitted[0] as { pid: number; calls: number };
    const hostile = await deploy(api, `module.exports = { name: "hostile", version: "1.0.0", props: ${props}, async run(event) { ${body} } };`);
    const run = await runOnce(api, hostile, 0);
    const record = await api.get('/v1/data_stores/shared/records?key=a');
    const after = await runOnce(api, bystander, 1);
    const next = after.emitted[0] as { pid: number; calls: number } | undefined;
    return {
      run,
      record: record.body,
      sameWorker: next?.pid === before.pid && next?.calls === 2,
      // What an addition to Object.prototype leads to (worker/pristine.ts): the bystander ran, first in a new worker.
      newWorker: next !== undefined && next.pid !== before.pid && next.calls === 1,
    };
  }

  it.each(STORE_TARGETS)('data store methods work as with the originals after %s was replaced in run', async (target) => {
    const result = await scenario(storeBody(replaced(target)));
    expect({ emitted: result.run.emitted, error: result.run.error, sameWorker: result.sameWorker }).toEqual({
      emitted: [STORE_SEEN],
      error: undefined,
      sameWorker: true,
    });
  });

  it.each([
    ['a BigInt, which no JSON holds', '10n'],
    ['undefined, which JSON leaves out', 'undefined'],
  ])('keeps the value given to set() when a replaced Map.prototype.set turns what it records into %s', async (_what, value) => {
    const hijack = `const set = Map.prototype.set;
      Map.prototype.set = function (key, write) { if (write && write.op === "set") write.value = ${value}; return set.call(this, key, write); };
      await this.store.set("a", 1); Map.prototype.set = set; this.$emit({ a: await this.store.get("a") });`;
    const result = await scenario(hijack);
    expect({ emitted: result.run.emitted, error: result.run.error, record: result.record, sameWorker: result.sameWorker }).toEqual({
      emitted: [{ a: 1 }],
      error: undefined,
      record: { data: { key: 'a', value: 1 } },
      sameWorker: true,
    });
  });

  it.each([
    ['Buffer.byteLength', 'Buffer.byteLength = () => 0;', '"x".repeat(9 * 1024 * 1024)'],
    [
      "a Buffer's byteLength",
      // Pinned before component code loads (harden.ts), so the redefinition throws; were it not, the size would still be measured right.
      'try { Object.defineProperty(Object.getPrototypeOf(Uint8Array.prototype), "byteLength", { get() { return 0; } }); } catch {}',
      'Buffer.alloc(9 * 1024 * 1024)',
    ],
  ])('refuses a respond() body past 8 MB that %s was replaced to hide', async (_what, prelude, body) => {
    const result = await scenario(`${prelude} this.http.respond({ status: 200, body: ${body} }); this.$emit({ done: true });`, true);
    const message = 'respond(): the body is 9437184 bytes; it may be at most 8388608 bytes';
    expect({ status: result.run.status, body: result.run.body, emitted: result.run.emitted, error: result.run.error, sameWorker: result.sameWorker }).toEqual({
      status: 500,
      body: { error: `the source failed before responding: ${message}`, code: 'run_failed' },
      emitted: [],
      error: { name: 'RangeError', message, code: 'RangeError', stack: expect.stringContaining(`RangeError: ${message}`) },
      sameWorker: true,
    });
  });

  it("keeps a Buffer's byteLength from being redefined (the channel's writes read it): the run that tries fails alone", async () => {
    const result = await scenario(
      'Object.defineProperty(Object.getPrototypeOf(Uint8Array.prototype), "byteLength", { get() { return 0; } }); this.http.respond({ status: 200, body: Buffer.alloc(9 * 1024 * 1024) });',
      true,
    );
    const message = 'Cannot redefine property: byteLength';
    expect({ status: result.run.status, body: result.run.body, emitted: result.run.emitted, error: result.run.error, sameWorker: result.sameWorker }).toEqual({
      status: 500,
      body: { error: `the source failed before responding: ${message}`, code: 'run_failed' },
      emitted: [],
      error: { name: 'TypeError', message, code: 'TypeError', stack: expect.stringContaining(`TypeError: ${message}`) },
      sameWorker: true,
    });
  });

  it.each([
    'String.prototype.split',
    'Array.prototype.filter',
    'Array.prototype.join',
    'Array.prototype.some',
    'String.prototype.includes',
    'RegExp.prototype.test',
  ])("reports a failed run's stack, without the worker's frames, after %s was replaced", async (target) => {
    const result = await scenario(`${replaced(target)} throw new RangeError("mine");`);
    expect({ error: result.run.error, sameWorker: result.sameWorker }).toEqual({
      error: {
        name: 'RangeError',
        message: 'mine',
        code: 'RangeError',
        stack: expect.stringMatching(/^RangeError: mine\n {4}at Object\.run \(component\.js:\d+:\d+\)/),
      },
      sameWorker: true,
    });
    expect(result.run.error.stack).not.toContain('runtime/worker');
  });

  it('records a failure as one when Object.prototype has setters named as the outcome fields', async () => {
    const hooks = ['error', 'code', 'step', 'dbRemovals', 'dataStores']
      .map((name) => `Object.defineProperty(Object.prototype, "${name}", { __proto__: null, set() {}, configurable: true });`)
      .join(' ');
    const result = await scenario(
      `${hooks} const error = new TypeError("mine"); Object.defineProperty(error, "code", { __proto__: null, value: "E_MINE", enumerable: true }); throw error;`,
    );
    expect({ emitted: result.run.emitted, error: result.run.error, newWorker: result.newWorker }).toEqual({
      emitted: [],
      error: { name: 'TypeError', message: 'mine', code: 'E_MINE', stack: expect.stringContaining('TypeError: mine') },
      newWorker: true,
    });
  });

  it('commits data store writes and ttls when Object.prototype has setters named as the write fields', async () => {
    const hooks = ['value', 'ttlSeconds', 'total']
      .map((name) => `Object.defineProperty(Object.prototype, "${name}", { __proto__: null, set() {}, get() { return -1e9; }, configurable: true });`)
      .join(' ');
    const result = await scenario(`${hooks} await this.store.set("a", "x".repeat(100), { ttl: 60 }); this.$emit({ done: true });`);
    expect({ emitted: result.run.emitted, error: result.run.error, record: result.record, newWorker: result.newWorker }).toEqual({
      emitted: [{ done: true }],
      error: undefined,
      // With an expiry: the ttl was committed too.
      record: { data: { key: 'a', value: 'x'.repeat(100), expires_at: expect.any(Number), expires_at_ms: expect.any(Number) } },
      newWorker: true,
    });
  });
});
