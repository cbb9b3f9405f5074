// What one component adds to the built-in prototypes the worker shares with its account's other components stays out
// of their calls: the worker says so at the end of the call that did it, and the server gives the next call a new worker.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, request } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

type Api = ReturnType<typeof client>;

/** Forges every run outcome serialized after it: a success emitting {forged: true}, whatever the run did. */
const FORGED_OUTCOMES = `Object.prototype.toJSON = function () {
  if (this.outcome) return { ...this, outcome: { ...this.outcome, error: undefined, emits: [{ event: { forged: true } }] } };
  return this;
};
throw new TypeError("mine");`;

/** Swallows the db the worker assigns to a prop named `db` and answers a fake one instead. */
const SETTER_LIKE_PROP = `Object.defineProperty(Object.prototype, "db", {
  get() { return { get() { return "stolen"; }, set() {} }; }, set() {}, configurable: true });
this.$emit({ polluted: "db" });`;

/** Makes every object a thenable: whatever awaits one gets 42. */
const THENABLE_OBJECTS = `Object.defineProperty(Object.prototype, "then", {
  value(resolve) { resolve(42); }, writable: true, configurable: true });
this.$emit({ polluted: "then" });`;

describe.each(DIALECTS)('built-ins one component changes, on %s', (dialect) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(dialect, { allowPrivateNetwork: false, runTimeout: 6 });
  });
  afterAll(() => server?.destroy());

  async function deploy(api: Api, code: string, props: Record<string, unknown> = {}): Promise<{ id: string; endpoint: string }> {
    const created = await api.post('/v1/sources', { component_code: code, configured_props: props });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    return { id: created.body.data.id, endpoint: created.body.data.configured_props.http.endpoint_url };
  }

  /** Triggers a source once; answers what its run emitted and the error it recorded, once it has recorded more than `seen`. */
  async function runOnce(api: Api, source: { id: string; endpoint: string }, seen: number) {
    const response = await request('POST', source.endpoint, { body: {} });
    expect(response.status).toBe(200);
    const settled = await waitFor(
      async () => {
        const [events, errors] = await Promise.all([
          api.get(`/v1/sources/${source.id}/event_summaries?expand=event`),
          api.get(`/v1/sources/${source.id}/$errors/event_summaries?expand=event`),
        ]);
        return {
          emitted: events.body.data.map((e: { event: unknown }) => e.event),
          errors: errors.body.data.map((e: { event: { error: unknown } }) => e.event.error),
        };
      },
      (r) => r.emitted.length + r.errors.length > seen,
      { what: 'the run to finish' },
    );
    return settled;
  }

  /**
   * A fresh account with a bystander source, run once: it emits how many runs its db prop (which the worker assigns)
   * has counted, awaited as an object, with its worker's pid and a per-worker run counter. Then a source of the same
   * account whose run is `body`, then the bystander again.
   */
  async function scenario(body: string, topLevel = '') {
    const api = client(server.url, (await server.createUser()).apiKey);
    const bystander = await deploy(
      api,
      `module.exports = { name: "bystander", version: "1.0.0",
        props: { http: { type: "$.interface.http" }, db: "$.service.db" },
        async run() {
          globalThis.calls = (globalThis.calls ?? 0) + 1;
          const runs = this.db.get("runs") ?? 0;
          this.db.set("runs", runs + 1);
          const counted = await Promise.resolve({ runs });
          this.$emit({ ...counted, pid: process.pid, calls: globalThis.calls });
        } };`,
    );
    const before = (await runOnce(api, bystander, 0)).emitted[0] as { runs: number; pid: number; calls: number };
    expect(before).toEqual({ runs: 0, pid: expect.any(Number), calls: 1 });
    const polluter = await deploy(
      api,
      `${topLevel}\nmodule.exports = { name: "polluter", version: "1.0.0", props: { http: { type: "$.interface.http" } }, async run() { ${body} } };`,
    );
    const own = await runOnce(api, polluter, 0);
    const after = await runOnce(api, bystander, 1);
    const logs = await api.get(`/v1/sources/${polluter.id}/$logs/event_summaries?expand=event`);
    const warnings = logs.body.data.map((e: { event: { k: string; msg: string } }) => e.event).filter((line: { k: string }) => line.k === 'warn');
    return { own, after, before, warnings };
  }

  /** The line a call's logs get when it ends with the shared built-ins changed. */
  const changedWarning = (change: string) => ({
    k: 'warn',
    ts: expect.any(Number),
    msg: `tributary: built-ins the account's components share were changed by this call or code before it (${change}), so the worker that ran it is replaced and the account's next call starts a new one; code that changes them as its module loads starts a new worker for every call`,
  });

  it.each([
    ['a toJSON on Object.prototype that forges outcomes', FORGED_OUTCOMES, { emitted: [{ forged: true }], errors: [] }],
    ['a setter on Object.prototype named like the next component’s prop', SETTER_LIKE_PROP, { emitted: [{ polluted: 'db' }], errors: [] }],
    ['a then on Object.prototype', THENABLE_OBJECTS, { emitted: [{ polluted: 'then' }], errors: [] }],
  ])('%s changes only its own run: the account’s next run gets a new worker and runs as if it never happened', async (_what, body, ownRun) => {
    const { own, after, before } = await scenario(body);
    // The polluting run may fool its own record; nobody else's.
    expect(own).toEqual(ownRun);
    expect(after.errors).toEqual([]);
    expect(after.emitted[0]).toEqual({ runs: 1, pid: expect.any(Number), calls: 1 });
    expect(after.emitted[0].pid).not.toBe(before.pid);
  });

  it.each([
    ['a method added to Array.prototype', 'Array.prototype.last = function () { return this[this.length - 1]; };', 'Array.prototype gained "last"'],
    ['a stack formatter on Error', 'Error.prepareStackTrace = () => "forged";', `Error's "prepareStackTrace" was redefined`],
    ['a symbol on Array', 'Array[Symbol.for("marker")] = 1;', 'Array gained [Symbol(marker)]'],
    ['Object.prototype.valueOf replaced', 'Object.prototype.valueOf = function () { return 1; };', `Object.prototype's "valueOf" was redefined`],
  ])('%s tells the run that made it, in its logs, why the next run gets a new worker', async (_what, body, change) => {
    const { after, before, warnings } = await scenario(`${body} this.$emit({ polluted: true });`);
    expect(warnings).toEqual([changedWarning(change)]);
    expect(after.emitted[0]).toEqual({ runs: 1, pid: expect.any(Number), calls: 1 });
    expect(after.emitted[0].pid).not.toBe(before.pid);
  });

  it('keeps the worker for the next run when a run changed no built-in', async () => {
    const { after, before, warnings } = await scenario('this.$emit({ polluted: false });');
    expect(after).toEqual({ emitted: [{ runs: 1, pid: before.pid, calls: 2 }, before], errors: [] });
    expect(warnings).toEqual([]);
  });

  it('keeps the worker when a module polyfills static functions of the constructors as it loads, and when a run does', async () => {
    const polyfills = `if (!Promise.withResolversShim) Promise.withResolversShim = function () {
        let resolve; const promise = new Promise((r) => { resolve = r; }); return { promise, resolve }; };
      Object.defineProperty(Object, "groupByShim", { value: (items, key) => items.map(key), writable: true, configurable: true });`;
    const { own, after, before, warnings } = await scenario(
      'Array.fromAsyncShim = (items) => Promise.all(items); this.$emit({ grouped: Object.groupByShim([1, 2], String), resolves: typeof Promise.withResolversShim().resolve });',
      polyfills,
    );
    expect(own).toEqual({ emitted: [{ grouped: ['1', '2'], resolves: 'function' }], errors: [] });
    expect(warnings).toEqual([]);
    expect(after).toEqual({ emitted: [{ runs: 1, pid: before.pid, calls: 2 }, before], errors: [] });
  });
});
