// One data store record over the API: GET and DELETE /v1/data_stores/{store}/records?key= read a key's value and remove
// it for the store's account only, whatever the key holds, and a delete moves the store's byte count as a
// component's delete does, so that a store filled to its 4 MB through a component takes writes again.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { client } from '../helpers/client.js';
import { deployStoreSource, recordPath, runStoreSource } from '../helpers/data-store-sources.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Sets each key of `event.set` to its value, or with `event.fill` to that many "x" characters (a value the run makes,
 * too large to send as an event), then emits the keys it sees; a write it is refused fails the run.
 */
const SOURCE = `module.exports = { name: "records", version: "1.0.0", props: { store: { type: "data_store" } },
  async run(event) {
    for (const [key, value] of Object.entries(event.set ?? {})) await this.store.set(key, value, event.ttl ? { ttl: event.ttl } : undefined);
    for (const [key, size] of Object.entries(event.fill ?? {})) await this.store.set(key, "x".repeat(size));
    this.$emit({ keys: await this.store.keys() });
  } };`;

const notFound = (what: string) => ({ error: `${what} not found`, code: 'not_found' });

describe.each(DIALECTS)('data store records over the API on %s', (dialect) => {
  const clock = new ManualClock(Date.UTC(2030, 0, 1));
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
  const run = (sourceId: string, event: object) => runStoreSource<{ keys?: string[] }>(api, sourceId, event);

  it('reads any key and deletes it (204), with 404 for a missing, deleted or expired key and for another account', async () => {
    const source = await deploy('records');
    // Keys a path segment could not carry (`/`, `%`, `.` and `..`, which clients resolve away), and query syntax.
    const values: Record<string, unknown> = {
      plain: { deep: [1, null, 'two'] },
      'a/b/': 1,
      '100%': '%41',
      '.': 'dot',
      '..': 'dots',
      '?x=1&y=2#frag +': true,
      'é 😀': null,
    };
    expect(await run(source, { set: values })).toEqual({ keys: expect.arrayContaining(Object.keys(values)) });
    expect(await run(source, { set: { short: 'lived' }, ttl: 60 })).toEqual({ keys: expect.arrayContaining(['short']) });
    for (const [key, value] of Object.entries(values)) {
      const res = await api.get(recordPath('records', key));
      expect([res.status, res.body], key).toEqual([200, { data: { key, value } }]);
    }
    const expiresMs = Date.UTC(2030, 0, 1) + 60_000;
    const short = await api.get(recordPath('records', 'short'));
    expect([short.status, short.body]).toEqual([200, { data: { key: 'short', value: 'lived', expires_at: expiresMs / 1000, expires_at_ms: expiresMs } }]);
    const { id } = (await api.get('/v1/data_stores/records/keys')).body.data;
    expect((await api.get(`/v1/data_stores/${id}/records?key=plain`)).body).toEqual({ data: { key: 'plain', value: values.plain } });

    const missing = await api.get(recordPath('records', 'nope'));
    expect([missing.status, missing.body]).toEqual([404, notFound('key "nope" of data store "records"')]);
    expect((await api.get(recordPath('never-written', 'plain'))).body).toEqual(notFound('data store "never-written"'));
    const noKey = await api.get('/v1/data_stores/records/records');
    expect([noKey.status, noKey.body.code]).toEqual([400, 'invalid_request']);

    // Another account names the store by id or by a name of its own: neither reaches this one's records.
    const other = client(server.url, (await server.createUser()).apiKey);
    for (const call of [other.get, other.delete])
      for (const [store, what] of [
        [id, `data store "${id}"`],
        ['records', 'data store "records"'],
      ]) {
        const res = await call(recordPath(store, '..'));
        expect([res.status, res.body]).toEqual([404, notFound(what)]);
      }

    for (const key of ['..', 'a/b/', '100%']) {
      const deleted = await api.delete(recordPath('records', key));
      expect([deleted.status, deleted.text], key).toEqual([204, '']);
      const again = await api.delete(recordPath('records', key));
      expect([again.status, again.body], key).toEqual([404, notFound(`key ${JSON.stringify(key)} of data store "records"`)]);
      expect((await api.get(recordPath('records', key))).status, key).toBe(404);
    }
    expect((await api.get(recordPath('records', '.'))).body.data.value).toBe('dot');
    expect((await api.get('/v1/data_stores/records/keys')).body.data.keys).toEqual(['.', '?x=1&y=2#frag +', 'plain', 'short', 'é 😀']);
    // A component sees what the API deleted gone.
    expect((await run(source, {})).keys).toEqual(['.', '?x=1&y=2#frag +', 'plain', 'short', 'é 😀']);

    clock.advance(61_000);
    expect((await api.get(recordPath('records', 'short'))).body).toEqual(notFound('key "short" of data store "records"'));
    expect((await api.delete(recordPath('records', 'short'))).status).toBe(404);
    expect((await api.delete(recordPath('records', 'nope'))).status).toBe(404);
  });

  it('refuses a key that is not valid percent-encoded UTF-8 with a 400, rather than reading or writing its raw text as the key', async () => {
    expect((await api.put(recordPath('encoded', 'kept'), { value: 1 })).status).toBe(200);
    for (const raw of ['%FF', '%ED%A0%80', '50%', 'a%2']) {
      const refused = {
        error: `query.key holds %-escapes that are not UTF-8 (${raw}): percent-encode the UTF-8 bytes of the text, and a % itself as %25`,
        code: 'invalid_request',
      };
      const path = `/v1/data_stores/encoded/records?key=${raw}`;
      const answers = [await api.get(path), await api.put(path, { value: 2 }), await api.delete(path)];
      expect(
        answers.map((res) => [res.status, res.body]),
        raw,
      ).toEqual([
        [400, refused],
        [400, refused],
        [400, refused],
      ]);
    }
    expect((await api.get('/v1/data_stores/encoded/keys')).body.data.keys).toEqual(['kept']);
  });

  it('answers a store address past the longest path segment with a 400 that gives the limit the router applies', async () => {
    const longest = 'n'.repeat(1800);
    expect((await api.get(`/v1/data_stores/${longest}`)).body).toEqual({
      error: `data store "${'n'.repeat(100)}"… (1800 characters) not found`,
      code: 'not_found',
    });
    for (const [what, path] of Object.entries({
      store: `/v1/data_stores/${longest}n`,
      keys: `/v1/data_stores/${longest}n/keys`,
      record: recordPath(`${longest}n`, 'k'),
    })) {
      const res = await api.get(path);
      expect([res.status, res.body], what).toEqual([400, { error: 'a path segment is longer than 1800 characters', code: 'invalid_request' }]);
    }
  });

  it("moves the store's byte count: a store a component filled to its limit takes exactly what a deleted record held", async () => {
    const source = await deploy('full');
    // Four records of 1,000,004 bytes (a 2-byte key, a 1,000,002-byte JSON string) and one of 150,003: 4,150,019 bytes.
    expect(await run(source, { fill: { f0: 1_000_000, f1: 1_000_000, f2: 1_000_000, f3: 1_000_000 } })).toEqual({ keys: ['f0', 'f1', 'f2', 'f3'] });
    expect(await run(source, { fill: { g: 150_000 } })).toEqual({ keys: ['f0', 'f1', 'f2', 'f3', 'g'] });
    // 50,003 bytes more would be 4,200,022, past 4,194,304.
    expect((await run(source, { fill: { h: 50_000 } })).error).toMatch(/^RangeError: .*4194304/);

    const deleted = await api.delete(recordPath('full', 'f0'));
    expect([deleted.status, deleted.text]).toEqual([204, '']);
    // 3,150,015 bytes left: room for exactly 1,044,289 more, a 1-byte key and a 1,044,288-byte JSON string. The commit
    // checks the store's count, not its records: a count the delete had not moved would refuse this write.
    expect(await run(source, { fill: { h: 1_044_286 } })).toEqual({ keys: ['f1', 'f2', 'f3', 'g', 'h'] });
    expect((await run(source, { fill: { i: 0 } })).error).toMatch(/^RangeError: .*4194304/);
    expect((await api.get('/v1/data_stores/full/keys')).body.data.keys).toEqual(['f1', 'f2', 'f3', 'g', 'h']);
  });
});

describe.runIf(DIALECTS.includes('postgres'))('a data store record deleted over the API beside a commit writing the store (PostgreSQL)', () => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  let db: pg.Client;

  beforeAll(async () => {
    server = await startTestServer('postgres');
    api = client(server.url, (await server.createUser()).apiKey);
    db = new pg.Client({ connectionString: server.databaseUrl });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await server?.destroy();
  });

  /** The store's count, and its records summed as the database measures them. */
  async function sizes(storeId: string) {
    const { rows } = await db.query(
      'select bytes, (select coalesce(sum(octet_length(key) + octet_length(value)), 0) from data_store_records where store_id = $1) as summed from data_stores where id = $1',
      [storeId],
    );
    return { count: Number(rows[0].bytes), summed: Number(rows[0].summed) };
  }

  /**
   * Holds the store's row as a commit writing it does, starts the API's delete of `key`, and once that waits on the
   * row runs `meanwhile` in the holding transaction and commits it: what the delete then answers.
   */
  async function deleteBehindACommit(storeId: string, key: string, meanwhile: () => Promise<void>) {
    await db.query('begin');
    await db.query('select id from data_stores where id = $1 for update', [storeId]);
    const pending = api.delete(recordPath('held', key));
    await waitFor(
      async () => {
        // Sessions that this transaction holds up: the delete's, on the store's row, and nothing else of the server's.
        const waiting = await db.query('select count(*) as n from pg_stat_activity where pg_backend_pid() = any(pg_blocking_pids(pid))');
        return Number(waiting.rows[0].n);
      },
      (waiting) => waiting === 1,
      { what: "the delete to wait on the store's row" },
    );
    await meanwhile();
    await db.query('commit');
    return pending;
  }

  it("takes its turn on the store's row, and counts from what the commit before it left", async () => {
    const deployed = await api.post('/v1/sources', { component_code: SOURCE, configured_props: { store: 'held' } });
    expect((await api.post(`/v1/sources/${deployed.body.data.id}/run`, { set: { a: 'aaaa', b: 'bb' } })).status).toBe(202);
    const { id } = (
      await waitFor(
        () => api.get('/v1/data_stores/held/keys'),
        (res) => res.body.data?.keys.length === 2,
        { what: 'the run to write the store' },
      )
    ).body.data;
    // a: 1 + 6 bytes, b: 1 + 4.
    expect(await sizes(id)).toEqual({ count: 12, summed: 12 });

    // A commit that deletes "a" first: the API's delete then finds it gone, a 404 that takes nothing off the count.
    const late = await deleteBehindACommit(id, 'a', async () => {
      await db.query("delete from data_store_records where store_id = $1 and key = 'a'", [id]);
      await db.query('update data_stores set bytes = bytes - 7 where id = $1', [id]);
    });
    expect([late.status, late.body]).toEqual([404, notFound('key "a" of data store "held"')]);
    expect(await sizes(id)).toEqual({ count: 5, summed: 5 });

    // A commit that sets "c" (1 + 5 bytes) first: the delete of "b" counts from the store that commit left.
    const after = await deleteBehindACommit(id, 'b', async () => {
      await db.query(`insert into data_store_records (store_id, key, value) values ($1, 'c', '"ccc"')`, [id]);
      await db.query('update data_stores set bytes = bytes + 6 where id = $1', [id]);
    });
    expect(after.status).toBe(204);
    expect(await sizes(id)).toEqual({ count: 6, summed: 6 });
    expect((await api.get('/v1/data_stores/held/keys')).body.data.keys).toEqual(['c']);
  });
});
