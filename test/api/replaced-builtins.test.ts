// A component that replaces a built-in (JSON.stringify, Array.prototype.push, Promise.prototype.then…) breaks only its
// own code: the worker's protocol keeps working, so its run is recorded as any other, and the next run of another
// source of the same account, in the same worker, still works. Through the real API and endpoints.
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
 * Built-ins that reading a component's export (its name, props, methods) calls: replaced by the module as it loads,
 * the deploy is refused with the component's own error, and the worker goes on.
 */
const READ_AT_LOAD = [
  'Array.prototype.map',
  'Object.keys',
  'Object.entries',
  'Set.prototype.has',
  'Set.prototype.add',
  'RegExp.prototype.test',
  'RegExp.prototype.exec',
  'Array.isArray',
];

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

  /** The hostile run did what it asked and the bystander's next run found the same worker, its state intact. */
  function expectContained(result: Awaited<ReturnType<typeof scenario>>): void {
    const [before] = result.before.emitted as Array<{ pid: number; calls: number }>;
    expect({ deployed: result.deployed, deployError: result.deployError, run: result.run, after: result.after }).toEqual({
      deployed: 200,
      deployError: undefined,
      run: { emitted: [{ done: true }], error: undefined },
      after: { emitted: [{ pid: before!.pid, calls: 2 }, before], error: undefined },
    });
  }

  it.each(TARGETS)('in run: %s', async (target) => {
    expectContained(await scenario('', `${replaced(target)} this.$emit({ done: true });`));
  });

  it.each(TARGETS.filter((target) => !READ_AT_LOAD.includes(target)))('at load: %s', async (target) => {
    expectContained(await scenario(replaced(target), 'this.$emit({ done: true });'));
  });

  it.each(READ_AT_LOAD)('at load, refused with its own error: %s', async (target) => {
    const result = await scenario(replaced(target), 'this.$emit({ done: true });');
    const [before] = result.before.emitted as Array<{ pid: number; calls: number }>;
    expect(result.deployed).toBe(422);
    expect(result.deployError).toMatchObject({ code: 'component_invalid', error: expect.stringContaining(`Error: replaced ${target}`) });
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
