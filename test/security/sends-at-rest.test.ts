// A workflow step's `$.send.http` carries credentials (a connected account's `$auth`, a secret prop) in its `auth` and
// headers: its outbox row holds them sealed, as the secrets they came from are, and the request still carries them.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { workflowCalls } from '../helpers/workflows.js';
import { startReceiver, type Receiver } from '../delivery/helpers.js';
import { insertSends, pendingSend, sendsOfRuns } from '../../src/store/sends.js';
import { newId } from '../../src/model/ids.js';
import { bindings, type SecretBinding, SecretBox } from '../../src/lib/secrets.js';
import { sealV1 } from '../helpers/legacy-secrets.js';

const CREDENTIAL = 'credential-7c1f0e5a9b2d';
const SECRET_PROP = 'secret-prop-4e8a2c6b1d3f';

const step = (url: string) => `export default defineComponent({
  props: { token: { type: "string", secret: true }, acme: { type: "app", app: "acme" } },
  async run({ $ }) {
    $.send.http({ url: ${JSON.stringify(url)}, auth: { username: "me", password: this.acme.$auth.api_key }, headers: { "x-token": this.token } });
  },
});`;

describe.each(DIALECTS)('the outbox of workflow sends on %s', (dialect) => {
  let server: TestServer;
  let receiver: Receiver;
  let key: string;
  /** Bound on each use: a restart moves the server to another port. */
  const api = () => client(server.url, key);

  beforeAll(async () => {
    receiver = await startReceiver();
    server = await startTestServer(dialect, { allowPrivateNetwork: true });
    key = (await server.createUser({ plan: 'paid' })).apiKey;
  });
  afterAll(async () => {
    await server?.destroy();
    await receiver?.close();
  });

  it("keeps a send's credentials sealed at rest, and sends them", async () => {
    const account = await api().post('/v1/accounts', { app: 'acme', name: 'Acme', credentials: { api_key: CREDENTIAL } });
    expect(account.status).toBe(200);
    const workflows = workflowCalls(api);
    const workflow = await workflows.create({
      name: 'sends credentials',
      steps: [
        {
          name: 'call',
          component_code: step(`${receiver.url}/sealed`),
          configured_props: { token: SECRET_PROP, acme: { authProvisionId: account.body.data.id } },
        },
      ],
    });
    expect((await api().post(`/v1/workflows/${workflow.id}/run`, {})).status).toBe(202);
    const [run] = await workflows.finishedRuns(workflow.id, 1);
    const rows = await waitFor(
      () => sendsOfRuns(server.running.services.store.db, [run.id]),
      (sends) => sends[0]?.state === 'succeeded',
      { what: 'the send to succeed' },
    );
    const received = receiver.requests.filter((r) => r.path === '/sealed');
    expect(received.map((r) => [r.headers.authorization, r.headers['x-token']])).toEqual([
      [`Basic ${Buffer.from(`me:${CREDENTIAL}`).toString('base64')}`, SECRET_PROP],
    ]);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.payload).toMatch(/^enc:v2:/);
    for (const secret of [CREDENTIAL, SECRET_PROP]) expect(rows[0]!.payload).not.toContain(secret);
    if (dialect === 'sqlite') {
      await server.stop();
      for (const name of fs.readdirSync(server.dataDir).filter((file) => file.startsWith('tributary.db'))) {
        const bytes = fs.readFileSync(path.join(server.dataDir, name));
        for (const secret of [CREDENTIAL, SECRET_PROP]) expect(bytes.includes(secret), `${secret} in ${name}`).toBe(false);
      }
      await server.restart();
    }
  });

  /**
   * A finished run of a new workflow, with an http send of `payload` put in its outbox as it stands (the way an earlier
   * version, or a server with another key, left it), then the server restarted, which carries out what is due.
   */
  async function runWithQueuedSend(name: string, payload: (url: string, binding: SecretBinding) => string) {
    const workflows = workflowCalls(api);
    const workflow = await workflows.create({ name, steps: [{ name: 'noop', component_code: 'export default defineComponent({ async run() {} });' }] });
    expect((await api().post(`/v1/workflows/${workflow.id}/run`, {})).status).toBe(202);
    const [run] = await workflows.finishedRuns(workflow.id, 1);
    const db = server.running.services.store.db;
    const { user_id } = await db.selectFrom('workflows').select('user_id').where('id', '=', workflow.id).executeTakeFirstOrThrow();
    const fields = {
      run_id: run.id,
      workflow_id: workflow.id,
      user_id,
      step_index: 0,
      kind: 'http' as const,
      payload: payload(receiver.url, bindings.send(user_id, workflow.id)),
    };
    await insertSends(db, [pendingSend({ id: newId('ws'), ...fields, created_ms: Date.now() })]);
    await server.restart();
    return run!;
  }

  it('still carries out a send queued in plain JSON by an earlier version', async () => {
    // A start carries out what is due at once, as after an upgrade.
    const run = await runWithQueuedSend('earlier', (url) => JSON.stringify({ url: `${url}/plain`, auth: { username: 'me', password: 'pw' } }));
    await waitFor(
      () => sendsOfRuns(server.running.services.store.db, [run.id]),
      (sends) => sends[0]?.state === 'succeeded',
      { what: 'the plain send to succeed' },
    );
    expect(receiver.requests.filter((r) => r.path === '/plain').map((r) => r.headers.authorization)).toEqual([
      `Basic ${Buffer.from('me:pw').toString('base64')}`,
    ]);
  });

  it('fails a send whose payload was sealed with another key, for good, saying so', async () => {
    const run = await runWithQueuedSend('other key', (url, binding) =>
      SecretBox.open('another server key', server.dataDir).encrypt(JSON.stringify({ url: `${url}/other-key` }), binding),
    );
    const [send] = await waitFor(
      () => sendsOfRuns(server.running.services.store.db, [run.id]),
      (sends) => sends[0]?.state === 'failed',
      { what: 'the send to fail' },
    );
    expect([send!.attempt, send!.last_error]).toEqual([
      1,
      "not sent: this server's secret key does not open it: it was sealed with another key (restored without its secret.key?), for another account or field (copied there in the database?), or it is damaged",
    ]);
    expect(receiver.requests.filter((r) => r.path === '/other-key')).toEqual([]);
  });

  it('still carries out a send sealed (v1, unbound) by an earlier version', async () => {
    const run = await runWithQueuedSend('v1', (url) => sealV1(server.dataDir, JSON.stringify({ url: `${url}/v1`, headers: { 'x-token': 'v1-token' } })));
    await waitFor(
      () => sendsOfRuns(server.running.services.store.db, [run.id]),
      (sends) => sends[0]?.state === 'succeeded',
      { what: 'the v1 send to succeed' },
    );
    expect(receiver.requests.filter((r) => r.path === '/v1').map((r) => r.headers['x-token'])).toEqual(['v1-token']);
  });

  it("refuses a payload this server sealed for another account's workflow, copied into this send's row", async () => {
    const otherAccount = bindings.send('u_someone_else', 'wf_someone_else');
    const run = await runWithQueuedSend('copied', (url) =>
      SecretBox.open(undefined, server.dataDir).encrypt(JSON.stringify({ url: `${url}/copied` }), otherAccount),
    );
    const [send] = await waitFor(
      () => sendsOfRuns(server.running.services.store.db, [run.id]),
      (sends) => sends[0]?.state === 'failed',
      { what: 'the copied send to fail' },
    );
    expect([send!.attempt, send!.last_error]).toEqual([
      1,
      "not sent: this server's secret key does not open it: it was sealed with another key (restored without its secret.key?), for another account or field (copied there in the database?), or it is damaged",
    ]);
    expect(receiver.requests.filter((r) => r.path === '/copied')).toEqual([]);
  });
});
