// A data directory restored without its secret.key: sealed values this server's new key cannot open fail their runs
// once with a reason naming them (they were retried for ever, every second), and setting them again mends the source.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { account } from '../helpers/account.js';
import { waitFor } from '../helpers/wait.js';

const SOURCE = `module.exports = {
  key: "secret-user", name: "Secret user", version: "0.0.1",
  props: { token: { type: "string", secret: true } },
  async run() { this.$emit({ length: this.token.length }); },
};`;

const HOOKED = `module.exports = {
  key: "secret-hooked", name: "Secret hooked", version: "0.0.1",
  props: { token: { type: "string", secret: true } },
  hooks: { async deactivate() { console.log("deactivating with", this.token.length); } },
  async run() { this.$emit({ length: this.token.length }); },
};`;

const STEP = `module.exports = {
  key: "secret-step", name: "Secret step", version: "0.0.1", type: "action",
  props: { token: { type: "string", secret: true } },
  async run() { return this.token.length; },
};`;

const APP_SOURCE = `module.exports = {
  key: "app-user", name: "App user", version: "0.0.1",
  props: { acme: { type: "app", app: "acme" } },
  async run() { this.$emit({ key: this.acme.$auth.api_key }); },
};`;

describe.each(DIALECTS)('secrets sealed with another key on %s', (dialect) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(dialect);
  });
  afterAll(async () => {
    await server?.destroy();
  });

  it('fails runs of a source and a workflow step whose secret cannot be opened, once, until the secret is set again', async () => {
    const a = await account(server);
    const deployed = await a.api.post('/v1/sources', { component_code: SOURCE, configured_props: { token: 'abc' } });
    expect(deployed.status).toBe(200);
    const source = deployed.body.data.id as string;
    const hooked = (await a.api.post('/v1/sources', { component_code: HOOKED, configured_props: { token: 'abc' } })).body.data.id as string;
    const hookedToDelete = (await a.api.post('/v1/sources', { component_code: HOOKED, configured_props: { token: 'abc' } })).body.data.id as string;
    const workflow = await a.api.post('/v1/workflows', { name: 'secret', steps: [{ name: 'use', component_code: STEP, configured_props: { token: 'abcd' } }] });
    expect(workflow.status).toBe(200);
    const connected = await a.api.post('/v1/accounts', { app: 'acme', name: 'Acme', credentials: { api_key: 'k-123' } });
    expect(connected.status).toBe(200);
    const app = await a.api.post('/v1/sources', { component_code: APP_SOURCE, configured_props: { acme: { authProvisionId: connected.body.data.id } } });
    expect(app.status).toBe(200);

    // The data directory comes back with a key of its own, as a restore without secret.key leaves it.
    await server.stop();
    fs.writeFileSync(path.join(server.dataDir, 'secret.key'), crypto.randomBytes(32).toString('base64'));
    await server.restart();

    await a.runAndWait(source, {});
    const [failed] = await a.eventsOf(source, 1, '/$errors');
    expect(failed.event.error).toMatchObject({
      name: 'SecretError',
      code: 'secret_unreadable',
      message: `secret prop "token" cannot be opened: this server's secret key does not open it: it was sealed with another key (restored without its secret.key?), for another account or field (copied there in the database?), or it is damaged; set it again`,
    });
    // Failed once, not queued again.
    expect(await server.running.services.store.db.selectFrom('invocations').select('id').where('source_id', '=', source).execute()).toEqual([]);

    const run = await a.api.post(`/v1/workflows/${workflow.body.data.id}/run`, {});
    expect(run.status).toBe(202);
    const finished = await waitFor(
      () => a.api.get(`/v1/workflows/${workflow.body.data.id}/runs/${run.body.data.id}`),
      (r) => r.body.data?.status === 'failed',
      { what: 'the workflow run to fail' },
    );
    expect(JSON.stringify(finished.body.data)).toContain('secret_unreadable');

    // The connected account's credentials: its runs fail once, and the account says it is not healthy.
    await a.runAndWait(app.body.data.id, {});
    const [unreadable] = await a.eventsOf(app.body.data.id, 1, '/$errors');
    expect(unreadable.event.error).toMatchObject({ name: 'ConnectedAccountError', code: 'credentials_unreadable' });
    expect((await a.api.get(`/v1/accounts/${connected.body.data.id}`)).body.data.healthy).toBe(false);

    // A source whose deactivate() needs the secret can still be mended and deleted: the hook is skipped, and said so.
    const mendedHooked = await a.api.patch(`/v1/sources/${hooked}`, { configured_props: { token: 'abcdefgh' } });
    expect(mendedHooked.status, JSON.stringify(mendedHooked.body)).toBe(200);
    const [skipped] = await a.eventsOf(hooked, 1, '/$errors');
    expect(skipped.event.error).toMatchObject({ name: 'SecretError', code: 'secret_unreadable' });
    await a.runAndWait(hooked, {});
    expect((await a.eventsOf(hooked, 1))[0].event).toEqual({ length: 8 });
    expect((await a.api.delete(`/v1/sources/${hookedToDelete}`)).status).toBe(204);

    // A new value mends the source.
    const mended = await a.api.patch(`/v1/sources/${source}`, { configured_props: { token: 'abcdef' } });
    expect(mended.status).toBe(200);
    await a.runAndWait(source, {});
    const [emitted] = await a.eventsOf(source, 1);
    expect(emitted.event).toEqual({ length: 6 });
  });
});
