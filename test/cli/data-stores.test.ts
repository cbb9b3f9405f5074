// `tributary data-stores` against a real server: the account's stores (as `list data-stores` too), a store's keys, a
// record read as JSON, written from JSON and deleted, by name or id, whatever the key holds; and the refusals with
// their exit codes.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { type CliResult, runCli } from '../helpers/cli.js';
import { client } from '../helpers/client.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/** Sets each key of `event.set` to its value (with `event.ttl`, for that many seconds), then emits the keys it sees. */
const SOURCE = `module.exports = { name: "writer", version: "1.0.0", props: { store: { type: "data_store" } },
  async run(event) {
    for (const [key, value] of Object.entries(event.set ?? {})) await this.store.set(key, value, event.ttl ? { ttl: event.ttl } : undefined);
    this.$emit({ keys: await this.store.keys() });
  } };`;

const NOW = Date.UTC(2030, 0, 1);
const HINT = "hint: see the account's data stores with tributary data-stores list, and a store's keys with tributary data-stores keys <store>\n";

describe('tributary data-stores', () => {
  const clock = new ManualClock(NOW);
  let server: TestServer;
  let key: string;
  let dir: string;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    server = await startTestServer('sqlite', {}, { clock });
    key = (await server.createUser({ plan: 'paid' })).apiKey;
    api = client(server.url, key);
    dir = tempDir('tributary-data-stores-');
  });
  afterAll(async () => {
    await server?.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const tributary = (args: string[], as = key): Promise<CliResult> =>
    runCli(args, {
      env: { PATH: process.env.PATH ?? '', HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'config'), TRIBUTARY_URL: server.url, TRIBUTARY_KEY: as },
      cwd: dir,
    });

  /** A source writing the store `store`, run once with `event`, to its emit: its id. */
  async function write(store: string, event: object): Promise<string> {
    const created = await api.post('/v1/sources', { component_code: SOURCE, configured_props: { store } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.data.id;
    expect((await api.post(`/v1/sources/${id}/run`, event)).status).toBe(202);
    await waitFor(
      () => api.get(`/v1/sources/${id}/event_summaries`),
      (res) => res.body.data.length === 1,
      { what: `the write to ${store}` },
    );
    return id;
  }

  it('lists none yet, then the stores with their key counts, as a table and as JSON lines', async () => {
    expect(await tributary(['data-stores', 'list'])).toEqual({ code: 0, stdout: '', stderr: 'no data-stores\n' });
    await write('orders', { set: { plain: { total: 3, items: ['a', null] }, count: 2 } });
    await write('sessions', { set: { s1: true } });
    const stores = (await api.get('/v1/data_stores')).body.data as Array<{ id: string; name: string }>;
    const [sessions, orders] = stores;
    expect(stores.map((s) => s.name)).toEqual(['sessions', 'orders']);
    const table = [
      `${'ID'.padEnd(sessions!.id.length)}  NAME      KEYS  UPDATED`,
      `${sessions!.id}  sessions  1     2030-01-01T00:00:00Z`,
      `${orders!.id}  orders    2     2030-01-01T00:00:00Z`,
      '',
    ].join('\n');
    expect(await tributary(['data-stores', 'list'])).toEqual({ code: 0, stdout: table, stderr: '' });
    // The same list through `list`, which takes every kind.
    expect(await tributary(['list', 'data-stores'])).toEqual({ code: 0, stdout: table, stderr: '' });
    const json = await tributary(['data-stores', 'list', '--json']);
    expect([
      json.code,
      json.stderr,
      json.stdout
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line)),
    ]).toEqual([0, '', stores]);
  });

  it("prints a store's keys in key order, one a line, a key with a line break as its JSON string; by name or id", async () => {
    await write('keys', { set: { 'é 😀': 1, plain: 2, 'line\nbreak': 3, '-draft': 4, 'a/b': 5, '\u001b[31mred': 6 } });
    const lines = ['"\\u001b[31mred"', '-draft', 'a/b', '"line\\nbreak"', 'plain', 'é 😀', ''].join('\n');
    expect(await tributary(['data-stores', 'keys', 'keys'])).toEqual({ code: 0, stdout: lines, stderr: '' });
    const { id } = (await api.get('/v1/data_stores/keys/keys')).body.data;
    expect(await tributary(['data-stores', 'keys', id])).toEqual({ code: 0, stdout: lines, stderr: '' });
    const json = await tributary(['data-stores', 'keys', 'keys', '--json']);
    expect([
      json.code,
      json.stdout
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line)),
    ]).toEqual([0, ['\u001b[31mred', '-draft', 'a/b', 'line\nbreak', 'plain', 'é 😀']]);
  });

  it("reads a record's value as indented JSON, its expiry on standard error, or the whole record with --json", async () => {
    await write('records', { set: { plain: { total: 3, items: ['a', null] }, nothing: null, '?x=1&y=2#f +': 'query', '..': 'dots' } });
    await write('records', { set: { short: 'lived' }, ttl: 60 });
    expect(await tributary(['data-stores', 'get', 'records', 'plain'])).toEqual({
      code: 0,
      stdout: '{\n  "total": 3,\n  "items": [\n    "a",\n    null\n  ]\n}\n',
      stderr: '',
    });
    expect(await tributary(['data-stores', 'get', 'records', 'nothing'])).toEqual({ code: 0, stdout: 'null\n', stderr: '' });
    expect(await tributary(['data-stores', 'get', 'records', '?x=1&y=2#f +'])).toEqual({ code: 0, stdout: '"query"\n', stderr: '' });
    expect(await tributary(['data-stores', 'get', 'records', '..'])).toEqual({ code: 0, stdout: '"dots"\n', stderr: '' });
    expect(await tributary(['data-stores', 'get', 'records', 'short'])).toEqual({
      code: 0,
      stdout: '"lived"\n',
      stderr: 'expires at 2030-01-01T00:01:00.000Z\n',
    });
    expect(await tributary(['data-stores', 'get', 'records', 'short', '--json'])).toEqual({
      code: 0,
      stdout: `${JSON.stringify({ key: 'short', value: 'lived', expires_at: NOW / 1000 + 60, expires_at_ms: NOW + 60_000 })}\n`,
      stderr: '',
    });
    expect(await tributary(['data-stores', 'get', 'records', 'plain', '--json'])).toEqual({
      code: 0,
      stdout: '{"key":"plain","value":{"total":3,"items":["a",null]}}\n',
      stderr: '',
    });
  });

  it('reads and deletes in a store named "." or "..", which a path cannot name, through its id', async () => {
    await write('..', { set: { k: 'in dots' } });
    expect(await tributary(['data-stores', 'get', '..', 'k'])).toEqual({ code: 0, stdout: '"in dots"\n', stderr: '' });
    expect(await tributary(['data-stores', 'keys', '..'])).toEqual({ code: 0, stdout: 'k\n', stderr: '' });
    expect(await tributary(['data-stores', 'delete', '..', 'k'])).toEqual({ code: 0, stdout: 'deleted key "k" from data store ".."\n', stderr: '' });
    expect(await tributary(['data-stores', 'keys', '..'])).toEqual({ code: 0, stdout: '', stderr: 'no keys in data store ".."\n' });
    expect(await tributary(['data-stores', 'keys', '.'])).toEqual({ code: 3, stdout: '', stderr: `error: data store "." not found (404 not_found)\n${HINT}` });
    // Into one that is there, set goes by its id too; one not there yet cannot be made over the API, and set says why.
    expect(await tributary(['data-stores', 'set', '..', 'j', '2'])).toEqual({ code: 0, stdout: 'set key "j" of data store ".."\n', stderr: '' });
    expect((await api.get('/v1/data_stores?limit=100')).body.data.filter((s: { name: string }) => s.name === '..')).toMatchObject([{ key_count: 1 }]);
    expect(await tributary(['data-stores', 'set', '.', 'j', '2'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'error: there is no data store "." to set a key in, and a store of that name cannot be made from here: a URL path cannot name it (a segment "." is resolved away before it is sent); the first set() of a data_store prop naming it makes it, and then tributary data-stores set finds it by its id\n',
    });
  });

  it('deletes a record (a key beginning with a dash after --); a key or store not there is a 404, exit 3, with where to look', async () => {
    await write('doomed', { set: { '-draft': 1, kept: 2 } });
    expect(await tributary(['data-stores', 'delete', 'doomed', '--', '-draft'])).toEqual({
      code: 0,
      stdout: 'deleted key "-draft" from data store "doomed"\n',
      stderr: '',
    });
    expect(await tributary(['data-stores', 'keys', 'doomed'])).toEqual({ code: 0, stdout: 'kept\n', stderr: '' });
    const gone = `error: key "-draft" of data store "doomed" not found (404 not_found)\n${HINT}`;
    expect(await tributary(['data-stores', 'get', 'doomed', '--', '-draft'])).toEqual({ code: 3, stdout: '', stderr: gone });
    expect(await tributary(['data-stores', 'delete', 'doomed', '--', '-draft'])).toEqual({ code: 3, stdout: '', stderr: gone });
    const noStore = `error: data store "nope" not found (404 not_found)\n${HINT}`;
    for (const args of [
      ['keys', 'nope'],
      ['get', 'nope', 'kept'],
      ['delete', 'nope', 'kept'],
    ]) {
      expect(await tributary(['data-stores', ...args]), args.join(' ')).toEqual({ code: 3, stdout: '', stderr: noStore });
    }
    // Another account's store is not there for this one.
    const other = (await server.createUser()).apiKey;
    expect(await tributary(['data-stores', 'get', 'doomed', 'kept'], other)).toEqual({
      code: 3,
      stdout: '',
      stderr: `error: data store "doomed" not found (404 not_found)\n${HINT}`,
    });
    expect(await tributary(['data-stores', 'get', 'doomed', 'kept'])).toEqual({ code: 0, stdout: '2\n', stderr: '' });
  });

  it('describes a store by its id, and deletes it with all its records (tributary delete ds_…)', async () => {
    await write('whole', { set: { a: 1, b: 2 } });
    const { id } = (await api.get('/v1/data_stores/whole')).body.data;
    const described = await tributary(['describe', id, '--json']);
    expect(described.code).toBe(0);
    expect(JSON.parse(described.stdout)).toMatchObject({ id, name: 'whole', key_count: 2 });
    expect(await tributary(['delete', id])).toEqual({ code: 0, stdout: `deleted ${id}\n`, stderr: '' });
    expect((await tributary(['data-stores', 'keys', 'whole'])).stderr).toBe(`error: data store "whole" not found (404 not_found)\n${HINT}`);
    expect((await tributary(['delete', id])).code).toBe(3);
  });

  it('writes a record from its JSON value, with --ttl, by name or id, a key or negative value after --; a component reads it', async () => {
    const set = (store: string, key: string) => `set key ${JSON.stringify(key)} of data store ${JSON.stringify(store)}\n`;
    expect(await tributary(['data-stores', 'set', 'written', 'customer 42', '{"total": 3, "items": ["a", null]}'])).toEqual({
      code: 0,
      stdout: set('written', 'customer 42'),
      stderr: '',
    });
    expect((await api.get('/v1/data_stores/written/records?key=customer%2042')).body).toEqual({
      data: { key: 'customer 42', value: { total: 3, items: ['a', null] } },
    });
    expect(await tributary(['data-stores', 'set', '--ttl', '60', 'written', 'token', '"abc"'])).toEqual({
      code: 0,
      stdout: 'set key "token" of data store "written", expiring at 2030-01-01T00:01:00.000Z\n',
      stderr: '',
    });
    expect(await tributary(['data-stores', 'get', 'written', 'token'])).toEqual({
      code: 0,
      stdout: '"abc"\n',
      stderr: 'expires at 2030-01-01T00:01:00.000Z\n',
    });
    expect(await tributary(['data-stores', 'set', 'written', '--', '-draft', '-1'])).toEqual({ code: 0, stdout: set('written', '-draft'), stderr: '' });
    const { id } = (await api.get('/v1/data_stores/written/keys')).body.data;
    expect(await tributary(['data-stores', 'set', id, 'nothing', 'null'])).toEqual({ code: 0, stdout: set(id, 'nothing'), stderr: '' });
    expect(await tributary(['data-stores', 'keys', 'written'])).toEqual({ code: 0, stdout: '-draft\ncustomer 42\nnothing\ntoken\n', stderr: '' });
    // A run of a component that names the store reads what the CLI wrote.
    const source = await write('written', {});
    const [emitted] = (await api.get(`/v1/sources/${source}/event_summaries?expand=event`)).body.data;
    expect(emitted.event).toEqual({ keys: ['-draft', 'customer 42', 'nothing', 'token'] });
    expect(await tributary(['data-stores', 'get', 'written', '--', '-draft'])).toEqual({ code: 0, stdout: '-1\n', stderr: '' });
  });

  it("refuses a value that is not JSON or a --ttl that is no number before any request, and says the server's refusals", async () => {
    const usage = 'tributary data-stores set <store> <key> <json-value> [--ttl seconds]';
    const reason = (text: string) => {
      try {
        JSON.parse(text);
      } catch (error) {
        return (error as Error).message;
      }
    };
    for (const text of ['abc', '{a: 1}', '']) {
      expect(await tributary(['data-stores', 'set', 'refused', 'k', text]), text).toEqual({
        code: 2,
        stdout: '',
        stderr: `error: the value is not JSON (${reason(text)}); a string goes in double quotes, as '"text"': ${usage}\n`,
      });
    }
    // A number past a double parses as Infinity, which the request would carry as null.
    for (const text of ['1e400', '{"total": 3, "big": -1e999}']) {
      expect(await tributary(['data-stores', 'set', 'refused', 'k', text]), text).toEqual({
        code: 2,
        stdout: '',
        stderr: `error: the value holds a number past the largest a JSON number may be (about 1.8e308), which reads as Infinity and would be stored as null: ${usage}\n`,
      });
    }
    expect(await tributary(['data-stores', 'set', '--ttl', 'soon', 'refused', 'k', '1'])).toEqual({
      code: 2,
      stdout: '',
      stderr: `error: --ttl takes a number of seconds, not "soon": ${usage}\n`,
    });
    expect(await tributary(['data-stores', 'set', 'refused', '', '1'])).toEqual({ code: 2, stdout: '', stderr: `error: the key may not be empty: ${usage}\n` });
    const missing = await tributary(['data-stores', 'set', 'refused', 'k']);
    expect([missing.code, missing.stderr.split('\n')[0]]).toEqual([2, "error: missing required argument 'json-value'"]);
    const ttl = 'a data store ttl is a positive number of seconds (or null for none), not 0';
    expect(await tributary(['data-stores', 'set', '--ttl', '0', 'refused', 'k', '1'])).toEqual({
      code: 2,
      stdout: '',
      stderr: `error: ${ttl} (400 invalid_request)\n  ttl: ${ttl}\n`,
    });
    expect(await tributary(['data-stores', 'set', 'ds_01jzzzzzzzzzzzzzzzzzzzzzzz', 'k', '1'])).toEqual({
      code: 3,
      stdout: '',
      stderr: `error: data store "ds_01jzzzzzzzzzzzzzzzzzzzzzzz" not found (404 not_found)\n${HINT}`,
    });
    expect((await api.get('/v1/data_stores/refused/keys')).status).toBe(404);
  });

  it('refuses missing or empty arguments with a usage line and exit 2, before any request', async () => {
    const missing = await tributary(['data-stores', 'get', 'orders']);
    expect([missing.code, missing.stdout, missing.stderr.split('\n').slice(0, 3)]).toEqual([
      2,
      '',
      ["error: missing required argument 'key'", '', 'Usage: tributary data-stores get [options] <store> <key>'],
    ]);
    expect(await tributary(['data-stores', 'get', 'orders', ''])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'error: the key may not be empty: tributary data-stores get <store> <key>\n',
    });
    expect(await tributary(['data-stores', 'delete', '', 'k'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'error: the store may not be empty: tributary data-stores delete <store> <key>\n',
    });
    expect(await tributary(['data-stores', 'keys', ''])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'error: the store may not be empty: tributary data-stores keys <store>\n',
    });
    // The help says each command and how a key with a leading dash is given.
    const help = (await tributary(['data-stores', '--help'])).stdout.replace(/\s+/g, ' ');
    for (const said of [
      'list [options] list the data stores with their key counts, newest first (the same as tributary list data-stores)',
      "keys [options] <store> a store's keys in key order, one a line",
      "get [options] <store> <key> a record's value as JSON (indented); when it has a ttl, standard error says when it expires",
      "set [options] <store> <key> <json-value> write a record, as a component's set(key, value, { ttl }) would",
      "delete [options] <store> <key> delete a record, as a component's delete(key) would",
      'put -- before arguments that begin with a dash',
    ]) {
      expect(help).toContain(said);
    }
    expect((await tributary(['--help'])).stdout).toMatch(/^ {2}data-stores {2,}the account's data stores/m);
    const unknown = await tributary(['data-stores', 'put', 'orders', 'k']);
    expect([unknown.code, unknown.stderr.split('\n')[0]]).toEqual([2, "error: unknown command 'put'"]);
    // A key past what a store takes is the server's 400, exit 2, naming the parameter.
    expect(await tributary(['data-stores', 'get', 'orders', 'k'.repeat(1025)])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'error: invalid querystring: key must NOT have more than 1024 characters (400 invalid_request)\n  key: must NOT have more than 1024 characters\n',
    });
  });
});
