// Properties component code adds to Object.prototype (`toJSON`, `then`, a `value` or `get`, setters named as the
// worker's fields) stay where they are until the end of its call; the worker then says it is spoiled, and the account's
// next call gets a new one (worker/pristine.ts). Until then the worker's own objects neither inherit nor meet them: a
// prop's options(), a reload and a run are answered and recorded as with a clean prototype, the component's own and
// the next component's. Through the real API and endpoints.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, request } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

type Api = ReturnType<typeof client>;

/** What each is put on Object.prototype to do, as the first lines of a module or of a run. */
const ADDITIONS: Record<string, string> = {
  // Called on every object JSON.stringify meets: it would rewrite the worker's answers (and measure them short).
  'a toJSON that forges the answer': `Object.prototype.toJSON = function () {
    if (this.t === "options") return { ...this, options: ["forged"] };
    return this;
  };`,
  // Looked up on what an async function resolves with: it would answer in the worker's place, past its limits.
  'a then that forges the answer': `const forged = new WeakSet();
  Object.defineProperty(Object.prototype, "then", { configurable: true, get() {
    if (forged.has(this)) return undefined;
    const answer = (value) => (resolve) => { forged.add(value); resolve(value); };
    if (Object.hasOwn(this, "options") && Object.hasOwn(this, "context")) return answer({ options: Array.from({ length: 10001 }, (_, i) => "o" + i), context: null });
    if (Array.isArray(this) && this[0] && Object.hasOwn(this[0], "name") && Object.hasOwn(this[0], "type")) return answer([{ name: "forged", type: "string" }]);
    if (Object.hasOwn(this, "held")) return answer({ held: [{ name: "forged", type: "string" }] });
  } });`,
  // Inherited by every descriptor written as an ordinary object: one with `get` and a `value` is invalid.
  'a value getter': 'Object.defineProperty(Object.prototype, "value", { configurable: true, get() { return 1; } });',
  'a get of undefined': 'Object.prototype.get = undefined;',
  // Assignments to a field an object does not have yet call them instead.
  'setters named as the fields of a prop, of a component and of an event': `for (const name of ["type", "label", "secret", "optional", "remoteOptions", "reloadProps", "key", "id", "summary"]) {
    Object.defineProperty(Object.prototype, name, { configurable: true, set() {} });
  }`,
};

/** Reports its worker's pid and how many of its calls that worker ran; declares a secret, a db and additional props. */
const BYSTANDER = `module.exports = {
  name: "bystander", version: "1.0.0", key: "bystander-key", dedupe: "unique",
  props: {
    http: "$.interface.http",
    db: "$.service.db",
    token: { type: "string", label: "Token", secret: true, optional: true },
    pick: { type: "string", label: "Pick", optional: true, async options() { return [{ label: "pid", value: process.pid }, String(globalThis.calls = (globalThis.calls ?? 0) + 1)]; } },
    more: { type: "boolean", optional: true, reloadProps: true },
  },
  async additionalProps() { return { extra: { type: "string", label: "Extra", optional: true } }; },
  async run() {
    this.$checkpoint = (this.$checkpoint ?? 0) + 1;
    globalThis.calls = (globalThis.calls ?? 0) + 1;
    this.$emit({ pid: process.pid, calls: globalThis.calls, checkpoint: this.$checkpoint }, { id: "run-" + this.$checkpoint, summary: "ran" });
    // A duplicate, dropped as long as its id reaches the server.
    this.$emit({ duplicate: true }, { id: "run-1" });
  },
};`;

const BYSTANDER_PROPS = [
  { name: 'http', type: '$.interface.http' },
  { name: 'db', type: '$.service.db' },
  { name: 'token', type: 'string', label: 'Token', secret: true, optional: true },
  { name: 'pick', type: 'string', label: 'Pick', optional: true, remoteOptions: true },
  { name: 'more', type: 'boolean', optional: true, reloadProps: true },
];

/** A component whose module adds `addition` to Object.prototype as it loads; its own code uses none of it. */
function hostile(addition: string): string {
  return `${addition}
module.exports = {
  name: "hostile", version: "1.0.0",
  props: { db: "$.service.db", repo: { type: "string", options() { return ["a", "b"]; } }, mode: { type: "string", reloadProps: true } },
  async additionalProps() { return { width: { type: "integer", label: "Width" } }; },
  async run() {},
};`;
}

describe.each(DIALECTS)('additions to Object.prototype on %s', (dialect) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(dialect, { allowPrivateNetwork: false, runTimeout: 6 });
  });
  afterAll(() => server?.destroy());

  async function save(api: Api, code: string): Promise<string> {
    const saved = await api.post('/v1/components', { component_code: code });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    return saved.body.data.id;
  }

  async function ask(api: Api, id: string, path: string) {
    const res = await api.post(`/v1/components/${id}/props/${path}`, { configured_props: { mode: 'x' } });
    return { status: res.status, body: res.body };
  }

  it.each(Object.keys(ADDITIONS))("answers options() and reloads as with a clean prototype, and the account's next component's, after %s", async (what) => {
    const api = client(server.url, (await server.createUser()).apiKey);
    const bystander = await save(api, BYSTANDER);
    const pid = (await ask(api, bystander, 'pick/options')).body.data.options[0].value;
    const id = await save(api, hostile(ADDITIONS[what]!));
    const own = { options: await ask(api, id, 'repo/options'), reload: await ask(api, id, 'reload') };
    // Described after the addition: a component saved later is described in the same worker.
    const later = await save(api, BYSTANDER.replace('bystander-key', 'later-key'));
    const found = (await api.get('/v1/components/later-key')).body.data;
    const next = { options: await ask(api, bystander, 'pick/options'), reload: await ask(api, bystander, 'reload') };
    expect({ own, next, later: { id: found?.id, props: found?.configurable_props } }).toEqual({
      own: {
        options: {
          status: 200,
          body: {
            data: {
              options: ['a', 'b'],
              context: null,
              errors: [],
            },
          },
        },
        reload: {
          status: 200,
          body: {
            data: {
              configurable_props: [
                { name: 'db', type: '$.service.db' },
                { name: 'repo', type: 'string', remoteOptions: true },
                { name: 'mode', type: 'string', reloadProps: true },
                { name: 'width', type: 'integer', label: 'Width' },
              ],
              errors: [],
            },
          },
        },
      },
      next: {
        // A new worker (the addition spoiled the one it was made in; worker/pristine.ts): its count starts again.
        options: {
          status: 200,
          body: {
            data: {
              options: [
                { label: 'pid', value: next.options.body.data?.options[0].value },
                { label: '1', value: '1' },
              ],
              context: null,
              errors: [],
            },
          },
        },
        reload: {
          status: 200,
          body: { data: { configurable_props: [...BYSTANDER_PROPS, { name: 'extra', type: 'string', label: 'Extra', optional: true }], errors: [] } },
        },
      },
      // Found by the key it declares.
      later: { id: later, props: BYSTANDER_PROPS },
    });
    expect(next.options.body.data.options[0].value).not.toBe(pid);
  });

  async function deploy(api: Api, code: string): Promise<{ id: string; endpoint: string }> {
    const created = await api.post('/v1/sources', { component_code: code });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    return { id: created.body.data.id, endpoint: created.body.data.configured_props.http.endpoint_url };
  }

  /** Triggers a source once and waits for what its run left: its events or its error. */
  async function runOnce(api: Api, source: { id: string; endpoint: string }, seen: number) {
    expect((await request('POST', source.endpoint, { body: {} })).status).toBe(200);
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
    return { emitted: settled.emitted, error: settled.errors[0]?.event.error };
  }

  // Not a toJSON: a run's outcome is still turned into text by JSON.stringify, which calls it (the vehicle the tests of the
  // server's own checks use to forge a report: hostile.test.ts, data-stores.test.ts). The server checks every limit of a
  // reported call again (reported-limits.ts), so a rewritten outcome passes none of them.
  const inRun = Object.keys(ADDITIONS).filter((what) => !what.includes('toJSON'));

  it.each(inRun)("records a failed run as failed, and the account's next run as it ran, after %s in run", async (what) => {
    const api = client(server.url, (await server.createUser()).apiKey);
    const bystander = await deploy(api, BYSTANDER.replace('"bystander-key"', 'undefined'));
    const before = (await runOnce(api, bystander, 0)).emitted[0] as { pid: number };
    const source = await deploy(
      api,
      `module.exports = { name: "failing", version: "1.0.0", props: { http: "$.interface.http" },
        async run() { ${ADDITIONS[what]} throw new TypeError("mine"); } };`,
    );
    const failed = await runOnce(api, source, 0);
    const next = await runOnce(api, bystander, 1);
    expect({ failed, next: next.emitted }).toEqual({
      failed: { emitted: [], error: { name: 'TypeError', message: 'mine', code: 'TypeError', stack: expect.stringContaining('TypeError: mine') } },
      // A new worker: the failed run spoiled the one it ran in.
      next: [
        { pid: next.emitted[0]?.pid, calls: 1, checkpoint: 2 },
        { pid: before.pid, calls: 1, checkpoint: 1 },
      ],
    });
    expect(next.emitted[0].pid).not.toBe(before.pid);
  });
});
