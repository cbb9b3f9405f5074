// Prop configuration over the API: POST /v1/components/{id}/props/{prop}/options runs a prop's options() in the
// account's sandbox (paging by page and by prevContext, through an app's propDefinition), errors come back as data;
// POST /v1/components/{id}/props/reload lists what additionalProps() adds; deploys report every invalid prop at once.
import { describe, expect, it } from 'vitest';
import { client } from '../helpers/client.js';
import { recordPath } from '../helpers/data-store-sources.js';
import { componentServer } from '../helpers/prop-configuration.js';
import { DIALECTS } from '../helpers/server.js';

/** Repositories in pages of two by `page`, and by a cursor in `prevContext`; an app whose propDefinition has options. */
const COMPONENT = `
const app = {
  type: "app",
  app: "forge",
  propDefinitions: {
    branch: {
      type: "string",
      label: "Branch",
      async options({ page, repo }) {
        if (page > 0) return [];
        return [{ label: repo + " main", value: repo + "#main" }, { label: repo + " dev", value: repo + "#dev" }];
      },
    },
  },
};
const REPOS = ["alpha", "beta", "gamma", "delta", "epsilon"];
module.exports = {
  name: "repo picker",
  version: "1.0.0",
  props: {
    app,
    owner: { type: "string" },
    repo: {
      type: "string",
      async options({ page }) { return REPOS.slice(page * 2, page * 2 + 2).map((r) => this.owner + "/" + r); },
    },
    cursorRepo: {
      type: "string",
      async options({ prevContext }) {
        const at = prevContext.nextPageToken ? Number(prevContext.nextPageToken) : 0;
        const next = at + 2 < REPOS.length ? String(at + 2) : undefined;
        return { options: REPOS.slice(at, at + 2), context: { nextPageToken: next } };
      },
    },
    branch: { propDefinition: [app, "branch", (c) => ({ repo: c.repo })] },
    size: { type: "string", options: ["s", "m", { label: "Large", value: "l" }] },
    count: { type: "integer", min: 1, max: 5, optional: true },
    throwing: { type: "string", optional: true, async options() { throw new TypeError("the forge is down"); } },
    slow: { type: "string", optional: true, async options() { await new Promise(() => {}); } },
    plain: { type: "string", optional: true },
    extended: { type: "boolean", optional: true, reloadProps: true },
  },
  async additionalProps() {
    return this.extended ? { labels: { type: "string[]", label: "Labels", options: ["bug", "idea"] }, note: { type: "string", optional: true } } : {};
  },
  async run() {},
};`;

describe.each(DIALECTS)('prop options and reload on %s', (dialect) => {
  // A short load timeout: options() that never answer are cut off by it.
  const t = componentServer(dialect, COMPONENT, { loadTimeout: 2 });
  const { options, reload } = t;

  it('pages options by page, with this bound to configured_props', async () => {
    const pages = [];
    for (let page = 0; page < 4; page++) {
      const res = await options('repo', { configured_props: { owner: 'ada' }, page });
      expect(res.status).toBe(200);
      pages.push(res.body.data);
    }
    expect(pages).toEqual([
      { options: ['ada/alpha', 'ada/beta'], context: null, errors: [] },
      { options: ['ada/gamma', 'ada/delta'], context: null, errors: [] },
      { options: ['ada/epsilon'], context: null, errors: [] },
      { options: [], context: null, errors: [] },
    ]);
  });

  it('pages options by prevContext: each answer gives the context the next request passes back', async () => {
    const seen: string[] = [];
    let prev_context: unknown = null;
    for (let i = 0; i < 5; i++) {
      const res = await options('cursorRepo', { prev_context });
      expect(res.status).toBe(200);
      seen.push(...res.body.data.options);
      prev_context = res.body.data.context;
      if (!prev_context || !(prev_context as { nextPageToken?: string }).nextPageToken) break;
    }
    expect(seen).toEqual(['alpha', 'beta', 'gamma', 'delta', 'epsilon']);
    // A bare string is taken as the nextPageToken.
    expect((await options('cursorRepo', { prev_context: '4' })).body.data).toEqual({ options: ['epsilon'], context: {}, errors: [] });
  });

  it("runs options() through an app's propDefinition, with its input values from configured_props", async () => {
    const res = await options('branch', { configured_props: { repo: 'ada/alpha' } });
    expect(res.body.data).toEqual({
      options: [
        { label: 'ada/alpha main', value: 'ada/alpha#main' },
        { label: 'ada/alpha dev', value: 'ada/alpha#dev' },
      ],
      context: null,
      errors: [],
    });
  });

  it('lists static options in configurable_props, and answers them here too', async () => {
    const component = await t.api.get(`/v1/components/${t.componentId}`);
    expect(component.body.data.configurable_props.find((p: { name: string }) => p.name === 'size').options).toEqual(['s', 'm', { label: 'Large', value: 'l' }]);
    expect((await options('size')).body.data).toEqual({
      options: [
        { label: 's', value: 's' },
        { label: 'm', value: 'm' },
        { label: 'Large', value: 'l' },
      ],
      context: null,
      errors: [],
    });
  });

  it('answers a throw, a timeout, an unknown prop and a prop without options as errors with 200', async () => {
    const cases: Array<[string, string]> = [
      ['throwing', 'TypeError: the forge is down'],
      ['slow', 'options() of prop "slow" took longer than 2000 ms'],
      ['nope', '"nope" is not a prop of this component'],
      ['plain', 'prop "plain" has no options'],
    ];
    for (const [prop, error] of cases) {
      const res = await options(prop);
      expect(res.status, prop).toBe(200);
      expect(res.body.data, prop).toEqual({ options: [], context: null, errors: [error] });
    }
    // The worker killed for the timeout was replaced.
    expect((await options('repo', { configured_props: { owner: 'x' } })).body.data.errors).toEqual([]);
  });

  it('leaves out choices whose value holds an unpaired surrogate, which a deploy refuses, and says so', async () => {
    const id = await t.save(`module.exports = {
  name: "odd choices",
  version: "1.0.0",
  props: {
    odd: {
      type: "string",
      async options() { return ["ok", "half \\uD800", { label: "lone \\uDC00 label", value: "fine" }, { label: "deep", value: { k: ["\\uD83D"] } }]; },
    },
  },
  async run() {},
};`);
    const res = await options('odd', {}, id);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      options: [
        { label: 'ok', value: 'ok' },
        { label: 'lone \uFFFD label', value: 'fine' },
      ],
      context: null,
      errors: ['2 of the choices options() gave were left out: a value holds an unpaired UTF-16 surrogate, which is not text; a deploy refuses such a value'],
    });
    // What it offers deploys.
    const deployed = await t.api.post('/v1/sources', { component_id: id, configured_props: { odd: 'fine' } });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    expect(deployed.body.data.configured_props.odd).toBe('fine');
  });

  it("leaves out choices whose value the prop's type refuses (an object for a string prop), and says so", async () => {
    const id = await t.save(`module.exports = {
  name: "mistyped choices",
  version: "1.0.0",
  props: {
    repo: {
      type: "string",
      async options() { return [{ label: "alpha", value: "alpha" }, { label: "beta", value: { id: 2 } }, { label: "gamma", value: null }, { label: "delta", value: 4 }]; },
    },
    tags: { type: "string[]", options: [{ label: "one", value: "one" }, { label: "two", value: ["two"] }] },
  },
  async run() {},
};`);
    const res = await options('repo', {}, id);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      options: [
        { label: 'alpha', value: 'alpha' },
        { label: 'delta', value: 4 },
      ],
      context: null,
      errors: [
        '2 of the choices options() gave were left out: a value is not what a prop of type string takes (must be a string, got an object); a deploy refuses such a value',
      ],
    });
    const listed = await options('tags', {}, id);
    expect(listed.body.data).toEqual({
      options: [{ label: 'one', value: 'one' }],
      context: null,
      errors: [
        '1 of the choices options() gave was left out: a value is not what a prop of type string[] takes (must be a string, got an array); a deploy refuses such a value',
      ],
    });
    // What was left out is what a deploy refuses; what is offered deploys.
    const refused = await t.api.post('/v1/sources', { component_id: id, configured_props: { repo: { id: 2 }, tags: ['one'] } });
    expect(refused.status).toBe(422);
    expect(refused.body.error).toBe('invalid configured_props: repo must be a string, got an object');
    const deployed = await t.api.post('/v1/sources', { component_id: id, configured_props: { repo: 4, tags: ['one'] } });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
  });

  it('says in a reload that a prop additionalProps() adds of a type no deploy takes would be refused, as the deploy says', async () => {
    const id = await t.save(`module.exports = {
  name: "adds an endpoint",
  version: "1.0.0",
  props: { mode: { type: "string", reloadProps: true } },
  async additionalProps() { return this.mode === "hook" ? { hook: { type: "$.interface.http" } } : { note: { type: "string" } }; },
  async run() {},
};`);
    const refusal =
      'is a prop of type $.interface.http added by additionalProps(); props it adds may only be of types string, integer, boolean, object or any (or arrays of them), or alerts';
    const reloaded = await reload({ configured_props: { mode: 'hook' } }, id);
    expect(reloaded.status).toBe(200);
    expect(reloaded.body.data).toEqual({
      configurable_props: [
        { name: 'mode', type: 'string', reloadProps: true },
        { name: 'hook', type: '$.interface.http' },
      ],
      errors: [`"hook" ${refusal}`],
    });
    const deployed = await t.api.post('/v1/sources', { component_id: id, configured_props: { mode: 'hook' } });
    expect(deployed.status).toBe(422);
    expect(deployed.body.error).toBe(`invalid configured_props: hook ${refusal}`);
    const fine = await reload({ configured_props: { mode: 'note' } }, id);
    expect(fine.body.data.errors).toEqual([]);
  });

  it('checks configured_props as a deploy does: what it would refuse is named as its 422 names it, and the code sees it unset', async () => {
    const id = await t.save(`module.exports = {
  name: "checked values",
  version: "1.0.0",
  props: {
    owner: { type: "string", default: "fallback" },
    count: { type: "integer", min: 1, max: 5, optional: true },
    size: { type: "string", options: ["s", "m"], optional: true },
    token: { type: "integer", secret: true, optional: true },
    pin: { type: "string", secret: true, options: ["1111", "2222"], optional: true },
    key: { type: "string", secret: true, optional: true },
    store: { type: "data_store", optional: true },
    seen: {
      type: "string",
      optional: true,
      async options() {
        const { owner, count, size, token, pin, key, extra } = this;
        return [JSON.stringify({ owner, count, size, token, pin, key, extra, keys: this.store ? await this.store.keys() : null })];
      },
    },
    picked: { type: "string", optional: true, options: ["x"] },
  },
  async run() {},
};`);
    // What options() saw, in the order it writes it (values in the props' order, then the store's keys).
    const seen = ({ keys = null, ...values }: { keys?: string[] | null; [name: string]: unknown }) => [JSON.stringify({ ...values, keys })];
    const wrong = { owner: 7, count: 9, size: 'xl', token: 1.5, pin: '9876', extra: 'x' };
    const refusal =
      'invalid configured_props: extra is not a prop of this component; owner must be a string, got a number; count must be at most 5, got 9; ' +
      'size must be one of "s", "m", got "xl"; token must be an integer, got a number; pin must be one of "1111", "2222"';
    const res = await options('seen', { configured_props: wrong }, id);
    expect(res.status).toBe(200);
    // JSON drops what is undefined: owner reads as its default, the rest as unset.
    expect(res.body.data).toEqual({ options: seen({ owner: 'fallback' }), context: null, errors: [refusal] });
    // A secret is never echoed, not even the number a secret integer prop was given.
    expect(JSON.stringify(res.body)).not.toMatch(/9876|1\.5/);
    // Worded as the deploy's 422 words the same values.
    const deployed = await t.api.post('/v1/sources', { component_id: id, configured_props: wrong });
    expect([deployed.status, deployed.body.error]).toEqual([422, refusal]);
    // A reload and static options say it too; null is unset and a secret's "********" (which keeps a stored secret a
    // component's endpoints cannot see) reads as unset without a word, as for the console's Edit props.
    const reloaded = await reload({ configured_props: { count: 0, owner: null, key: '********' } }, id);
    expect([reloaded.status, reloaded.body.data.errors]).toEqual([200, ['invalid configured_props: count must be at least 1, got 0']]);
    const picked = await options('picked', { configured_props: { nope: 1 } }, id);
    expect(picked.body.data).toEqual({ options: ['x'], context: null, errors: ['invalid configured_props: nope is not a prop of this component'] });
    const masked = await options('seen', { configured_props: { owner: null, key: '********' } }, id);
    expect(masked.body.data).toEqual({ options: seen({ owner: 'fallback' }), context: null, errors: [] });
    // What a deploy takes is given as it is.
    const fine = { owner: 'ada', count: 2, size: 'm', token: 42, pin: '1111', key: 'k' };
    const right = await options('seen', { configured_props: fine }, id);
    expect(right.body.data).toEqual({ options: seen(fine), context: null, errors: [] });
    // A data_store prop given the id of one of the account's stores, which a deploy refuses, is not read as a store
    // named after the id.
    expect((await t.api.put(recordPath('orders', 'a'), { value: 1 })).status).toBe(200);
    const ordersId = (await t.api.get('/v1/data_stores/orders/keys')).body.data.id;
    const byId = await options('seen', { configured_props: { store: ordersId } }, id);
    expect(byId.body.data).toEqual({
      options: seen({ owner: 'fallback' }),
      context: null,
      errors: [`invalid configured_props: store names data store ${ordersId} by its id; a data_store prop takes the store's name: "orders"`],
    });
    const byName = await options('seen', { configured_props: { store: 'orders' } }, id);
    expect(byName.body.data).toEqual({ options: seen({ owner: 'fallback', keys: ['a'] }), context: null, errors: [] });
  });

  it('gives a component with additionalProps() the values of props it may add, and checks those of its static props', async () => {
    const id = await t.save(`module.exports = {
  name: "adds an echo",
  version: "1.0.0",
  props: { mode: { type: "string", options: ["a", "b"], optional: true, reloadProps: true } },
  async additionalProps() { return { echo: { type: "string", label: JSON.stringify({ mode: this.mode ?? null, added: this.added ?? null }) } }; },
  async run() {},
};`);
    const res = await reload({ configured_props: { mode: 'c', added: 'kept' } }, id);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      configurable_props: [
        { name: 'mode', type: 'string', options: ['a', 'b'], optional: true, reloadProps: true },
        { name: 'echo', type: 'string', label: '{"mode":null,"added":"kept"}' },
      ],
      errors: ['invalid configured_props: mode must be one of "a", "b", got "c"'],
    });
  });

  it('refuses a field neither endpoint takes with a 400 naming it, instead of answering as if it were not there', async () => {
    const cases: Array<[string, object, string]> = [
      [`/v1/components/${t.componentId}/props/cursorRepo/options`, { prevContext: { nextPageToken: '2' } }, 'prevContext'],
      [`/v1/components/${t.componentId}/props/repo/options`, { configuredProps: { owner: 'ada' } }, 'configuredProps'],
      [`/v1/components/${t.componentId}/props/reload`, { configured_props: { extended: true }, props: {} }, 'props'],
    ];
    for (const [path, body, field] of cases) {
      const res = await t.api.post(path, body);
      expect(res.status, field).toBe(400);
      expect(res.body).toMatchObject({ code: 'invalid_request', error: `invalid body: must not have the field "${field}"` });
    }
  });

  it("answers 404 for an unknown component and for another account's, and serves registry components", async () => {
    expect((await t.api.post('/v1/components/sc_00000000000000000000000000/props/repo/options', {})).status).toBe(404);
    const other = client(t.server.url, (await t.server.createUser()).apiKey);
    const foreign = await other.post(`/v1/components/${t.componentId}/props/repo/options`, {});
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('not_found');
    expect((await other.post(`/v1/components/${t.componentId}/props/reload`, {})).status).toBe(404);
    const registry = await t.api.get('/v1/components/registry/schedule-custom-interval');
    const timer = registry.body.data.configurable_props.find((p: { type: string }) => p.type === '$.interface.timer');
    const res = await t.api.post(`/v1/components/${registry.body.data.id}/props/${timer.name}/options`, {});
    expect(res.status).toBe(200);
    expect(res.body.data.errors).toEqual([`prop "${timer.name}" has no options`]);
  });

  it('reloads props: the static ones, then those additionalProps() returns for the configured values', async () => {
    const plain = await reload({ configured_props: { extended: false } });
    expect(plain.status).toBe(200);
    expect(plain.body.data.errors).toEqual([]);
    const names = plain.body.data.configurable_props.map((p: { name: string }) => p.name);
    expect(names).toEqual(['app', 'owner', 'repo', 'cursorRepo', 'branch', 'size', 'count', 'throwing', 'slow', 'plain', 'extended']);
    expect(plain.body.data.configurable_props.at(-1)).toEqual({ name: 'extended', type: 'boolean', optional: true, reloadProps: true });
    const extended = await reload({ configured_props: { extended: true } });
    expect(extended.body.data.configurable_props.slice(-2)).toEqual([
      { name: 'labels', type: 'string[]', label: 'Labels', options: ['bug', 'idea'] },
      { name: 'note', type: 'string', optional: true },
    ]);
    // The options of a prop only additionalProps() declares are answered too.
    expect((await options('labels', { configured_props: { extended: true } })).body.data).toEqual({ options: ['bug', 'idea'], context: null, errors: [] });
    expect((await options('note', { configured_props: { extended: true } })).body.data.errors).toEqual(['prop "note" has no options']);
  });

  it('lists hidden, disabled and useQuery, and a reload answers the hidden flags additionalProps() changed, for those values only', async () => {
    // As slack-send-message writes it: hidden props that additionalProps() unhides by changing its argument, returning {}.
    const code = `const app = { type: "app", app: "chat", propDefinitions: { username: { type: "string", label: "Bot Username", optional: true } } };
      module.exports = { name: "send", version: "1.0.0", type: "action",
        props: { app, text: { type: "string", useQuery: true, async options({ query }) { return [query]; } }, sent: { type: "boolean", disabled: true, optional: true },
          customize: { type: "boolean", optional: true, reloadProps: true },
          username: { propDefinition: [app, "username"], hidden: true }, icon: { type: "string", optional: true, hidden: true },
          size: { type: "string", optional: true, options: ["s", "m"] } },
        async additionalProps(props) { props.size.options.push("xl"); if (this.customize) { props.username.hidden = false; props.icon.hidden = false; } return {}; },
        async run() { return this.username ?? null; } };`;
    const saved = await t.api.post('/v1/components', { component_code: code });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    const byName = (props: { name: string }[]) => Object.fromEntries(props.map((p) => [p.name, p]));
    const listed = byName(saved.body.data.configurable_props);
    expect(listed.text).toMatchObject({ useQuery: true, remoteOptions: true });
    expect(listed.sent).toMatchObject({ disabled: true });
    expect(listed.username).toMatchObject({ hidden: true, label: 'Bot Username', propDefinition: ['app', 'username'] });
    const reloaded = async (customize: boolean) => {
      const res = await reload({ configured_props: { customize } }, saved.body.data.id);
      expect(res.body.data.errors).toEqual([]);
      return byName(res.body.data.configurable_props);
    };
    expect((await reloaded(true)).username).toMatchObject({ hidden: false });
    expect((await reloaded(true)).icon).toMatchObject({ hidden: false });
    // What one call changed stays out of the next: the props are hidden again without the answer that unhides them.
    expect((await reloaded(false)).username).toMatchObject({ hidden: true });
    expect((await reloaded(false)).icon).toMatchObject({ hidden: true });
    // Nor do changes to a prop's option list: each call adds its "xl" to its own copy.
    expect((await reloaded(false)).size).toMatchObject({ options: ['s', 'm', 'xl'] });
  });

  it('deploys without a value for a required prop that is hidden, as the console and the CLI never ask for it', async () => {
    const code = `module.exports = { name: "hidden", version: "1.0.0",
      props: { text: { type: "string" }, username: { type: "string", hidden: true }, shown: { type: "string", hidden: false } },
      async run() {} };`;
    const id = await t.save(code);
    const deployed = await t.api.post('/v1/sources', { component_id: id, configured_props: { text: 'hi', shown: 'x' } });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    // An unhidden required prop is still required.
    const missing = await t.api.post('/v1/sources', { component_id: id, configured_props: { text: 'hi' } });
    expect(missing.body.details).toEqual([{ prop: 'shown', message: 'is required' }]);
  });

  it("takes a number for a string prop whose choices come from async options(), as registry apps' numeric ids are", async () => {
    const res = await t.api.post('/v1/sources', {
      component_id: t.componentId,
      configured_props: { owner: 'o', repo: 42, cursorRepo: 'c', branch: 'b', size: 's', count: 1 },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.configured_props.repo).toBe(42);
    const text = await t.api.post('/v1/sources', {
      component_id: t.componentId,
      configured_props: { owner: 'o', repo: { id: 42 }, cursorRepo: 'c', branch: 'b', size: 's', count: 1 },
    });
    expect(text.body.details).toEqual([{ prop: 'repo', message: 'must be a string, got an object' }]);
  });

  it('checks a deploy against static options and min/max, and reports every invalid prop in one 422', async () => {
    const res = await t.api.post('/v1/sources', {
      component_id: t.componentId,
      configured_props: { owner: 7, repo: 'r', cursorRepo: 'c', branch: 'b', size: 'xl', count: 9 },
    });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('props_invalid');
    expect(res.body.details).toEqual([
      { prop: 'owner', message: 'must be a string, got a number' },
      { prop: 'size', message: 'must be one of "s", "m", "l", got "xl"' },
      { prop: 'count', message: 'must be at most 5, got 9' },
    ]);
    const low = await t.api.post('/v1/sources', {
      component_id: t.componentId,
      configured_props: { owner: 'o', repo: 'r', cursorRepo: 'c', branch: 'b', size: 's', count: 0 },
    });
    expect(low.body.details).toEqual([{ prop: 'count', message: 'must be at least 1, got 0' }]);
  });
});
