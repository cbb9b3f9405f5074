// One data store record written over the API: PUT /v1/data_stores/{store}/records?key= sets it as a component's
// set(key, value, { ttl }) does (what a component then reads, the ttl, the store's byte count, the same refusals in the
// same words), makes a store named for the first time, and reaches no other account's store.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { newId } from '../../src/model/ids.js';
import { quote } from '../../src/runtime/worker/quote.js';
import { client } from '../helpers/client.js';
import { deployStoreSource, recordPath, runStoreSource } from '../helpers/data-store-sources.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Sets each of `event.set` (`{ key, value }`, or `{ key, fill }` for that many "x" characters, with `ttl` as set()'s
 * option when given), then emits the keys it sees and the values of `event.get`; a set it is refused fails the run.
 */
const SOURCE = `module.exports = { name: "writer", version: "1.0.0", props: { store: { type: "data_store" } },
  async run(event) {
    for (const w of event.set ?? []) await this.store.set(w.key, w.fill === undefined ? w.value : "x".repeat(w.fill), w.ttl === undefined ? undefined : { ttl: w.ttl });
    const values = {};
    for (const key of event.get ?? []) values[key] = await this.store.get(key);
    this.$emit({ keys: await this.store.keys(), values });
  } };`;

const NOW = Date.UTC(2030, 0, 1);
const refused = (part: string, field: string, message: string) => ({ error: message, code: 'invalid_request', details: [{ in: part, field, message }] });

describe.each(DIALECTS)('a data store record written over the API on %s', (dialect) => {
  const clock = new ManualClock(NOW);
  let server: TestServer;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    server = await startTestServer(dialect, {}, { clock });
    api = client(server.url, (await server.createUser({ plan: 'paid' })).apiKey);
  });
  afterAll(async () => {
    await server?.destroy();
  });
  const deploy = (store: string) => deployStoreSource(api, SOURCE, store);
  const run = (sourceId: string, event: object) => runStoreSource<{ keys?: string[]; values?: Record<string, unknown> }>(api, sourceId, event);

  it('writes a record a component then reads, answered as GET answers it, in a store it makes by name or finds by id', async () => {
    const values: Record<string, unknown> = { plain: { deep: [1, null, 'two'] }, 'a/b/': 1, '..': 'dots', '?x=1&y=2#f +': true, 'é 😀': null };
    for (const [key, value] of Object.entries(values)) {
      const res = await api.put(recordPath('seeded', key), { value });
      expect([res.status, res.body], key).toEqual([200, { data: { key, value } }]);
      const read = await api.get(recordPath('seeded', key));
      expect([read.status, read.body], key).toEqual([200, { data: { key, value } }]);
    }
    const [store] = (await api.get('/v1/data_stores')).body.data;
    expect(store).toEqual({ id: expect.stringMatching(/^ds_/), name: 'seeded', key_count: 5, created_at: NOW / 1000, updated_at: NOW / 1000 });

    // By id, over a record: the new value, with a ttl.
    const overwritten = await api.put(recordPath(store.id, 'plain'), { value: [1, 2], ttl: 60 });
    const expiring = { key: 'plain', value: [1, 2], expires_at: NOW / 1000 + 60, expires_at_ms: NOW + 60_000 };
    expect([overwritten.status, overwritten.body]).toEqual([200, { data: expiring }]);
    expect((await api.get(recordPath('seeded', 'plain'))).body).toEqual({ data: expiring });

    const source = await deploy('seeded');
    expect(await run(source, { get: Object.keys(values) })).toEqual({
      keys: ['..', '?x=1&y=2#f +', 'a/b/', 'plain', 'é 😀'],
      values: { ...values, plain: [1, 2] },
    });
    // Set again without a ttl, it keeps for ever, as set() without one.
    expect((await api.put(recordPath('seeded', 'plain'), { value: 'kept', ttl: null })).body).toEqual({ data: { key: 'plain', value: 'kept' } });
    clock.advance(61_000);
    expect((await api.get(recordPath('seeded', 'plain'))).body).toEqual({ data: { key: 'plain', value: 'kept' } });
    // What a component wrote the API overwrites, and the component reads that.
    expect(await run(source, { set: [{ key: 'from-run', value: 1 }] })).toMatchObject({ keys: expect.arrayContaining(['from-run']) });
    expect((await api.put(recordPath('seeded', 'from-run'), { value: { by: 'api' } })).status).toBe(200);
    expect((await run(source, { get: ['from-run'] })).values).toEqual({ 'from-run': { by: 'api' } });
  });

  it('expires a record written with a ttl: no longer read, listed or seen by a component', async () => {
    const res = await api.put(recordPath('ttl', 'short'), { value: 'lived', ttl: 1.5 });
    expect(res.body).toEqual({ data: { key: 'short', value: 'lived', expires_at: Math.ceil((clock.now() + 1500) / 1000), expires_at_ms: clock.now() + 1500 } });
    expect((await api.put(recordPath('ttl', 'long'), { value: 'stays' })).status).toBe(200);
    const source = await deploy('ttl');
    expect((await run(source, { get: ['short'] })).values).toEqual({ short: 'lived' });
    clock.advance(1500);
    expect((await api.get(recordPath('ttl', 'short'))).body).toEqual({ error: 'key "short" of data store "ttl" not found', code: 'not_found' });
    expect((await api.get('/v1/data_stores/ttl/keys')).body.data.keys).toEqual(['long']);
    expect(await run(source, { get: ['short'] })).toEqual({ keys: ['long'], values: {} });
  });

  it('keeps a record whose ttl is under half a millisecond for 1 ms, over the API as with set(), rather than storing it expired', async () => {
    const now = clock.now();
    const tiny = { key: 'tiny', value: 1, expires_at: Math.ceil((now + 1) / 1000), expires_at_ms: now + 1 };
    const res = await api.put(recordPath('tiny', 'tiny'), { value: 1, ttl: 0.0001 });
    expect([res.status, res.body]).toEqual([200, { data: tiny }]);
    expect((await api.get(recordPath('tiny', 'tiny'))).body).toEqual({ data: tiny });
    const source = await deploy('tiny');
    expect(await run(source, { set: [{ key: 'from-run', value: 2, ttl: 0.0001 }] })).toMatchObject({ keys: ['tiny', 'from-run'] });
    expect((await api.get(recordPath('tiny', 'from-run'))).body).toEqual({ data: { ...tiny, key: 'from-run', value: 2 } });
    clock.advance(1);
    expect((await api.get('/v1/data_stores/tiny/keys')).body.data.keys).toEqual([]);
  });

  it('refuses what set() refuses, in the words a component hears, changing nothing', async () => {
    const source = await deploy('rules');
    const euro = '€'.repeat(700);
    const cases: Array<{ key: string; value?: unknown; fill?: number; ttl?: number; part: string; field: string }> = [
      { key: 'k'.repeat(1025), value: 1, part: 'querystring', field: 'key' },
      { key: euro, value: 1, part: 'querystring', field: 'key' },
      { key: 'zero', value: 1, ttl: 0, part: 'body', field: 'ttl' },
      { key: 'negative', value: 1, ttl: -5, part: 'body', field: 'ttl' },
      { key: 'century', value: 1, ttl: 3_153_600_001, part: 'body', field: 'ttl' },
      { key: 'big', fill: 1_048_575, part: 'body', field: 'value' },
      { key: 'a"b', fill: 1_048_575, part: 'body', field: 'value' },
      { key: '😀'.repeat(120), fill: 1_048_575, part: 'body', field: 'value' },
      { key: `${'😀'.repeat(2)}${'k'.repeat(1023)}`, value: 1, part: 'querystring', field: 'key' },
    ];
    for (const { key, value, fill, ttl, part, field } of cases) {
      const { error } = await run(source, { set: [{ key, value, fill, ttl }] });
      const message = error!.replace(/^(TypeError|RangeError): /, '');
      const res = await api.put(recordPath('rules', key), { value: fill === undefined ? value : 'x'.repeat(fill), ...(ttl === undefined ? {} : { ttl }) });
      expect([res.status, res.body], key.slice(0, 20)).toEqual([400, refused(part, field, message)]);
    }
    expect(await run(source, { set: [{ key: '', value: 1 }] })).toEqual({ error: 'TypeError: data store keys must be non-empty strings' });
    expect((await api.put(recordPath('rules', ''), { value: 1 })).body).toEqual(refused('querystring', 'key', 'data store keys must be non-empty strings'));
    // The messages are those of the rules: spelled out once here, so that a change of both is seen.
    expect((await api.put(recordPath('rules', 'big'), { value: 'x'.repeat(1_048_575) })).body.error).toBe(
      'a data store value may be at most 1048576 bytes of JSON; "big" would be 1048577',
    );
    expect((await api.put(recordPath('rules', euro), { value: 1 })).body.error).toBe('data store keys may have at most 2048 bytes of UTF-8; this one has 2100');
    // A key in a message is JSON-quoted and cut to its first 100 characters, as every quoted value is.
    expect((await api.put(recordPath('rules', 'a"b'), { value: 'x'.repeat(1_048_575) })).body.error).toBe(
      'a data store value may be at most 1048576 bytes of JSON; "a\\"b" would be 1048577',
    );
    expect((await api.put(recordPath('rules', '😀'.repeat(120)), { value: 'x'.repeat(1_048_575) })).body.error).toBe(
      `a data store value may be at most 1048576 bytes of JSON; "${'😀'.repeat(100)}"… (120 characters) would be 1048577`,
    );
    // Characters are code points (what the API's maxLength counts): 1,025 of them are too many, an emoji being one.
    expect((await api.put(recordPath('rules', `${'😀'.repeat(2)}${'k'.repeat(1023)}`), { value: 1 })).body.error).toBe(
      'data store keys may have at most 1024 characters; this one has 1025',
    );
    // A value of exactly 1 MiB of JSON, and a ttl of exactly 100 years, are taken.
    expect((await api.put(recordPath('rules', 'edge'), { value: 'x'.repeat(1_048_574), ttl: 3_153_600_000 })).status).toBe(200);
    expect((await api.get('/v1/data_stores/rules/keys')).body.data.keys).toEqual(['edge']);
  });

  it('counts a store name in characters (code points), as its message does: 200 emoji name a store, 201 do not', async () => {
    const name = '😀'.repeat(200);
    const res = await api.put(recordPath(name, 'k'), { value: 'emoji' });
    expect([res.status, res.body]).toEqual([200, { data: { key: 'k', value: 'emoji' } }]);
    // A component's prop names the same store, and reads what the API wrote.
    const source = await deploy(name);
    expect(await run(source, { get: ['k'] })).toEqual({ keys: ['k'], values: { k: 'emoji' } });
    const over = await api.put(recordPath(`${name}😀`, 'k'), { value: 1 });
    const message = `a data store is named by a string of 1 to 200 characters (not blank, without control characters), not "${'😀'.repeat(100)}"… (201 characters)`;
    expect([over.status, over.body]).toEqual([400, refused('params', 'store', message)]);
    const prop = await api.post('/v1/sources', { component_code: SOURCE, configured_props: { store: `${name}😀` } });
    expect(prop.status).toBe(422);
  });

  it('refuses a number past a double in the value (1e400 parses as Infinity), rather than storing null in its place', async () => {
    const flaw = 'a number past the largest a JSON number may be (about 1.8e308: it reads as Infinity, and would be stored as null), which no field accepts';
    for (const [body, where] of [
      ['{"value": 1e400}', 'body.value'],
      ['{"value": {"total": 3, "big": -1e999}}', 'body.value.big'],
      ['{"value": [1, [2, 1e309]]}', 'body.value[1][1]'],
      ['{"value": 1, "ttl": 1e400}', 'body.ttl'],
    ]) {
      const res = await api.put(recordPath('unbounded', 'k'), undefined, { raw: { body: body!, contentType: 'application/json' } });
      expect([res.status, res.body], body).toEqual([400, { error: `${where} holds ${flaw}`, code: 'invalid_request' }]);
    }
    expect((await api.get('/v1/data_stores/unbounded')).status).toBe(404);
    // The largest double, and the smallest, are numbers JSON carries.
    const edge = await api.put(recordPath('unbounded', 'k'), undefined, {
      raw: { body: '{"value": [1.7976931348623157e308, 5e-324, 1e-400]}', contentType: 'application/json' },
    });
    expect([edge.status, edge.body]).toEqual([200, { data: { key: 'k', value: [1.7976931348623157e308, 5e-324, 0] } }]);
  });

  it("counts the store's bytes as set() does, an overwrite taking off what the record held, to the byte of its 4 MB", async () => {
    const source = await deploy('full');
    // Four records of 1,000,004 bytes (a 2-byte key, a 1,000,002-byte JSON string): 4,000,016 bytes.
    for (const key of ['f0', 'f1', 'f2', 'f3']) expect((await api.put(recordPath('full', key), { value: 'x'.repeat(1_000_000) })).status).toBe(200);
    // f0 again, 10 characters shorter: 4,000,006 bytes, which leaves 194,298: a 1-byte key and 194,297 bytes of JSON.
    expect((await api.put(recordPath('full', 'f0'), { value: 'x'.repeat(999_990) })).status).toBe(200);
    const over = await api.put(recordPath('full', 'h'), { value: 'x'.repeat(194_296) });
    const { error } = await run(source, { set: [{ key: 'h', fill: 194_296 }] });
    expect(error).toBe('RangeError: data store "full" may hold at most 4194304 bytes of JSON');
    expect([over.status, over.body]).toEqual([400, refused('body', 'value', 'data store "full" may hold at most 4194304 bytes of JSON')]);
    expect((await api.get('/v1/data_stores/full/keys')).body.data.keys).toEqual(['f0', 'f1', 'f2', 'f3']);
    // One character less fits exactly, and the store is then full: a component's set of an empty string is refused.
    const fits = await api.put(recordPath('full', 'h'), { value: 'x'.repeat(194_295) });
    expect([fits.status, fits.body.data.key]).toEqual([200, 'h']);
    expect(await run(source, { set: [{ key: 'i', value: '' }] })).toEqual({ error: 'RangeError: data store "full" may hold at most 4194304 bytes of JSON' });
    expect((await api.put(recordPath('full', 'i'), { value: '' })).body).toEqual(
      refused('body', 'value', 'data store "full" may hold at most 4194304 bytes of JSON'),
    );
    // Deleting f1 (1,000,004 bytes) makes that much room, for the component and for the API alike.
    expect((await api.delete(recordPath('full', 'f1'))).status).toBe(204);
    expect((await api.put(recordPath('full', 'i'), { value: 'x'.repeat(999_999) })).status).toBe(200);
    expect((await run(source, { set: [{ key: 'j', value: '' }] })).error).toBe('RangeError: data store "full" may hold at most 4194304 bytes of JSON');
    expect((await api.put(recordPath('full', 'i'), { value: 'x'.repeat(1_000_002) })).status).toBe(400);
    expect((await run(source, { get: [] })).keys).toEqual(['f0', 'f2', 'f3', 'h', 'i']);
  });

  it("answers 404 for an id the account has not (another account's too), and writes its own store of a shared name", async () => {
    expect((await api.put(recordPath('mine', 'k'), { value: 'mine' })).status).toBe(200);
    const { id } = (await api.get('/v1/data_stores/mine/keys')).body.data;
    const other = client(server.url, (await server.createUser()).apiKey);
    const missing = newId('ds');
    for (const store of [id, missing]) {
      const res = await other.put(recordPath(store, 'k'), { value: 'theirs' });
      expect([res.status, res.body]).toEqual([404, { error: `data store "${store}" not found`, code: 'not_found' }]);
    }
    expect((await api.put(recordPath(missing, 'k'), { value: 1 })).body).toEqual({ error: `data store "${missing}" not found`, code: 'not_found' });
    expect((await other.get('/v1/data_stores')).body.data).toEqual([]);
    // By name, another account makes a store of its own: the first one's record is not touched.
    expect((await other.put(recordPath('mine', 'k'), { value: 'theirs' })).body).toEqual({ data: { key: 'k', value: 'theirs' } });
    expect((await other.get('/v1/data_stores')).body.data.map((s: { id: string }) => s.id)).not.toContain(id);
    expect((await api.get(recordPath('mine', 'k'))).body).toEqual({ data: { key: 'k', value: 'mine' } });
    // A name no data_store prop could give makes no store.
    for (const name of [' ', 'n'.repeat(201), 'tab\there', 'next\u0085line', 'csi\u009b2J', '\u0080']) {
      const message = `a data store is named by a string of 1 to 200 characters (not blank, without control characters), not ${quote(name)}`;
      expect((await other.put(recordPath(name, 'k'), { value: 1 })).body, JSON.stringify(name)).toEqual(refused('params', 'store', message));
    }
    expect((await other.get('/v1/data_stores')).body.data.map((s: { name: string }) => s.name)).toEqual(['mine']);
    // A data_store prop is held to the same rule when deployed: C1 control characters as C0 ones.
    for (const store of ['tab\there', 'next\u0085line']) {
      const deployed = await other.post('/v1/sources', { component_code: SOURCE, configured_props: { store } });
      expect([deployed.status, deployed.body.details], JSON.stringify(store)).toEqual([
        422,
        [{ prop: 'store', message: 'must name a data store: a string of 1 to 200 characters, or { name }' }],
      ]);
    }
  });

  it('refuses a body with an unknown field or without a value, a misspelt parameter and a ttl that is no number, writing nothing', async () => {
    const schema = (part: 'body' | 'querystring', field: string | undefined, message: string) => ({
      error: `invalid ${part}: ${field && !message.includes(field) ? `${field} ` : ''}${message}`,
      code: 'invalid_request',
      details: [{ in: part, ...(field === undefined ? {} : { field }), message }],
    });
    const answers = [
      await api.put(recordPath('strict', 'k'), { value: 1, tll: 60 }),
      await api.put(recordPath('strict', 'k'), { ttl: 60 }),
      await api.put(recordPath('strict', 'k'), { value: 1, ttl: '60' }),
      await api.put(`${recordPath('strict', 'k')}&tll=60`, { value: 1 }),
      await api.put('/v1/data_stores/strict/records', { value: 1 }),
      await api.put(recordPath('strict', 'k'), [1]),
    ];
    expect(answers.map((r) => [r.status, r.body])).toEqual([
      [400, schema('body', 'tll', 'must not have the field "tll"')],
      [400, schema('body', 'value', "must have required property 'value'")],
      [400, schema('body', 'ttl', 'must be number or null')],
      [400, schema('querystring', 'tll', 'must not have the field "tll"')],
      [400, schema('querystring', 'key', "must have required property 'key'")],
      [400, schema('body', undefined, 'must be object')],
    ]);
    expect((await api.get('/v1/data_stores/strict/keys')).body).toEqual({ error: 'data store "strict" not found', code: 'not_found' });
  });
});
