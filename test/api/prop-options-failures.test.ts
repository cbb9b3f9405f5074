// What options() and additionalProps() are told back when they fail in odd ways: an error whose fields throw when read,
// a fetch that fails or a path of the server's in a message. Each is an entry of `errors`, worded as a run's $errors
// event words it, and the worker that ran the call keeps serving. Entries of the list that are no choice (null, a sparse
// array's hole, NaN, an object without `value`) are left out, the others kept, and `errors` says how many and why.
import { describe, expect, it } from 'vitest';
import { componentServer } from '../helpers/prop-configuration.js';
import { DIALECTS } from '../helpers/server.js';

/** Each prop's options() fails in its own way; additionalProps() throws what `mode` says. */
const COMPONENT = `
const unreadable = (field) => {
  const error = new Error("hidden");
  Object.defineProperty(error, field, { get() { throw new Error("read"); } });
  return error;
};
module.exports = {
  name: "odd failures",
  version: "1.0.0",
  props: {
    mode: { type: "string", optional: true, reloadProps: true },
    badName: { type: "string", optional: true, async options() { throw unreadable("name"); } },
    badMessage: { type: "string", optional: true, async options() { throw unreadable("message"); } },
    proxy: { type: "string", optional: true, async options() {
      throw new Proxy({}, { get() { throw new Error("get"); }, getPrototypeOf() { throw new Error("proto"); } });
    } },
    sparse: { type: "string", optional: true, async options() { return ["a", , "c"]; } },
    notFinite: { type: "string", optional: true, async options() { return ["a", Number.NaN]; } },
    fetched: { type: "string", optional: true, async options() { await fetch("http://127.0.0.1:1/"); return []; } },
    path: { type: "string", optional: true, async options() { throw new Error("at " + __dirname + "/x.js"); } },
    fine: { type: "string", optional: true, async options() { return ["ok"]; } },
    withNull: { type: "string", optional: true, async options() {
      const items = [{ id: "a", name: "Alpha" }, null, { id: "b", name: "Beta" }, undefined];
      return items.map((item) => item && { label: item.name, value: item.id });
    } },
    noValue: { type: "string", optional: true, async options() { return [{ label: "no value" }, "kept", { label: "f", value: () => 1 }]; } },
    badValue: { type: "string", optional: true, async options() { return ["kept", { label: "f", value: { f() {} } }]; } },
    mixed: { type: "string", optional: true, async options() { return { options: [null, { label: "obj", value: { id: 1 } }, "ok"], context: { nextPageToken: "2" } }; } },
    onlyNull: { type: "string", optional: true, async options() { return [null]; } },
    notAList: { type: "string", optional: true, async options() { return null; } },
  },
  async additionalProps() {
    if (this.mode === "unreadable") throw unreadable("message");
    return {};
  },
  async run() {},
};`;

describe.each(DIALECTS)('options() and additionalProps() failures on %s', (dialect) => {
  const t = componentServer(dialect, COMPONENT);
  const { options, reload } = t;

  it('answers an error that throws when read as such, instead of ending the worker with a "worker fault"', async () => {
    for (const prop of ['badName', 'badMessage', 'proxy']) {
      const res = await options(prop);
      expect(res.status, prop).toBe(200);
      const expected = prop === 'proxy' ? 'the component threw a value that throws when read' : 'Error: the component threw a value that throws when read';
      expect(res.body.data, prop).toEqual({ options: [], context: null, errors: [expected] });
    }
    const reloaded = await reload({ configured_props: { mode: 'unreadable' } });
    expect(reloaded.status).toBe(200);
    expect(reloaded.body.data.errors).toEqual(['Error: the component threw a value that throws when read']);
    expect((await options('fine')).body.data).toEqual({ options: ['ok'], context: null, errors: [] });
  });

  it('leaves out the hole of a sparse array and a number that is not finite, keeps the other choices, and says so', async () => {
    expect((await options('sparse')).body.data).toEqual({
      options: ['a', 'c'],
      context: null,
      errors: ['1 of the choices options() gave was left out: option 1 must be a string, a finite number, a boolean or { label, value }, not undefined'],
    });
    expect((await options('notFinite')).body.data).toEqual({
      options: ['a'],
      context: null,
      errors: ['1 of the choices options() gave was left out: option 1 must be a string, a finite number, a boolean or { label, value }, not NaN'],
    });
  });

  it('leaves out null, undefined and objects without a JSON value among the choices, and offers the rest', async () => {
    const withNull = await options('withNull');
    expect(withNull.status).toBe(200);
    expect(withNull.body.data).toEqual({
      options: [
        { label: 'Alpha', value: 'a' },
        { label: 'Beta', value: 'b' },
      ],
      context: null,
      errors: ['2 of the choices options() gave were left out: option 1 must be a string, a finite number, a boolean or { label, value }, not null'],
    });
    // `{ label }` has no value, and a function is no JSON: the first of them is named.
    expect((await options('noValue')).body.data).toEqual({
      options: ['kept'],
      context: null,
      errors: [
        '2 of the choices options() gave were left out: option 0 must be a string, a finite number, a boolean or { label, value }, not an object without a value',
      ],
    });
    expect((await options('badValue')).body.data).toEqual({
      options: ['kept'],
      context: null,
      errors: ['1 of the choices options() gave was left out: the value of option 1 is not JSON-serialisable: a function at key "f"'],
    });
    expect((await options('mixed')).body.data).toEqual({
      options: ['ok'],
      context: { nextPageToken: '2' },
      errors: [
        '1 of the choices options() gave was left out: option 0 must be a string, a finite number, a boolean or { label, value }, not null',
        '1 of the choices options() gave was left out: a value is not what a prop of type string takes (must be a string, got an object); a deploy refuses such a value',
      ],
    });
    expect((await options('onlyNull')).body.data).toEqual({
      options: [],
      context: null,
      errors: ['1 of the choices options() gave was left out: option 0 must be a string, a finite number, a boolean or { label, value }, not null'],
    });
    // A return value that is no list at all is still refused whole.
    expect((await options('notAList')).body.data).toEqual({
      options: [],
      context: null,
      errors: ['TypeError: options() must return an array, or { options, context }, not null'],
    });
  });

  it("says why a fetch failed and keeps the server's paths out, as a run's error does", async () => {
    expect((await options('fetched')).body.data.errors).toEqual(['TypeError: fetch failed: bad port']);
    const [message] = (await options('path')).body.data.errors;
    expect(message).toMatch(/^Error: at .*x\.js$/);
    expect(message).not.toContain(t.server.dataDir);
  });
});
