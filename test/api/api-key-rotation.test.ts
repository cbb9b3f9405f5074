// POST /v1/users/me/api_key (extension): a new key, returned once; the old key stops working at once, live streams
// opened with it included.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, rawStream, request } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { BIN } from '../helpers/processes.js';
import { KEY_LOOK_MS } from '../../src/delivery/cluster-signals.js';

describe.each(DIALECTS)('API key rotation (%s)', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(dialect);
  });
  afterAll(async () => server?.destroy());

  it('returns a new key that works, and the old one answers 401', async () => {
    const user = await server.createUser();
    const other = await server.createUser();
    const res = await client(server.url, user.apiKey).post('/v1/users/me/api_key');
    expect(res.status).toBe(200);
    expect(res.body.data.api_key).toMatch(/^trb_[\w-]{32}$/);
    expect(res.body.data.api_key).not.toBe(user.apiKey);
    const old = await client(server.url, user.apiKey).get('/v1/users/me');
    expect(old.status).toBe(401);
    expect(old.body.code).toBe('unauthorized');
    const fresh = await client(server.url, res.body.data.api_key).get('/v1/users/me');
    expect(fresh.status).toBe(200);
    expect(fresh.body.data.id).toBe(user.id);
    expect(fresh.body.data.api_key).toBe(res.body.data.api_key);
    // Another account's key is untouched.
    expect((await client(server.url, other.apiKey).get('/v1/users/me')).body.data.id).toBe(other.id);
  });

  it('works for paid accounts, needs a key, and is in the OpenAPI document as an extension', async () => {
    const paid = await server.createUser({ plan: 'paid' });
    const res = await client(server.url, paid.apiKey).post('/v1/users/me/api_key');
    expect(res.status).toBe(200);
    expect((await client(server.url, res.body.data.api_key).get('/v1/users/me')).status).toBe(200);
    const anonymous = await request('POST', `${server.url}/v1/users/me/api_key`);
    expect(anonymous.status).toBe(401);
    const openapi = await client(server.url, res.body.data.api_key).get('/v1/openapi.json');
    expect(openapi.body.paths['/v1/users/me/api_key'].post.tags).toEqual(['users', 'extensions']);
  });

  it('refuses a body that is not the field selection', async () => {
    const user = await server.createUser();
    const res = await client(server.url, user.apiKey).post('/v1/users/me/api_key', { api_key: 'trb_chosen' });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_request');
    expect((await client(server.url, user.apiKey).get('/v1/users/me')).status).toBe(200);
  });

  it('ends the live streams opened with the old key, and only those', async () => {
    const user = await server.createUser();
    const other = await server.createUser();
    const code = 'export default { name: "echo", version: "0.0.1", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body); } };';
    const deploy = async (key: string) => (await client(server.url, key).post('/v1/sources', { component_code: code })).body.data;
    const mine = await deploy(user.apiKey);
    const theirs = await deploy(other.apiKey);
    const old = await rawStream(`${server.url}/v1/sources/${mine.id}/sse`, user.apiKey);
    const outside = await rawStream(`${server.url}/sources/${mine.id}/sse`, user.apiKey);
    const untouched = await rawStream(`${server.url}/v1/sources/${theirs.id}/sse`, other.apiKey);
    const streams = [old, outside, untouched];
    try {
      const fresh = (await client(server.url, user.apiKey).post('/v1/users/me/api_key')).body.data.api_key;
      const renewed = await rawStream(`${server.url}/v1/sources/${mine.id}/sse`, fresh);
      streams.push(renewed);
      await waitFor(
        async () => old.ended() && outside.ended(),
        (ended) => ended,
        { what: 'the streams opened with the old key to end' },
      );
      expect(old.text()).toContain(': the API key this stream was opened with was replaced; reconnect with the new key');
      // The stream opened with the new key and the other account's go on: events sent after the rotation reach them.
      for (const source of [mine, theirs]) {
        expect((await request('POST', source.configured_props.http.endpoint_url, { body: { after: 'rotation' } })).status).toBe(200);
      }
      await waitFor(
        async () => [renewed, untouched].map((stream) => stream.text().includes('"after":"rotation"')),
        (received) => received.every(Boolean),
        { what: 'the event after the rotation on the streams that go on' },
      );
      expect([renewed.ended(), untouched.ended()]).toEqual([false, false]);
    } finally {
      for (const stream of streams) stream.close();
    }
  });

  it('ends the live streams opened with a key that tributary users rotate-key replaced from another process', async () => {
    const user = await server.createUser();
    const code = 'export default { name: "echo", version: "0.0.1", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body); } };';
    const source = (await client(server.url, user.apiKey).post('/v1/sources', { component_code: code })).body.data;
    const old = await rawStream(`${server.url}/v1/sources/${source.id}/sse`, user.apiKey);
    try {
      const where = server.databaseUrl ? ['--database-url', server.databaseUrl] : ['--data-dir', server.dataDir];
      await promisify(execFile)(process.execPath, [BIN, 'users', 'rotate-key', user.id, ...where], { env: { PATH: process.env.PATH ?? '' } });
      expect((await client(server.url, user.apiKey).get('/v1/users/me')).status).toBe(401);
      // A leaked key replaced that way no longer reads the account's events as they come.
      await waitFor(
        async () => old.ended(),
        (ended) => ended,
        { what: 'the stream opened with the replaced key to end', timeoutMs: KEY_LOOK_MS + 10_000 },
      );
      expect(old.text()).toContain(': the API key this stream was opened with was replaced; reconnect with the new key');
    } finally {
      old.close();
    }
  });
});
