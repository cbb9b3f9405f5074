// The subscriptions limit also holds the subscriptions a create makes on its own: those a new source gets from
// auto-subscriptions, and the one a workflow triggered by a source stream holds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account } from '../helpers/account.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';

describe.each(DIALECTS)('subscription limit on %s', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(dialect, {
      allowPrivateNetwork: true,
      accountLimits: { sources: 0, workflows: 0, webhooks: 0, subscriptions: 2, connected_accounts: 0 },
    });
  });
  afterAll(() => server?.destroy());

  it('keeps the account at its subscription limit when sources materialise auto-subscriptions', async () => {
    const user = await account(server);
    const hook = (await user.api.post(`/v1/webhooks?url=${encodeURIComponent('http://127.0.0.1:9/x')}`)).body.data.id;
    expect((await user.api.post(`/v1/auto_subscriptions?event_name=&listener_id=${hook}`)).status).toBe(200);
    await user.deploy();
    const refused = await user.api.post('/v1/sources', { component_code: 'export default { name: "s", version: "1", props: {}, async run() {} }' });
    expect(refused.status).toBe(409);
    expect(refused.body.details).toEqual([{ resource: 'subscriptions', limit: 2 }]);
    expect((await user.api.get('/v1/users/me/subscriptions?limit=100')).body.data).toHaveLength(1);
    // A workflow triggered by a source's stream holds a subscription too.
    const source = (await user.api.get('/v1/users/me/sources')).body.data[0].id;
    await user.api.delete(`/v1/auto_subscriptions?event_name=&listener_id=${hook}`);
    const step = [{ name: 's', component_code: 'export default { async run() { return 1; } }' }];
    expect((await user.api.post('/v1/workflows', { name: 'a', trigger: { type: 'source', source_id: source }, steps: step })).status).toBe(200);
    const over = await user.api.post('/v1/workflows', { name: 'b', trigger: { type: 'source', source_id: source }, steps: step });
    expect(over.status).toBe(409);
  });
});
