// A real source of the reference service's registry that needs credentials runs unmodified against a local HTTPS mock of
// its API, its `$auth` coming from a connected account: GitLab's New Project (gitlab-new-project 0.1.3, from
// @pipedream/gitlab 0.5.6 as published on npm, pinned), bundled as the client CLI bundles a file. The mock's certificate
// comes from a CA made for the run, which the workers trust through --worker-ca-file; without it, the same request fails
// on a certificate error.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleCode } from '../../src/client/bundle.js';
import { ConfigError, resolveConfig } from '../../src/config.js';
import { account } from '../helpers/account.js';
import { secret } from '../helpers/connected-accounts.js';
import { startGitlabMock, type MockProject } from '../helpers/gitlab-mock.js';
import { DIALECTS, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { hasOpenssl, makeTestCertificates, type TestCertificates } from '../helpers/tls.js';
import { waitFor } from '../helpers/wait.js';

const PACKAGE = path.dirname(createRequire(import.meta.url).resolve('@pipedream/gitlab/package.json'));
const NEW_PROJECT = 'sources/new-project/new-project.mjs';
const NEW_MILESTONE = 'sources/new-milestone/new-milestone.mjs';

if (!hasOpenssl()) throw new Error('these tests make their TLS certificates with the openssl command, which is not on the PATH');

/** The event metadata gitlab-new-project gives a project (its generateMeta). */
const metaOf = (p: MockProject) => ({ id: p.id, summary: `New project: ${p.name}`, ts: Date.parse(p.created_at) });

describe.each(DIALECTS)('a real GitLab source with a connected account on %s', (dialect) => {
  let certs: TestCertificates;
  let mock: Awaited<ReturnType<typeof startGitlabMock>>;
  let server: TestServer;
  let user: Awaited<ReturnType<typeof account>>;
  const code = { newProject: '', newMilestone: '' };
  const firstToken = secret('glpat-first');
  const secondToken = secret('glpat-second');
  /** Shared by the tests below, which follow one source from its deploy on. */
  let accountId = '';
  let sourceId = '';
  const projects: Record<string, MockProject> = {};
  const add = (name: string) => {
    projects[name] = mock.addProject(name);
    return projects[name];
  };

  beforeAll(async () => {
    certs = makeTestCertificates();
    mock = await startGitlabMock(certs, firstToken);
    code.newProject = await bundleCode(path.join(PACKAGE, NEW_PROJECT));
    code.newMilestone = await bundleCode(path.join(PACKAGE, NEW_MILESTONE));
    server = await startTestServer(dialect, { allowPrivateNetwork: true, workerCaFile: certs.caFile, minTimerInterval: 1 });
    user = await account(server);
  });
  afterAll(async () => {
    await server?.destroy();
    await mock?.close();
    if (certs) fs.rmSync(certs.dir, { recursive: true, force: true });
  });

  const credentials = (token: string) => ({ base_api_url: mock.host, oauth_access_token: token, oauth_uid: '42' });

  async function cursorOf(id: string): Promise<unknown> {
    const row = await server.running.services.store.db
      .selectFrom('source_db')
      .select('value')
      .where('source_id', '=', id)
      .where('key', '=', 'lastProcessedProjectId')
      .executeTakeFirst();
    return row && JSON.parse(row.value);
  }

  /** The source's events, newest first, as `{ id, summary, ts }` with the project's name. */
  async function eventsNow(id: string, stream = ''): Promise<any[]> {
    const res = await user.api.get(`/v1/sources/${id}${stream}/event_summaries?expand=event&limit=100`);
    expect(res.status).toBe(200);
    return res.body.data;
  }

  const projectEvents = async (id: string) => (await eventsNow(id)).map((e) => ({ name: e.event.name, ...pick(e.metadata, ['id', 'summary', 'ts']) }));

  it('deploys gitlab-new-project unmodified: its activate hook asks for the newest owned project with the token and keeps its id', async () => {
    const alpha = add('alpha');
    const beta = add('beta');
    const connected = await user.api.post('/v1/accounts', { app: 'gitlab', name: 'GitLab mock', credentials: credentials(firstToken) });
    expect(connected.status, JSON.stringify(connected.body)).toBe(200);
    expect(connected.body.data).toMatchObject({ app: 'gitlab', fields: ['base_api_url', 'oauth_access_token', 'oauth_uid'], healthy: true });
    accountId = connected.body.data.id;

    const deployed = await user.api.post('/v1/sources', { component_code: code.newProject, configured_props: { gitlab: { authProvisionId: accountId } } });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    sourceId = deployed.body.data.id;
    expect(deployed.body.data).toMatchObject({ name: 'new-project', active: true });
    expect(deployed.body.data.configured_props).toEqual({ gitlab: { authProvisionId: accountId }, timer: { cron: null, interval_seconds: 900 } });

    expect(mock.requests).toEqual([
      { method: 'GET', path: '/api/v4/projects', query: { owned: 'true', per_page: '1' }, authorization: `Bearer ${firstToken}`, status: 200 },
    ]);
    expect(await cursorOf(sourceId)).toBe(beta.id);
    expect(alpha.id).toBeLessThan(beta.id);
    const logs = await user.eventsOf(sourceId, 1, '/$logs');
    expect(logs.map((l) => l.event.msg)).toContain(`Polling GitLab projects created after ID ${beta.id}`);
    expect(await eventsNow(sourceId)).toEqual([]);
  });

  it('a run emits exactly the projects created since the cursor, with their id, summary and ts; the next run emits nothing', async () => {
    const gamma = add('gamma');
    const delta = add('delta');
    const seen = mock.requests.length;
    await user.runAndWait(sourceId, {});
    expect(mock.requests.slice(seen)).toEqual([
      {
        method: 'GET',
        path: '/api/v4/projects',
        query: { id_after: String(projects.beta!.id), owned: 'true' },
        authorization: `Bearer ${firstToken}`,
        status: 200,
      },
    ]);
    // Emitted oldest first, so newest first in the list.
    expect(await projectEvents(sourceId)).toEqual([
      { name: 'delta', ...metaOf(delta) },
      { name: 'gamma', ...metaOf(gamma) },
    ]);
    expect(await cursorOf(sourceId)).toBe(delta.id);

    await user.runAndWait(sourceId, {});
    expect(mock.requests.slice(seen + 1)).toEqual([
      { method: 'GET', path: '/api/v4/projects', query: { id_after: String(delta.id), owned: 'true' }, authorization: `Bearer ${firstToken}`, status: 200 },
    ]);
    expect(await eventsNow(sourceId)).toHaveLength(2);
    expect((await eventsNow(sourceId, '/$logs')).map((l) => l.event.msg)).toContain('No new GitLab projects detected');
    expect(await eventsNow(sourceId, '/$errors')).toEqual([]);
  });

  it('a revoked token fails the run with GitLab 401 on $errors; rotating it with PUT /v1/accounts/{id} reaches the next request', async () => {
    mock.acceptOnly(secondToken);
    const seen = mock.requests.length;
    await user.runAndWait(sourceId, {});
    expect(mock.requests.slice(seen).map((r) => [r.authorization, r.status])).toEqual([[`Bearer ${firstToken}`, 401]]);
    const [failure] = await eventsNow(sourceId, '/$errors');
    expect(failure.event.error).toMatchObject({ name: 'AxiosError - Request failed with status code 401', message: '{"message":"401 Unauthorized"}' });

    const rotated = await user.api.put(`/v1/accounts/${accountId}`, { credentials: credentials(secondToken) });
    expect(rotated.status).toBe(200);
    const epsilon = add('epsilon');
    await user.runAndWait(sourceId, {});
    expect(mock.requests.slice(seen + 1).map((r) => [r.authorization, r.query.id_after, r.status])).toEqual([
      [`Bearer ${secondToken}`, String(projects.delta!.id), 200],
    ]);
    expect((await projectEvents(sourceId))[0]).toEqual({ name: 'epsilon', ...metaOf(epsilon) });
    expect(await eventsNow(sourceId, '/$errors')).toHaveLength(1);
    // No request ever went without the account's token of its time.
    for (const r of mock.requests) expect([`Bearer ${firstToken}`, `Bearer ${secondToken}`]).toContain(r.authorization);
  });

  it('its timer polls too: at a 1 s interval a new project is emitted without a manual run', async () => {
    const seen = mock.requests.length;
    const changed = await user.api.patch(`/v1/sources/${sourceId}`, {
      configured_props: { gitlab: { authProvisionId: accountId }, timer: { intervalSeconds: 1 } },
    });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    // The update ran the activate hook again, with the rotated token.
    expect(mock.requests.slice(seen)).toEqual([
      { method: 'GET', path: '/api/v4/projects', query: { owned: 'true', per_page: '1' }, authorization: `Bearer ${secondToken}`, status: 200 },
    ]);
    expect(await cursorOf(sourceId)).toBe(projects.epsilon!.id);
    const zeta = add('zeta');
    const events = await waitFor(
      () => projectEvents(sourceId),
      (list) => list[0]?.name === 'zeta',
      { what: 'the timer to emit zeta' },
    );
    expect((await user.api.patch(`/v1/sources/${sourceId}`, { active: false })).status).toBe(200);
    expect(events).toEqual([{ name: 'zeta', ...metaOf(zeta) }, ...['epsilon', 'delta', 'gamma'].map((name) => ({ name, ...metaOf(projects[name]!) }))]);
    const polls = mock.requests.slice(seen + 1);
    expect(polls.length).toBeGreaterThan(0);
    for (const r of polls) expect([r.authorization, r.status, r.query.owned]).toEqual([`Bearer ${secondToken}`, 200, 'true']);
  });

  it('without --worker-ca-file the same requests fail on the certificate: the hook with 422, a run on $errors', async () => {
    const untrusting = await startTestServer(dialect, { allowPrivateNetwork: true });
    try {
      const other = await account(untrusting);
      const connected = await other.api.post('/v1/accounts', { app: 'gitlab', name: 'GitLab mock', credentials: credentials(secondToken) });
      expect(connected.status).toBe(200);
      const gitlab = { authProvisionId: connected.body.data.id };
      const seen = mock.requests.length;
      const refused = mock.refusedHandshakes.length;

      const hooked = await other.api.post('/v1/sources', { component_code: code.newProject, configured_props: { gitlab } });
      expect([hooked.status, hooked.body.code]).toEqual([422, 'hook_failed']);
      // Node 24 adds a hint to the message ("; if the root CA is installed locally, try running Node.js with --use-system-ca").
      expect(hooked.body.error).toMatch(/^activate\(\) hook failed: Error: unable to verify the first certificate($|; )/);

      // New Milestone, of the same app, has no hook: its run makes the request and fails on $errors.
      const deployed = await other.api.post('/v1/sources', { component_code: code.newMilestone, configured_props: { gitlab, projectId: projects.alpha!.id } });
      expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
      await other.runAndWait(deployed.body.data.id, {});
      const [failure] = await other.eventsOf(deployed.body.data.id, 1, '/$errors');
      expect(failure.event.error).toMatchObject({
        name: 'Error',
        code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
        message: expect.stringMatching(/^unable to verify the first certificate($|; )/),
      });

      // Both reached the mock and hung up in the handshake, before any request.
      expect(mock.requests.length).toBe(seen);
      expect(mock.refusedHandshakes.slice(refused)).toHaveLength(2);
    } finally {
      await untrusting.destroy();
    }
  });
});

describe('--worker-ca-file', () => {
  it('is resolved to its real path, and a missing, non-PEM or unreachable file stops the start with a ConfigError', () => {
    const dir = tempDir('tributary-ca-config-');
    try {
      const certs = makeTestCertificates();
      const link = path.join(dir, 'ca-link.pem');
      fs.symlinkSync(certs.caFile, link);
      expect(resolveConfig({ workerCaFile: link, workerUser: 'same' }).workerCaFile).toBe(fs.realpathSync(certs.caFile));
      expect(resolveConfig({}).workerCaFile).toBeUndefined();

      const missing = path.join(dir, 'missing.pem');
      expect(() => resolveConfig({ workerCaFile: missing })).toThrow(ConfigError);
      expect(() => resolveConfig({ workerCaFile: missing })).toThrow(`--worker-ca-file (TRIBUTARY_WORKER_CA_FILE): cannot read "${missing}": no such file`);
      const notPem = path.join(dir, 'not.pem');
      fs.writeFileSync(notPem, 'hello');
      expect(() => resolveConfig({ workerCaFile: notPem, workerUser: 'same' })).toThrow(`"${notPem}" holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
      const broken = path.join(dir, 'broken.pem');
      fs.writeFileSync(broken, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
      expect(() => resolveConfig({ workerCaFile: broken, workerUser: 'same' })).toThrow(`certificate 1 of "${broken}" cannot be read`);
      expect(() => resolveConfig({ workerCaFile: dir, workerUser: 'same' })).toThrow(`"${dir}" is not a file`);

      // The temp folder (0700) keeps out the worker user: the start stops rather than every HTTPS request failing.
      const hidden = path.join(dir, 'hidden.pem');
      fs.copyFileSync(certs.caFile, hidden);
      fs.chmodSync(dir, 0o700);
      expect(() => resolveConfig({ workerCaFile: hidden, workerUser: '65534:65534' })).toThrow(
        `the worker user (uid 65534) cannot read "${fs.realpathSync(dir)}": make the file readable and its folders traversable by others, or pass --worker-user same`,
      );
      expect(resolveConfig({ workerCaFile: hidden, workerUser: 'same' }).workerCaFile).toBe(fs.realpathSync(hidden));
      fs.rmSync(certs.dir, { recursive: true, force: true });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

function pick(object: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => k in object).map((k) => [k, object[k]]));
}
