// POST /v1/users/me/api_key (extension): a new key, returned once; the old key stops working at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, request } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';

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
});
