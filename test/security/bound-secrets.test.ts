// Sealed values are bound to their account and field (`enc:v2:`): one copied in the database to another account's row
// is not opened there, and fails as an unreadable secret does; `enc:v1:` values of earlier versions still open, and a
// write that keeps them seals them again bound.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { account } from '../helpers/account.js';
import { waitFor } from '../helpers/wait.js';
import { sealV1 } from '../helpers/legacy-secrets.js';
import { bindings, SecretBox, UnreadableSecretError } from '../../src/lib/secrets.js';
import { SigningKeys } from '../../src/delivery/webhooks/signing.js';

const SOURCE = `module.exports = {
  key: "bound-secret", name: "Bound secret", version: "0.0.1",
  props: { token: { type: "string", secret: true } },
  async run() { this.$emit({ token: this.token }); },
};`;

const STEP = `module.exports = {
  key: "bound-step", name: "Bound step", version: "0.0.1", type: "action",
  props: { token: { type: "string", secret: true } },
  async run() { return this.token; },
};`;

const APP_SOURCE = `module.exports = {
  key: "bound-app", name: "Bound app", version: "0.0.1",
  props: { acme: { type: "app", app: "acme" } },
  async run() { this.$emit({ key: this.acme.$auth.api_key }); },
};`;

const COPIED =
  "this server's secret key does not open it: it was sealed with another key (restored without its secret.key?), for another account or field (copied there in the database?), or it is damaged";

describe("a webhook's signing secret", () => {
  it('is opened for its own webhook only, also once a key opened for it is cached', () => {
    const box = SecretBox.open('bound-secrets-test-key', '/nonexistent');
    const sealed = box.encrypt('whsec_c2VjcmV0', bindings.webhookSecret('u_a', 'wh_a'));
    const keys = new SigningKeys(box);
    expect(keys.of({ user_id: 'u_a', webhook_id: 'wh_a', secret: sealed }).export().toString()).toBe('secret');
    expect(() => keys.of({ user_id: 'u_b', webhook_id: 'wh_b', secret: sealed })).toThrow(UnreadableSecretError);
    expect(() => keys.of({ user_id: 'u_a', webhook_id: 'wh_other', secret: sealed })).toThrow(COPIED);
  });
});

describe.each(DIALECTS)('secrets bound to their account on %s', (dialect) => {
  let server: TestServer;
  const db = () => server.running.services.store.db;
  const storedProps = async (id: string) =>
    JSON.parse((await db().selectFrom('sources').select('configured_props').where('id', '=', id).executeTakeFirstOrThrow()).configured_props);

  beforeAll(async () => {
    server = await startTestServer(dialect);
  });
  afterAll(async () => {
    await server?.destroy();
  });

  it("refuses a secret prop copied from one account's source to another's", async () => {
    const a = await account(server);
    const b = await account(server);
    const sourceA = (await a.api.post('/v1/sources', { component_code: SOURCE, configured_props: { token: 'secret-of-a' } })).body.data.id as string;
    const sourceB = (await b.api.post('/v1/sources', { component_code: SOURCE, configured_props: { token: 'secret-of-b' } })).body.data.id as string;
    const sealed = await storedProps(sourceA);
    expect(sealed.token).toMatch(/^enc:v2:/);
    await db()
      .updateTable('sources')
      .set({ configured_props: JSON.stringify(sealed) })
      .where('id', '=', sourceB)
      .execute();
    // A restart: a running server keeps the props it opened for a source's runs.
    await server.restart();

    await b.runAndWait(sourceB, {});
    const [failed] = await b.eventsOf(sourceB, 1, '/$errors');
    expect(failed.event.error).toMatchObject({
      name: 'SecretError',
      code: 'secret_unreadable',
      message: `secret prop "token" cannot be opened: ${COPIED}; set it again`,
    });
    expect(JSON.stringify(await b.api.get(`/v1/sources/${sourceB}/event_summaries?expand=event`))).not.toContain('secret-of-a');
    // A's own source still opens it.
    await a.runAndWait(sourceA, {});
    expect((await a.eventsOf(sourceA, 1))[0].event).toEqual({ token: 'secret-of-a' });
    // Kept by the placeholder, it is refused as an unreadable kept secret is, not taken for B.
    const kept = await b.api.patch(`/v1/sources/${sourceB}`, {
      component_code: SOURCE.replace('secret: true', 'secret: false'),
      configured_props: { token: '********' },
    });
    expect(kept.status).toBe(422);
    const message = `is kept from before but cannot be opened: ${COPIED}; set it again`;
    expect(kept.body).toEqual({ error: `invalid configured_props: token ${message}`, code: 'props_invalid', details: [{ prop: 'token', message }] });
  });

  it("refuses a workflow step's secret prop and a connected account's credentials copied to another account", async () => {
    const a = await account(server);
    const b = await account(server);
    const steps = (token: string) => [{ name: 'use', component_code: STEP, configured_props: { token } }];
    const workflowA = (await a.api.post('/v1/workflows', { name: 'a', steps: steps('step-secret-of-a') })).body.data.id as string;
    const workflowB = (await b.api.post('/v1/workflows', { name: 'b', steps: steps('step-secret-of-b') })).body.data.id as string;
    const stepsOfA = (await db().selectFrom('workflows').select('steps').where('id', '=', workflowA).executeTakeFirstOrThrow()).steps;
    expect(stepsOfA).toContain('enc:v2:');
    await db().updateTable('workflows').set({ steps: stepsOfA }).where('id', '=', workflowB).execute();
    const run = await b.api.post(`/v1/workflows/${workflowB}/run`, {});
    expect(run.status).toBe(202);
    const finished = await waitFor(
      () => b.api.get(`/v1/workflows/${workflowB}/runs/${run.body.data.id}`),
      (r) => r.body.data?.status === 'failed',
      { what: 'the workflow run to fail' },
    );
    expect(JSON.stringify(finished.body.data)).toContain('secret_unreadable');
    expect(JSON.stringify(finished.body.data)).not.toContain('step-secret-of-a');

    const connectedA = (await a.api.post('/v1/accounts', { app: 'acme', name: 'A', credentials: { api_key: 'key-of-a' } })).body.data.id as string;
    const connectedB = (await b.api.post('/v1/accounts', { app: 'acme', name: 'B', credentials: { api_key: 'key-of-b' } })).body.data.id as string;
    const credentials = (await db().selectFrom('connected_accounts').select('credentials').where('id', '=', connectedA).executeTakeFirstOrThrow()).credentials;
    expect(credentials).toMatch(/^enc:v2:/);
    await db().updateTable('connected_accounts').set({ credentials }).where('id', '=', connectedB).execute();
    const app = await b.api.post('/v1/sources', { component_code: APP_SOURCE, configured_props: { acme: { authProvisionId: connectedB } } });
    expect(app.status).toBe(200);
    await b.runAndWait(app.body.data.id, {});
    const [unreadable] = await b.eventsOf(app.body.data.id, 1, '/$errors');
    expect(unreadable.event.error).toMatchObject({
      name: 'ConnectedAccountError',
      code: 'credentials_unreadable',
      message: `the credentials of connected account ${connectedB} cannot be opened: ${COPIED}; connect the app again`,
    });
    expect((await b.api.get(`/v1/accounts/${connectedB}`)).body.data.healthy).toBe(false);
  });

  it('opens v1 values of an earlier version, and seals them bound when an update keeps them', async () => {
    const a = await account(server);
    const source = (await a.api.post('/v1/sources', { component_code: SOURCE, configured_props: { token: 'new' } })).body.data.id as string;
    await db()
      .updateTable('sources')
      .set({ configured_props: JSON.stringify({ token: sealV1(server.dataDir, 'legacy-token') }) })
      .where('id', '=', source)
      .execute();
    await server.restart();
    await a.runAndWait(source, {});
    expect((await a.eventsOf(source, 1))[0].event).toEqual({ token: 'legacy-token' });

    const kept = await a.api.patch(`/v1/sources/${source}`, { name: 'renamed', configured_props: { token: '********' } });
    expect(kept.status).toBe(200);
    expect((await storedProps(source)).token).toMatch(/^enc:v2:/);
    await a.runAndWait(source, {});
    expect((await a.eventsOf(source, 2))[0].event).toEqual({ token: 'legacy-token' });

    const connected = (await a.api.post('/v1/accounts', { app: 'acme', name: 'A', credentials: { api_key: 'x' } })).body.data.id as string;
    await db()
      .updateTable('connected_accounts')
      .set({ credentials: sealV1(server.dataDir, JSON.stringify({ api_key: 'legacy-key' })) })
      .where('id', '=', connected)
      .execute();
    const app = (await a.api.post('/v1/sources', { component_code: APP_SOURCE, configured_props: { acme: { authProvisionId: connected } } })).body.data
      .id as string;
    await a.runAndWait(app, {});
    expect((await a.eventsOf(app, 1))[0].event).toEqual({ key: 'legacy-key' });
  });
});
