// --account-limits: a create past an account's limit of sources, workflows, webhooks, subscriptions or connected
// accounts is a 409 `limit_reached` that changes nothing; other accounts, deletes and repeats are not held back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config.js';
import { accountLimits } from '../../src/config-parsers.js';
import { DEFAULT_ACCOUNT_LIMITS } from '../../src/model/account-limits.js';
import { emitterSource } from '../helpers/components.js';
import { account } from '../helpers/account.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { type Receiver, startReceiver } from '../delivery/helpers.js';

const LIMITS = { sources: 2, workflows: 1, webhooks: 2, subscriptions: 2, connected_accounts: 1 };
const STEP = 'export default { async run() { return 1; } }';

function refusal(resource: string, limit: number, singular: string) {
  return {
    error: `this account holds ${limit} ${resource.replace('_', ' ')}, the most this server allows (--account-limits ${resource}=${limit}): delete a ${singular} before creating another`,
    code: 'limit_reached',
    details: [{ resource, limit }],
  };
}

describe('--account-limits', () => {
  it('reads resource=count pairs over the defaults, 0 for no limit, and refuses anything else', () => {
    expect(accountLimits('sources=5, webhooks=0')).toEqual({ ...DEFAULT_ACCOUNT_LIMITS, sources: 5, webhooks: 0 });
    expect(accountLimits('')).toEqual(DEFAULT_ACCOUNT_LIMITS);
    for (const bad of ['events=5', 'sources', 'sources=-1', 'sources=1=2', 'sources=many']) {
      expect(() => accountLimits(bad), bad).toThrow(ConfigError);
    }
  });
});

describe.each(DIALECTS)('account limits on %s', (dialect) => {
  let server: TestServer;
  let user: Awaited<ReturnType<typeof account>>;
  let other: Awaited<ReturnType<typeof account>>;
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = await startReceiver();
    server = await startTestServer(dialect, { allowPrivateNetwork: true, accountLimits: LIMITS });
    user = await account(server);
    other = await account(server);
  });
  afterAll(async () => {
    await server?.destroy();
    await receiver?.close();
  });

  it('refuses the source past the limit, and takes one again after a delete; other accounts have their own', async () => {
    const first = await user.deploy();
    await user.deploy();
    const refused = await user.api.post('/v1/sources', { component_code: emitterSource(), name: 'third' });
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual(refusal('sources', 2, 'source'));
    expect((await user.api.get('/v1/users/me/sources?limit=100')).body.page_info.total_count).toBe(2);
    await other.deploy();
    expect((await user.api.delete(`/v1/sources/${first}`)).status).toBe(204);
    expect((await user.api.post('/v1/sources', { component_code: emitterSource() })).status).toBe(200);
  });

  it('refuses the workflow past the limit before saving any of its code', async () => {
    const created = await user.api.post('/v1/workflows', { name: 'one', steps: [{ name: 's', component_code: STEP }] });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const components = (await user.api.get('/v1/users/me/components?limit=100')).body.page_info.total_count;
    const refused = await user.api.post('/v1/workflows', { name: 'two', steps: [{ name: 's', component_code: STEP }] });
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual(refusal('workflows', 1, 'workflow'));
    expect((await user.api.get('/v1/users/me/workflows?limit=100')).body.page_info.total_count).toBe(1);
    expect((await user.api.get('/v1/users/me/components?limit=100')).body.page_info.total_count).toBe(components);
  });

  it('lets sources created in parallel pass the limit no further, taking down what the refused ones set up', async () => {
    // Each create passes the early check (none has committed yet) and runs activate(), which registers with the
    // receiver; the limit's check in the transaction refuses all but two, whose deactivate() unregisters.
    const fresh = await account(server);
    const at = `/registrations-${dialect}`;
    const code = `export default {
      name: "Registers", version: "0.1.0",
      hooks: {
        async activate() { await fetch("${receiver.url}${at}?register"); },
        async deactivate() { await fetch("${receiver.url}${at}?unregister"); },
      },
      async run() {},
    };`;
    const answers = await Promise.all(Array.from({ length: 5 }, () => fresh.api.post('/v1/sources', { component_code: code })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 409, 409, 409]);
    expect((await fresh.api.get('/v1/users/me/sources?limit=100')).body.page_info.total_count).toBe(2);
    const registered = () => receiver.requests.filter((r) => r.path.startsWith(at)).map((r) => r.path.slice(at.length + 1));
    const activated = registered().filter((r) => r === 'register').length;
    // As many taken down as refused after their activate() (the others were refused before it).
    expect(registered().filter((r) => r === 'unregister')).toHaveLength(activated - 2);
    // Only the two sources' saved code is kept.
    expect((await fresh.api.get('/v1/users/me/components?limit=100')).body.page_info.total_count).toBe(2);
  });

  it('lets workflows created in parallel pass the limit no further, keeping no code of the refused ones', async () => {
    const fresh = await account(server);
    const answers = await Promise.all(
      Array.from({ length: 4 }, (_, i) => fresh.api.post('/v1/workflows', { name: `w${i}`, steps: [{ name: 's', component_code: STEP }] })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409, 409, 409]);
    expect((await fresh.api.get('/v1/users/me/workflows?limit=100')).body.page_info.total_count).toBe(1);
    expect((await fresh.api.get('/v1/users/me/components?limit=100')).body.page_info.total_count).toBe(1);
  });

  it('lets creates in parallel pass the webhook limit no further than it', async () => {
    const fresh = await account(server);
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => fresh.api.post(`/v1/webhooks?url=${encodeURIComponent(`http://127.0.0.1:9/hook-${i}`)}&name=hook-${i}`)),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 409, 409, 409, 409]);
    expect(answers.find((a) => a.status === 409)!.body).toEqual(refusal('webhooks', 2, 'webhook'));
    expect((await fresh.api.get('/v1/users/me/webhooks?limit=100')).body.page_info.total_count).toBe(2);
  });

  it('counts subscriptions and auto-subscriptions together, and answers a repeat of one it holds', async () => {
    const fresh = await account(server);
    const emitter = await fresh.deploy();
    const hook = (await fresh.api.post(`/v1/webhooks?url=${encodeURIComponent('http://127.0.0.1:9/subscribed')}`)).body.data.id;
    expect((await fresh.api.post(`/v1/subscriptions?emitter_id=${emitter}&listener_id=${hook}`)).status).toBe(200);
    expect((await fresh.api.post(`/v1/auto_subscriptions?event_name=$errors&listener_id=${hook}`)).status).toBe(200);
    const refused = await fresh.api.post(`/v1/subscriptions?emitter_id=${emitter}&listener_id=${hook}&event_name=$errors`);
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual(refusal('subscriptions', 2, 'subscription'));
    const autoRefused = await fresh.api.post(`/v1/auto_subscriptions?event_name=$logs&listener_id=${hook}`);
    expect(autoRefused.body).toEqual(refusal('subscriptions', 2, 'subscription'));
    expect((await fresh.api.post(`/v1/subscriptions?emitter_id=${emitter}&listener_id=${hook}`)).status).toBe(200);
    expect((await fresh.api.post(`/v1/auto_subscriptions?event_name=$errors&listener_id=${hook}`)).status).toBe(200);
    expect((await fresh.api.get('/v1/users/me/subscriptions')).body.data).toHaveLength(1);
  });

  it('refuses the connected account past the limit', async () => {
    const body = { app: 'acme', name: 'Acme', credentials: { api_key: 'k-1234567890' } };
    expect((await other.api.post('/v1/accounts', body)).status).toBe(200);
    const refused = await other.api.post('/v1/accounts', { ...body, name: 'Acme 2' });
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual(refusal('connected_accounts', 1, 'connected account'));
    expect((await other.api.get('/v1/users/me/accounts?limit=100')).body.page_info.total_count).toBe(1);
  });
});
