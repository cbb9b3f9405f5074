// Data stores over the API: data_store props of one account's sources and workflow steps share a store by name
// (get/set/has/delete/keys/entries/clear across runs, committed with each run, expiring by ttl), accounts do not
// share, GET /v1/data_stores lists them; the data_stores app's actions run unmodified from their published package.
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleCode } from '../../src/client/bundle.js';
import { ManualClock } from '../../src/lib/clock.js';
import { client } from '../helpers/client.js';
import { createTestDatabase, DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { workflowCalls } from '../helpers/workflows.js';

const PACKAGE = path.dirname(createRequire(import.meta.url).resolve('@pipedream/data_stores/package.json'));

/** An action of the published package, bundled as the client CLI bundles a step file (relative imports inlined). */
function bundle(action: string): Promise<string> {
  return bundleCode(path.join(PACKAGE, 'actions', action, `${action}.mjs`));
}

/** A source that does what each event asks to its store and emits what it saw. */
const STORE_SOURCE = `
module.exports = {
  name: "store ops",
  version: "1.0.0",
  props: { store: { type: "data_store" } },
  async run(event) {
    const s = this.store;
    for (const [key, value] of Object.entries(event.set ?? {})) await s.set(key, value, event.ttl ? { ttl: event.ttl } : undefined);
    for (const key of event.delete ?? []) await s.delete(key);
    if (event.clear) await s.clear();
    const seen = { keys: await s.keys(), entries: await s.entries(), has: {} , get: {} };
    for (const key of event.ask ?? []) { seen.has[key] = await s.has(key); seen.get[key] = (await s.get(key)) ?? null; }
    if (event.fail) throw new Error("failed after its writes");
    this.$emit(seen);
  },
};`;

describe.each(DIALECTS)('data stores on %s', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  const actions: Record<string, string> = {};

  beforeAll(async () => {
    for (const name of ['add-update-record', 'get-record-or-create', 'list-keys', 'delete-single-record', 'delete-all-records'])
      actions[name] = await bundle(name);
    server = await startTestServer(dialect);
    api = client(server.url, (await server.createUser()).apiKey);
  });
  afterAll(async () => {
    await server?.destroy();
  });

  const { create, finishedRuns } = workflowCalls(() => api);

  async function deploy(on: ReturnType<typeof client>, store: unknown, echo?: (props: unknown) => void): Promise<string> {
    const res = await on.post('/v1/sources', { component_code: STORE_SOURCE, configured_props: { store } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    echo?.(res.body.data.configured_props);
    return res.body.data.id;
  }

  /** Runs the source with `event` and returns what it emitted (or the error it recorded). */
  async function run(on: ReturnType<typeof client>, sourceId: string, event: object): Promise<any> {
    const before = (await on.get(`/v1/sources/${sourceId}/event_summaries?limit=100`)).body.data.length;
    const errorsBefore = (await on.get(`/v1/sources/${sourceId}/$errors/event_summaries?limit=100`)).body.data.length;
    expect((await on.post(`/v1/sources/${sourceId}/run`, event)).status).toBe(202);
    const done = await waitFor(
      async () => [
        (await on.get(`/v1/sources/${sourceId}/event_summaries?limit=100&expand=event`)).body.data,
        (await on.get(`/v1/sources/${sourceId}/$errors/event_summaries?limit=100&expand=event`)).body.data,
      ],
      ([emits, errors]) => emits.length > before || errors.length > errorsBefore,
      { what: 'the run to finish' },
    );
    return done[0].length > before ? done[0][0].event : { error: done[1][0].event.error.message };
  }

  it('shares a store between runs and sources of one account, and commits nothing of a failed run', async () => {
    const writer = await deploy(api, 'orders');
    const reader = await deploy(api, { name: 'orders' }, (props) => expect(props).toEqual({ store: 'orders' }));
    expect(await run(api, writer, { set: { a: 1, b: { deep: [true] } } })).toMatchObject({ keys: ['a', 'b'] });
    expect(await run(api, reader, { ask: ['a', 'b', 'zz'] })).toEqual({
      keys: ['a', 'b'],
      entries: [
        ['a', 1],
        ['b', { deep: [true] }],
      ],
      has: { a: true, b: true, zz: false },
      get: { a: 1, b: { deep: [true] }, zz: null },
    });
    expect(await run(api, writer, { set: { c: 3 }, delete: ['a'], fail: true })).toEqual({ error: 'failed after its writes' });
    expect((await run(api, reader, {})).keys).toEqual(['a', 'b']);
    expect((await run(api, writer, { delete: ['a'], set: { c: 3 } })).keys).toEqual(['b', 'c']);
    expect((await run(api, reader, { clear: true, set: { after: 'clear' } })).keys).toEqual([]);
    expect((await run(api, writer, { ask: ['b'] })).has).toEqual({ b: false });
  });

  it('makes no store for a delete or clear that finds none, as a delete over the API makes none', async () => {
    const other = client(server.url, (await server.createUser()).apiKey);
    const source = await deploy(other, 'never-written');
    expect(await run(other, source, { delete: ['x'] })).toMatchObject({ keys: [] });
    expect(await run(other, source, { clear: true })).toMatchObject({ keys: [] });
    expect(await run(other, source, { set: { gone: 1 }, delete: ['gone'] })).toMatchObject({ keys: [] });
    expect((await other.get('/v1/data_stores')).body.data).toEqual([]);
    expect((await other.get('/v1/data_stores/never-written')).body).toEqual({ error: 'data store "never-written" not found', code: 'not_found' });
    // A set makes it; a delete or clear of what it holds then leaves it, empty.
    await run(other, source, { set: { a: 1, b: 2 } });
    await run(other, source, { delete: ['a'] });
    await run(other, source, { clear: true });
    const [store] = (await other.get('/v1/data_stores')).body.data;
    expect(store).toMatchObject({ name: 'never-written', key_count: 0 });
  });

  it('keeps stores of different accounts apart, lists them, and shows their keys', async () => {
    const other = client(server.url, (await server.createUser()).apiKey);
    const mine = await deploy(api, 'shared-name');
    const theirs = await deploy(other, 'shared-name');
    await run(api, mine, { set: { mine: 1, also: 2 } });
    expect((await run(other, theirs, {})).keys).toEqual([]);
    await run(other, theirs, { set: { theirs: 1 } });
    expect((await run(api, mine, {})).keys).toEqual(['also', 'mine']);

    const listed = await api.get('/v1/data_stores?limit=1');
    expect(listed.status).toBe(200);
    expect(listed.body.page_info.total_count).toBe(2);
    expect(listed.body.data).toEqual([
      { id: expect.stringMatching(/^ds_/), name: 'shared-name', key_count: 2, created_at: expect.any(Number), updated_at: expect.any(Number) },
    ]);
    const older = await api.get(`/v1/data_stores?limit=1&after=${listed.body.page_info.end_cursor}`);
    expect(older.body.data.map((s: { name: string; key_count: number }) => [s.name, s.key_count])).toEqual([['orders', 0]]);
    expect((await other.get('/v1/data_stores')).body.data.map((s: { name: string }) => s.name)).toEqual(['shared-name']);

    expect((await api.get('/v1/data_stores/shared-name/keys')).body.data).toEqual({ id: listed.body.data[0].id, name: 'shared-name', keys: ['also', 'mine'] });
    expect((await api.get(`/v1/data_stores/${listed.body.data[0].id}/keys`)).body.data.keys).toEqual(['also', 'mine']);
    expect((await other.get(`/v1/data_stores/${listed.body.data[0].id}/keys`)).status).toBe(404);
    expect((await api.get('/v1/data_stores/never-used/keys')).status).toBe(404);

    // A name as long as a data_store prop takes (200 characters, here non-ASCII: 9 characters a letter once encoded).
    const long = 'é'.repeat(200);
    await run(api, await deploy(api, long), { set: { k: 1 } });
    const byName = await api.get(`/v1/data_stores/${encodeURIComponent(long)}/keys`);
    expect([byName.status, byName.body.data?.keys]).toEqual([200, ['k']]);
  });

  it('shows one store by name or id, and deletes it with its records: a source naming it starts a new, empty one', async () => {
    const other = client(server.url, (await server.createUser()).apiKey);
    const source = await deploy(api, 'to-delete');
    await run(api, source, { set: { a: 1, b: 2 } });
    const [listed] = (await api.get('/v1/data_stores?limit=1')).body.data;
    expect(listed).toMatchObject({ name: 'to-delete', key_count: 2 });
    for (const store of ['to-delete', listed.id]) {
      const shown = await api.get(`/v1/data_stores/${store}`);
      expect([shown.status, shown.body], store).toEqual([200, { data: listed }]);
    }
    // Another account's store is not found, by id or by a name it does not have; nothing is deleted.
    expect((await other.get(`/v1/data_stores/${listed.id}`)).body).toEqual({ error: `data store "${listed.id}" not found`, code: 'not_found' });
    expect((await other.delete(`/v1/data_stores/${listed.id}`)).status).toBe(404);
    expect((await other.delete('/v1/data_stores/to-delete')).status).toBe(404);
    expect((await api.get('/v1/data_stores/to-delete/keys')).body.data.keys).toEqual(['a', 'b']);

    const deleted = await api.delete(`/v1/data_stores/${listed.id}`);
    expect([deleted.status, deleted.body]).toEqual([204, '']);
    expect((await api.get('/v1/data_stores/to-delete')).body).toEqual({ error: 'data store "to-delete" not found', code: 'not_found' });
    expect((await api.get('/v1/data_stores/to-delete/records?key=a')).status).toBe(404);
    expect((await api.delete('/v1/data_stores/to-delete')).status).toBe(404);
    expect((await api.get('/v1/data_stores')).body.data.map((store: { name: string }) => store.name)).not.toContain('to-delete');

    // The source runs on: its store starts again, empty, with a new id.
    expect((await run(api, source, { set: { c: 3 } })).keys).toEqual(['c']);
    const again = (await api.get('/v1/data_stores/to-delete')).body.data;
    expect(again).toMatchObject({ name: 'to-delete', key_count: 1 });
    expect(again.id).not.toBe(listed.id);
  });

  /** A source running `event.code` on its store, emitting what it returned or the message of what it threw. */
  const TRY_SOURCE = `
    module.exports = {
      name: "store try", version: "1.0.0",
      props: { store: { type: "data_store" } },
      async run(event) {
        const s = this.store;
        try { this.$emit({ result: await new Function("s", "return (async () => { " + event.code + " })()")(s) }); }
        catch (e) { this.$emit({ threw: e.name + ": " + e.message }); }
      },
    };`;

  it('refuses a key holding an unpaired surrogate, which would come back as another key', async () => {
    const res = await api.post('/v1/sources', { component_code: TRY_SOURCE, configured_props: { store: 'surrogates' } });
    const id = res.body.data.id;
    const refused = 'TypeError: data store keys may not contain an unpaired UTF-16 surrogate';
    expect(await run(api, id, { code: 'await s.set("a\\ud800", 1)' })).toEqual({ threw: refused });
    expect(await run(api, id, { code: 'return s.get("\\udc00b")' })).toEqual({ threw: refused });
    expect(await run(api, id, { code: 'await s.set("pair \\ud83d\\ude00", 1); return s.keys()' })).toEqual({ result: ['pair 😀'] });
    expect(await run(api, id, { code: 'return [await s.get("pair 😀"), await s.keys()]' })).toEqual({ result: [1, ['pair 😀']] });
    expect((await api.get('/v1/data_stores/surrogates/keys')).body.data.keys).toEqual(['pair 😀']);
  });

  it('takes a key of 1,024 characters or 2,048 bytes, whichever comes first, alike on both databases', async () => {
    const res = await api.post('/v1/sources', { component_code: TRY_SOURCE, configured_props: { store: 'long-keys' } });
    const id = res.body.data.id;
    // Varied CJK characters (3 bytes each), which PostgreSQL's index cannot compress below its 2,704-byte limit.
    const cjk = (n: number) => `let k = ""; for (let i = 0; i < ${n}; i++) k += String.fromCharCode(0x4e00 + ((i * 7919) % 20000));`;
    expect(await run(api, id, { code: `${cjk(1024)} await s.set(k, 1)` })).toEqual({
      threw: 'RangeError: data store keys may have at most 2048 bytes of UTF-8; this one has 3072',
    });
    expect(await run(api, id, { code: `${cjk(682)} await s.set(k, 1); await s.set("a".repeat(1024), 2); return (await s.keys()).length` })).toEqual({
      result: 2,
    });
    expect(
      await run(api, id, { code: `${cjk(682)} return [await s.get(k), await s.get("a".repeat(1024)), (await s.keys()).map((key) => key.length)]` }),
    ).toEqual({
      result: [1, 2, [1024, 682]],
    });
    expect(await run(api, id, { code: 'await s.set("a".repeat(1025), 1)' })).toEqual({
      threw: 'RangeError: data store keys may have at most 1024 characters; this one has 1025',
    });
    // Characters are code points, as the API's maxLength counts them: 300 emoji and 500 "a" are 800 of them (1,100
    // UTF-16 units, 1,700 bytes), and 1,025 characters are too many however few bytes they take.
    const mixed = '"\\u{1F600}".repeat(300) + "a".repeat(500)';
    expect(await run(api, id, { code: `await s.set(${mixed}, 3); return (await s.get(${mixed}))` })).toEqual({ result: 3 });
    expect((await api.get(`/v1/data_stores/long-keys/records?key=${encodeURIComponent(`${'😀'.repeat(300)}${'a'.repeat(500)}`)}`)).body).toEqual({
      data: { key: `${'😀'.repeat(300)}${'a'.repeat(500)}`, value: 3 },
    });
    expect(await run(api, id, { code: 'await s.set("\\u{1F600}".repeat(2) + "a".repeat(1023), 1)' })).toEqual({
      threw: 'RangeError: data store keys may have at most 1024 characters; this one has 1025',
    });
  });

  it('holds store keys and ttls to the rules even when the component rewrites what its worker reports', async () => {
    // JSON.stringify turns the worker's report into text, calling any `toJSON` on Object.prototype: a component that puts
    // one there edits its writes after the worker's checks, so the server checks them again (as hostile.test.ts does).
    const rewriting = (edit: string) => `module.exports = { name: "rewrite", version: "1.0.0", props: { store: { type: "data_store" } },
      async run() {
        Object.defineProperty(Object.prototype, "toJSON", { configurable: true, writable: true, value: function () {
          const value = this;
          if (value.t === "outcomes" && value.results.length && value.results[0].dataStores) {
            delete Object.prototype.toJSON;
            const write = value.results[0].dataStores[0].writes[0];
            ${edit}
          }
          return value;
        } });
        await this.store.set("k", 1, { ttl: 60 });
        this.$emit("wrote");
      } };`;
    const cases: Array<[string, string]> = [
      ['write.key = "中".repeat(1000);', 'data store keys may have at most 2048 bytes of UTF-8; this one has 3000'],
      ['write.key = "a\\uD800";', 'data store keys may not contain an unpaired UTF-16 surrogate'],
      ['write.ttlSeconds = 1e16;', 'a data store ttl may be at most 3153600000 seconds'],
      ['write.key = "k".repeat(1025);', 'data store keys may have at most 1024 characters; this one has 1025'],
      // The key JSON-quoted and cut to 100 characters, as the worker's own message and the API's say it.
      [
        'write.key = "a\\"b" + "k".repeat(120); write.value = "x".repeat(1100000);',
        `a data store value may be at most 1048576 bytes of JSON; "a\\"b${'k'.repeat(97)}"… (123 characters) would be 1100002`,
      ],
    ];
    for (const [edit, message] of cases) {
      const created = await api.post('/v1/sources', { component_code: rewriting(edit), configured_props: { store: 'rewritten' } });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      expect(await run(api, created.body.data.id, {}), edit).toEqual({ error: expect.stringContaining(message) });
    }
    // Nothing of the rewritten writes was kept: the store was never made.
    expect((await api.get('/v1/data_stores/rewritten/keys')).status).toBe(404);
    // A key of 800 characters (1,100 UTF-16 units) is one the worker takes: the server takes it too.
    const longKey = `${'😀'.repeat(300)}${'a'.repeat(500)}`;
    const kept = await api.post('/v1/sources', {
      component_code: rewriting(`write.key = ${JSON.stringify(longKey)};`),
      configured_props: { store: 'rewritten' },
    });
    expect(await run(api, kept.body.data.id, {})).toBe('wrote');
    expect((await api.get('/v1/data_stores/rewritten/keys')).body.data.keys).toEqual([longKey]);
  });

  it('takes a ttl of up to 100 years, alike on both databases', async () => {
    const res = await api.post('/v1/sources', { component_code: TRY_SOURCE, configured_props: { store: 'long-ttl' } });
    const id = res.body.data.id;
    const refused = 'RangeError: a data store ttl may be at most 3153600000 seconds (100 years; null for none), not 10000000000000000';
    expect(await run(api, id, { code: 'await s.set("far", 1, { ttl: 1e16 })' })).toEqual({ threw: refused });
    expect(await run(api, id, { code: 'await s.set("far", 1, { ttl: 3153600000 }); return s.setTtl("far", 1e16)' })).toEqual({ threw: refused });
    expect(await run(api, id, { code: 'await s.set("far", 1, { ttl: 3153600000 }); await s.set("near", 2); return s.setTtl("near", 3153600000)' })).toEqual({
      result: true,
    });
    expect(await run(api, id, { code: 'return s.entries()' })).toEqual({
      result: [
        ['far', 1],
        ['near', 2],
      ],
    });
  });

  it("takes a step's data store named by a template as { name }, as a configured one", async () => {
    const step =
      'export default defineComponent({ props: { store: { type: "data_store" } }, async run() { await this.store.set("k", 1); return this.store.keys(); } });';
    const workflow = await create({
      name: 'templated store',
      steps: [{ name: 'write', component_code: step, configured_props: { store: '{{ steps.trigger.event.body.store }}' } }],
    });
    await api.post(`/v1/workflows/${workflow.id}/run`, { body: { store: { name: 'templated' } } });
    const [done] = await finishedRuns(workflow.id, 1);
    expect([done.status, done.steps[0].$return_value], JSON.stringify(done)).toEqual(['succeeded', ['k']]);
    expect((await api.get('/v1/data_stores/templated/keys')).body.data.keys).toEqual(['k']);
  });

  it("says what is wrong with a step's data store name a template gave, rather than that it was not loaded", async () => {
    const step =
      'export default defineComponent({ props: { store: { type: "data_store" } }, async run() { try { await this.store.set("k", 1); } catch (e) { return e.name + ": " + e.message; } } });';
    const workflow = await create({
      name: 'misnamed store',
      steps: [{ name: 'write', component_code: step, configured_props: { store: '{{ steps.trigger.event.body.store }}' } }],
    });
    // 150 emoji are 150 characters (code points), a name as the API counts it, though 300 UTF-16 units.
    for (const store of ['', 'x'.repeat(201), 42, 'next\u0085line', '😀'.repeat(150)]) await api.post(`/v1/workflows/${workflow.id}/run`, { body: { store } });
    const runs = await finishedRuns(workflow.id, 5);
    const refused = 'TypeError: a data store is named by a string of 1 to 200 characters (not blank, without control characters) or { name }, not ';
    expect(runs.map((r: any) => r.steps[0].$return_value ?? 'stored').sort()).toEqual(
      [`${refused}""`, `${refused}"${'x'.repeat(100)}"… (201 characters)`, `${refused}42`, `${refused}"next\u0085line"`, 'stored'].sort(),
    );
    const names = (await api.get('/v1/data_stores')).body.data.map((s: { name: string }) => s.name);
    expect(names).not.toContain('');
    expect(names).not.toContain('next\u0085line');
    expect(names).toContain('😀'.repeat(150));
  });

  it("says which required data_store prop a step's template gave no store for, where an optional one is left undefined", async () => {
    const step = `export default defineComponent({ props: { store: { type: "data_store" }, spare: { type: "data_store", optional: true } },
      async run() { try { await this.store.set("k", 1); return "stored " + typeof this.spare; } catch (e) { return e.name + ": " + e.message; } } });`;
    const workflow = await create({
      name: 'no store',
      steps: [
        {
          name: 'write',
          component_code: step,
          configured_props: { store: '{{ steps.trigger.event.body.store }}', spare: '{{ steps.trigger.event.body.spare }}' },
        },
      ],
    });
    for (const body of [{}, { store: null }, { store: 'given' }]) await api.post(`/v1/workflows/${workflow.id}/run`, { body });
    const runs = await finishedRuns(workflow.id, 3);
    expect(runs.map((r: any) => r.steps[0].$return_value).sort()).toEqual([
      'TypeError: the data_store prop "store" names no data store: its template gave null',
      'TypeError: the data_store prop "store" names no data store: its template gave undefined',
      'stored undefined',
    ]);
  });

  it("refuses a step's data store that a template names by the id of one of the account's stores, as a deploy does", async () => {
    expect((await api.put('/v1/data_stores/by-name/records?key=a', { value: 1 })).status).toBe(200);
    const { id } = (await api.get('/v1/data_stores/by-name')).body.data;
    const step =
      'export default defineComponent({ props: { store: { type: "data_store" } }, async run() { try { await this.store.set("k", 1); return "stored"; } catch (e) { return e.name + ": " + e.message; } } });';
    const workflow = await create({
      name: 'store by id',
      steps: [{ name: 'write', component_code: step, configured_props: { store: '{{ steps.trigger.event.body.store }}' } }],
    });
    for (const store of [id, { name: id }]) await api.post(`/v1/workflows/${workflow.id}/run`, { body: { store } });
    const runs = await finishedRuns(workflow.id, 2);
    const refused = `TypeError: names data store ${id} by its id; a data_store prop takes the store's name: "by-name"`;
    expect(runs.map((r: any) => [r.status, r.steps[0].$return_value])).toEqual([
      ['succeeded', refused],
      ['succeeded', refused],
    ]);
    // No second store named after the id, and the store itself unchanged.
    expect((await api.get(`/v1/data_stores/${id}/keys`)).body.data).toEqual({ id, name: 'by-name', keys: ['a'] });
    expect((await api.get('/v1/data_stores?limit=100')).body.data.map((s: { name: string }) => s.name)).not.toContain(id);
  });

  it("refuses a bare ttl in place of set()'s { ttl } options, which would keep the record for ever", async () => {
    const res = await api.post('/v1/sources', { component_code: TRY_SOURCE, configured_props: { store: 'bare-ttl' } });
    const id = res.body.data.id;
    expect(await run(api, id, { code: 'await s.set("k", 1, 60)' })).toEqual({ threw: 'TypeError: data store set() takes its options as { ttl }, not 60' });
    expect(await run(api, id, { code: 'await s.set("k", 1, null); await s.set("j", 2, { ttl: 60 }); return s.keys()' })).toEqual({ result: ['k', 'j'] });
  });

  it('refuses a data_store prop without a store name in the one 422 of the deploy', async () => {
    const res = await api.post('/v1/sources', { component_code: STORE_SOURCE, configured_props: { store: 42 } });
    expect(res.status).toBe(422);
    expect(res.body.details).toEqual([{ prop: 'store', message: 'must name a data store: a string of 1 to 200 characters, or { name }' }]);
    // A field besides name was dropped silently: a typo such as { name, ttl } deployed as if it were not there.
    const extra = await api.post('/v1/sources', { component_code: STORE_SOURCE, configured_props: { store: { name: 'x', extra: 1 } } });
    expect(extra.status).toBe(422);
    expect(extra.body).toEqual({
      error: 'invalid configured_props: store takes { name } only, not the field "extra"',
      code: 'props_invalid',
      details: [{ prop: 'store', message: 'takes { name } only, not the field "extra"' }],
    });
    const timer = await api.post('/v1/sources', {
      component_code: `${STORE_SOURCE.replace('props: {', 'props: { timer: "$.interface.timer",')}`,
      configured_props: { store: 'x', timer: { intervalSeconds: 60, timezon: 'Europe/Paris' } },
    });
    expect(timer.status).toBe(422);
    expect(timer.body.details).toEqual([
      { prop: 'timer', message: 'takes { intervalSeconds } or { cron } (with an optional timezone), not the field "timezon"' },
    ]);
    const named = await api.post('/v1/sources', { component_code: STORE_SOURCE, configured_props: { store: { name: 'x' } } });
    expect([named.status, named.body.data.configured_props]).toEqual([200, { store: 'x' }]);
    const missing = await api.post('/v1/sources', { component_code: STORE_SOURCE });
    expect(missing.body.details).toEqual([{ prop: 'store', message: 'is required: the name of a data store (made on first use)' }]);
  });

  it('gives hooks their stores: activate() and deactivate() writes land with the change, a failing hook writes nothing', async () => {
    const hooked = `
      module.exports = {
        name: "hooked store", version: "1.0.0",
        props: { store: { type: "data_store" }, failActivate: { type: "boolean", optional: true } },
        hooks: {
          async activate() {
            await this.store.set("activations", ((await this.store.get("activations")) ?? 0) + 1);
            if (this.failActivate) throw new Error("activate refused");
          },
          async deactivate() { await this.store.set("deactivated", true); },
        },
        async run() { this.$emit({ activations: await this.store.get("activations") }); },
      };`;
    const keys = async () => (await api.get('/v1/data_stores/hooks/keys')).body.data?.keys;
    const failed = await api.post('/v1/sources', { component_code: hooked, configured_props: { store: 'hooks', failActivate: true } });
    expect([failed.status, failed.body.code]).toEqual([422, 'hook_failed']);
    expect((await api.get('/v1/data_stores/hooks/keys')).status).toBe(404);

    const res = await api.post('/v1/sources', { component_code: hooked, configured_props: { store: 'hooks' } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await run(api, res.body.data.id, {})).toEqual({ activations: 1 });
    expect((await api.patch(`/v1/sources/${res.body.data.id}`, { active: false })).status).toBe(200);
    expect(await keys()).toEqual(['activations', 'deactivated']);
    expect((await api.patch(`/v1/sources/${res.body.data.id}`, { active: true })).status).toBe(200);
    expect(await run(api, res.body.data.id, {})).toEqual({ activations: 2 });
  });

  // The registry's new-key-in-datastore source is not in the published package, so this one, written here, does what
  // it does: a timer source whose dataStore prop is the published app's propDefinition, emitting each new key once.
  it('runs a polling source on the published app: new keys are emitted once, deduped by key', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'new-keys-'));
    const file = path.join(dir, 'new-keys.mjs');
    await fs.writeFile(
      file,
      `import app from ${JSON.stringify(path.join(PACKAGE, 'data_stores.app.mjs'))};
      export default {
        key: "test-new-keys", name: "New keys", version: "0.0.1", type: "source", dedupe: "unique",
        props: { app, db: "$.service.db", timer: { type: "$.interface.timer", default: { intervalSeconds: 900 } },
                 dataStore: { propDefinition: [app, "dataStore"] } },
        async run() {
          const seen = this.db.get("seen") ?? {};
          for (const key of await this.dataStore.keys()) {
            if (!seen[key]) this.$emit({ [key]: await this.dataStore.get(key) }, { id: key, summary: "New key: " + key, ts: Date.now() });
            seen[key] = true;
          }
          this.db.set("seen", seen);
        },
      };`,
    );
    const code = await bundleCode(file);
    await fs.rm(dir, { recursive: true, force: true });
    const writer = await deploy(api, 'polled');
    const res = await api.post('/v1/sources', { component_code: code, configured_props: { dataStore: 'polled' } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const poller = res.body.data.id;
    const summaries = async () => (await api.get(`/v1/sources/${poller}/event_summaries?limit=100&expand=event`)).body.data;
    const tick = async (count: number) => {
      expect((await api.post(`/v1/sources/${poller}/run`, {})).status).toBe(202);
      return waitFor(summaries, (data) => data.length === count, { what: `${count} new-key events` });
    };
    await run(api, writer, { set: { ada: 1 } });
    expect((await tick(1)).map((e: any) => [e.event, e.metadata.summary])).toEqual([[{ ada: 1 }, 'New key: ada']]);
    await run(api, writer, { set: { ada: 2, grace: 3 } });
    expect((await tick(2)).map((e: any) => e.event)).toEqual([{ grace: 3 }, { ada: 1 }]);
  });

  it("runs the data_stores app's actions unmodified as workflow steps, on the store a source sees", async () => {
    const steps = [
      {
        name: 'add',
        component_code: actions['add-update-record'],
        configured_props: { dataStore: 'crm', key: '{{ steps.trigger.event.body.key }}', value: '{{ steps.trigger.event.body.value }}' },
      },
      {
        name: 'get',
        component_code: actions['get-record-or-create'],
        configured_props: { dataStore: 'crm', key: '{{ steps.trigger.event.body.key }}', addRecordIfNotFound: 'No' },
      },
      { name: 'keys', component_code: actions['list-keys'], configured_props: { dataStore: 'crm' } },
    ];
    const workflow = await create({ name: 'crm writer', steps });
    await api.post(`/v1/workflows/${workflow.id}/run`, { body: { key: 'ada', value: '{"plan":"pro"}' } });
    const [first] = await finishedRuns(workflow.id, 1);
    expect(first.status, JSON.stringify(first)).toBe('succeeded');
    expect(first.steps.map((s: any) => s.$return_value)).toEqual([{ key: 'ada', value: { plan: 'pro' }, ttl: null }, { plan: 'pro' }, ['ada']]);
    expect(first.steps[0].exports.$summary).toBe('Successfully added a new record with the key, `ada`.');

    const reader = await deploy(api, 'crm');
    expect((await run(api, reader, { ask: ['ada'] })).get).toEqual({ ada: { plan: 'pro' } });

    // The key prop's options come from the app's propDefinition, which reads the configured data store.
    const saved = await api.post('/v1/components', { component_code: actions['get-record-or-create'] });
    const keyOptions = await api.post(`/v1/components/${saved.body.data.id}/props/key/options`, { configured_props: { dataStore: 'crm' } });
    expect(keyOptions.body.data).toEqual({ options: ['ada'], context: null, errors: [] });
    // addRecordIfNotFound reloads props: "Yes" adds the value prop.
    const reload = await api.post(`/v1/components/${saved.body.data.id}/props/reload`, { configured_props: { addRecordIfNotFound: 'Yes' } });
    expect(reload.body.data.errors).toEqual([]);
    expect(reload.body.data.configurable_props.map((p: { name: string }) => p.name)).toEqual([
      'app',
      'dataStore',
      'key',
      'addRecordIfNotFound',
      'ttl',
      'value',
    ]);
    expect(reload.body.data.configurable_props.find((p: { name: string }) => p.name === 'addRecordIfNotFound')).toMatchObject({ reloadProps: true });

    const cleanup = await create({
      name: 'crm cleanup',
      steps: [
        { name: 'del', component_code: actions['delete-single-record'], configured_props: { dataStore: 'crm', key: 'ada' } },
        { name: 'all', component_code: actions['delete-all-records'], configured_props: { dataStore: 'crm' } },
      ],
    });
    await run(api, reader, { set: { grace: 1, linus: 2 } });
    await api.post(`/v1/workflows/${cleanup.id}/run`, {});
    const [done] = await finishedRuns(cleanup.id, 1);
    expect(done.status, JSON.stringify(done)).toBe('succeeded');
    expect(done.steps[0].$return_value).toEqual({ plan: 'pro' });
    expect(done.steps[1].exports.$summary).toBe('Successfully deleted all records.');
    expect((await run(api, reader, {})).keys).toEqual([]);
  });
});

describe.each(DIALECTS)('data store records with a ttl on %s', (dialect) => {
  const clock = new ManualClock(Date.UTC(2030, 0, 1));
  let server: TestServer;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    server = await startTestServer(dialect, {}, { clock });
    api = client(server.url, (await server.createUser()).apiKey);
  });
  afterAll(async () => {
    await server?.destroy();
  });

  it('expire: they are no longer read or listed once their time has passed', async () => {
    const res = await api.post('/v1/sources', { component_code: STORE_SOURCE, configured_props: { store: 'cache' } });
    const sourceId = res.body.data.id;
    expect((await api.post(`/v1/sources/${sourceId}/run`, { set: { short: 1 }, ttl: 60 })).status).toBe(202);
    expect((await api.post(`/v1/sources/${sourceId}/run`, { set: { long: 2 } })).status).toBe(202);
    await waitFor(
      () => api.get('/v1/data_stores/cache/keys'),
      (r) => r.body.data?.keys.length === 2,
      { what: 'both records' },
    );
    clock.advance(61_000);
    expect((await api.get('/v1/data_stores/cache/keys')).body.data.keys).toEqual(['long']);
    expect((await api.get('/v1/data_stores')).body.data[0].key_count).toBe(1);
  });
});

describe.runIf(DIALECTS.includes('postgres'))('data store keys on a PostgreSQL database that sorts text by locale', () => {
  it('come in the order of their characters, as on SQLite, not in the order the locale reads them', async () => {
    const database = await createTestDatabase({ icuLocale: 'en' });
    const server = await startTestServer('postgres', { databaseUrl: database.url });
    try {
      const api = client(server.url, (await server.createUser()).apiKey);
      const res = await api.post('/v1/sources', { component_code: STORE_SOURCE, configured_props: { store: 'sorted' } });
      const id = res.body.data.id;
      expect((await api.post(`/v1/sources/${id}/run`, { set: { b: 1, B: 2, a: 3, A: 4, _: 5 } })).status).toBe(202);
      const listed = await waitFor(
        () => api.get('/v1/data_stores/sorted/keys'),
        (r) => r.body.data?.keys.length === 5,
        { what: 'the five keys' },
      );
      expect(listed.body.data.keys).toEqual(['A', 'B', '_', 'a', 'b']);
      expect((await api.post(`/v1/sources/${id}/run`, {})).status).toBe(202);
      const [seen] = await waitFor(
        async () => (await api.get(`/v1/sources/${id}/event_summaries?limit=10&expand=event`)).body.data,
        (data) => data.length === 2,
        { what: 'the second run' },
      );
      expect(seen.event.keys).toEqual(['A', 'B', '_', 'a', 'b']);
    } finally {
      await server.destroy();
      await database.drop();
    }
  });
});
