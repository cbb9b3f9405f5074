// What options() and additionalProps() are told back when they fail in odd ways: an error whose fields throw when read,
// a sparse array of choices, a non-finite number, a fetch that fails or a path of the server's in a message. Each is
// an entry of `errors`, worded as a run's $errors event words it, and the worker that ran the call keeps serving.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';

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
  },
  async additionalProps() {
    if (this.mode === "unreadable") throw unreadable("message");
    return {};
  },
  async run() {},
};`;

describe.each(DIALECTS)('options() and additionalProps() failures on %s', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  let componentId: string;

  beforeAll(async () => {
    server = await startTestServer(dialect);
    api = client(server.url, (await server.createUser()).apiKey);
    const saved = await api.post('/v1/components', { component_code: COMPONENT });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    componentId = saved.body.data.id;
  });
  afterAll(async () => {
    await server?.destroy();
  });

  const options = (prop: string) => api.post(`/v1/components/${componentId}/props/${prop}/options`, {});

  it('answers an error that throws when read as such, instead of ending the worker with a "worker fault"', async () => {
    for (const prop of ['badName', 'badMessage', 'proxy']) {
      const res = await options(prop);
      expect(res.status, prop).toBe(200);
      const expected = prop === 'proxy' ? 'the component threw a value that throws when read' : 'Error: the component threw a value that throws when read';
      expect(res.body.data, prop).toEqual({ options: [], context: null, errors: [expected] });
    }
    const reload = await api.post(`/v1/components/${componentId}/props/reload`, { configured_props: { mode: 'unreadable' } });
    expect(reload.status).toBe(200);
    expect(reload.body.data.errors).toEqual(['Error: the component threw a value that throws when read']);
    expect((await options('fine')).body.data).toEqual({ options: ['ok'], context: null, errors: [] });
  });

  it('names the hole of a sparse array of choices and a number that is not finite, as for any choice of the wrong shape', async () => {
    expect((await options('sparse')).body.data).toEqual({
      options: [],
      context: null,
      errors: ['TypeError: option 1 must be a string, a number, a boolean or { label, value }, not undefined'],
    });
    expect((await options('notFinite')).body.data).toEqual({
      options: [],
      context: null,
      errors: ['TypeError: option 1 must be a string, a finite number, a boolean or { label, value }, not NaN'],
    });
  });

  it("says why a fetch failed and keeps the server's paths out, as a run's error does", async () => {
    expect((await options('fetched')).body.data.errors).toEqual(['TypeError: fetch failed: bad port']);
    const [message] = (await options('path')).body.data.errors;
    expect(message).toMatch(/^Error: at .*x\.js$/);
    expect(message).not.toContain(server.dataDir);
  });
});
