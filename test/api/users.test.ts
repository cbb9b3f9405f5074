// GET /users/me returns exactly the spec's User shape for each plan; accounts are created once per username.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';

describe.each(DIALECTS)('GET /v1/users/me on %s', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(dialect, { freeDailyInvocations: 1234, freeDailyComputeMs: 56789 });
  });
  afterAll(() => server?.destroy());

  it('returns the free-plan shape with the presented key and the quota fields', async () => {
    const user = await server.createUser({ plan: 'free' });
    const res = await client(server.url, user.apiKey).get('/v1/users/me');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: {
        id: user.id,
        username: user.username,
        email: user.email,
        api_key: user.apiKey,
        daily_compute_time_quota: 56789,
        daily_compute_time_used: 0,
        daily_invocations_quota: 1234,
        daily_invocations_used: 0,
      },
    });
    expect(user.id).toMatch(/^u_[0-9a-z]{26}$/);
  });

  it('returns the paid-plan shape with the billing period holding now', async () => {
    const user = await server.createUser({ plan: 'paid' });
    const res = await client(server.url, user.apiKey).get('/v1/users/me');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.data).sort()).toEqual(
      ['billing_period_end_ts', 'billing_period_invocations', 'billing_period_start_ts', 'email', 'id', 'username'].sort(),
    );
    const now = Date.now() / 1000;
    expect(res.body.data.billing_period_start_ts).toBeLessThanOrEqual(now);
    expect(res.body.data.billing_period_end_ts).toBeGreaterThan(now);
    expect(res.body.data.billing_period_invocations).toBe(0);
  });

  it('stops accepting a key once it is rotated', async () => {
    const user = await server.createUser();
    const rotated = await server.running.services.users.rotateKey(user.username);
    expect((await client(server.url, user.apiKey).get('/v1/users/me')).status).toBe(401);
    const res = await client(server.url, rotated.apiKey).get('/v1/users/me');
    expect(res.status).toBe(200);
    expect(res.body.data.api_key).toBe(rotated.apiKey);
  });

  it('creates one account when two creations race for a username, and refuses the other as a conflict', async () => {
    // Both look the name up before either inserts (three cluster nodes creating the first account at once).
    const username = `race${process.pid}x${dialect}`;
    const results = await Promise.allSettled([server.createUser({ username }), server.createUser({ username })]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const refused = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')!;
    expect(refused.reason).toMatchObject({ code: 'conflict', message: `username "${username}" is taken` });
    const accounts = await server.running.services.users.list();
    expect(accounts.filter((a) => a.username === username)).toHaveLength(1);
  });
});

describe.each(DIALECTS)('the first account on %s', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(dialect);
  });
  afterAll(() => server?.destroy());

  it('is created once when two starts ask for it at the same time, and not at all once an account exists', async () => {
    const { users } = server.running.services;
    const made = await Promise.all([users.createFirstAccount(), users.createFirstAccount()]);
    expect(made.filter(Boolean).map((account) => [account!.username, account!.plan])).toEqual([['admin', 'paid']]);
    expect((await users.list()).map((account) => account.username)).toEqual(['admin']);
    expect(await users.createFirstAccount()).toBeUndefined();
  });
});
