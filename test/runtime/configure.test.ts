// Configure requests in the worker: a prop's options() (own, or through an app's propDefinition, with `this` bound as
// in run) and the full prop list with additionalProps(); every failure comes back as an error, never as a throw.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigureRequest } from '../../src/runtime/index.js';
import { createRuntime, type TestRuntime } from './helpers.js';

let t: TestRuntime;
beforeAll(() => {
  t = createRuntime({ poolSize: 2, loadTimeoutMs: 2000 });
});
afterAll(async () => {
  await t.close();
});

const ACCOUNT = 'acct_configure';
/** The CPU time each answer says its worker used, which the service bills (a call cut off used it too). */
const measured = expect.any(Number);

const COMPONENT = `
const app = {
  type: "app",
  app: "colors",
  propDefinitions: {
    color: {
      type: "string",
      label: "Color",
      async options({ page, prefix }) {
        return [\`\${prefix ?? ""}\${this.$auth.shade ?? "plain"}-\${page}\`, { label: "Base", value: { n: page } }];
      },
    },
  },
  methods: { shade() { return this.$auth.shade; } },
};
module.exports = {
  name: "configurable",
  version: "1.0.0",
  props: {
    app,
    region: { type: "string", options: ["eu", "us"] },
    color: { propDefinition: [app, "color", (c) => ({ prefix: c.region + ":" })] },
    item: {
      type: "string",
      async options({ page, prevContext, query }) {
        const token = prevContext.nextPageToken ?? 0;
        return { options: [this.region + "/" + token + "/" + page + "/" + (query ?? "")], context: { nextPageToken: token + 1 } };
      },
    },
    broken: { type: "string", async options() { throw new Error("no choices today"); } },
    looping: { type: "string", options() { for (;;) {} } },
    odd: { type: "string", async options() { return 42; } },
    plain: "string",
    mode: { type: "string", options: ["simple", "full"], reloadProps: true },
  },
  async additionalProps(previous) {
    if (this.mode !== "full") return {};
    return { depth: { type: "integer", min: 1, max: previous.region ? 5 : 1 }, shelf: { type: "string", async options() { return ["top", this.region]; } } };
  },
  async run() {},
};`;

async function ask(props: Record<string, unknown> = {}, auths: Record<string, Record<string, unknown>> = {}): Promise<ConfigureRequest> {
  return { accountId: ACCOUNT, component: await t.runtime.prepare(COMPONENT), asStep: false, props, auths };
}

const query = (prop: string, extra: { page?: number; prevContext?: Record<string, unknown>; query?: string } = {}) => ({
  prop,
  page: extra.page ?? 0,
  prevContext: extra.prevContext ?? {},
  query: extra.query,
});

describe('prop options', () => {
  it("calls a prop's own options() with this bound to the configured props, paging by page and by prevContext", async () => {
    const request = await ask({ region: 'eu' });
    expect(await t.runtime.propOptions(request, query('item'))).toEqual({ options: ['eu/0/0/'], context: { nextPageToken: 1 }, errors: [], cpuMs: measured });
    expect(await t.runtime.propOptions(request, query('item', { page: 1, prevContext: { nextPageToken: 1 }, query: 'x' }))).toEqual({
      options: ['eu/1/1/x'],
      context: { nextPageToken: 2 },
      errors: [],
      cpuMs: measured,
    });
  });

  it("calls an app's propDefinition options() with the app (and its $auth) as this and the input values as arguments", async () => {
    const result = await t.runtime.propOptions(await ask({ region: 'us' }, { app: { shade: 'dark' } }), query('color', { page: 2 }));
    expect(result).toEqual({ options: ['us:dark-2', { label: 'Base', value: { n: 2 } }], context: null, errors: [], cpuMs: measured });
  });

  it('returns static options as they are', async () => {
    expect(await t.runtime.propOptions(await ask(), query('region'))).toEqual({ options: ['eu', 'us'], context: null, errors: [], cpuMs: measured });
  });

  it('reports throws, bad return values, unknown props, props without options and timeouts as errors', async () => {
    const request = await ask();
    expect((await t.runtime.propOptions(request, query('broken'))).errors).toEqual(['Error: no choices today']);
    expect((await t.runtime.propOptions(request, query('odd'))).errors).toEqual([
      'TypeError: options() must return an array, or { options, context }, not a number',
    ]);
    expect((await t.runtime.propOptions(request, query('nope'))).errors).toEqual(['"nope" is not a prop of this component']);
    expect((await t.runtime.propOptions(request, query('plain'))).errors).toEqual(['prop "plain" has no options']);
    const timedOut = await t.runtime.propOptions({ ...request, timeoutMs: 300 }, query('looping'));
    expect(timedOut).toEqual({ options: [], context: null, errors: ['options() of prop "looping" took longer than 300 ms'], cpuMs: measured });
    // The worker killed for it is replaced: the next question is answered.
    expect((await t.runtime.propOptions(request, query('region'))).errors).toEqual([]);
  });

  it('finds the options of a prop that only additionalProps() declares', async () => {
    expect(await t.runtime.propOptions(await ask({ mode: 'full', region: 'eu' }), query('shelf'))).toEqual({
      options: ['top', 'eu'],
      context: null,
      errors: [],
      cpuMs: measured,
    });
  });
});

describe('reload props', () => {
  it('lists the static props, then those additionalProps() returns for the configured values', async () => {
    const simple = await t.runtime.reloadProps(await ask({ mode: 'simple' }));
    expect(simple.errors).toEqual([]);
    expect(simple.props?.map((p) => p.name)).toEqual(['app', 'region', 'color', 'item', 'broken', 'looping', 'odd', 'plain', 'mode']);
    expect(simple.props?.find((p) => p.name === 'mode')).toMatchObject({ reloadProps: true, options: ['simple', 'full'] });
    const full = await t.runtime.reloadProps(await ask({ mode: 'full' }));
    expect(full.props?.slice(-2)).toEqual([
      { name: 'depth', type: 'integer', min: 1, max: 5 },
      { name: 'shelf', type: 'string', remoteOptions: true },
    ]);
  });

  it('reports an additionalProps() that throws or returns a prop of an unknown type', async () => {
    const code = `module.exports = { name: "x", version: "1.0.0", props: { a: "string" },
      async additionalProps() { if (this.a === "throw") throw new Error("cannot"); return { b: { type: "weird" } }; }, async run() {} };`;
    const base = { accountId: ACCOUNT, component: await t.runtime.prepare(code), asStep: false, auths: {} };
    expect(await t.runtime.reloadProps({ ...base, props: { a: 'throw' } })).toEqual({ props: undefined, errors: ['Error: cannot'], cpuMs: measured });
    expect((await t.runtime.reloadProps({ ...base, props: {} })).errors).toEqual([
      'TypeError: additionalProps() returned a prop that cannot be used: prop "b" has an unknown type: "weird"',
    ]);
  });
});
