// Connected accounts: CRUD, ownership, `$auth` in runs, hooks, app methods and workflow steps, rotation, deletion in
// use, encryption at rest, no credential in the log, and OAuth refresh against a local token endpoint.
import fs from 'node:fs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/app.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import type { client } from '../helpers/client.js';
import { account } from '../helpers/account.js';
import { workflowCalls } from '../helpers/workflows.js';
import { APP_SOURCE, AUTH_STEP, filesUnder, OAUTH_SOURCE, OPTIONS_SOURCE, secret, startTokenEndpoint } from '../helpers/connected-accounts.js';

const VIEW_KEYS = ['app', 'created_at', 'fields', 'healthy', 'id', 'name', 'updated_at'];

describe.each(DIALECTS)('connected accounts on %s', (dialect) => {
  let server: TestServer;
  let tokens: Awaited<ReturnType<typeof startTokenEndpoint>>;
  let user: Awaited<ReturnType<typeof account>>;
  let other: Awaited<ReturnType<typeof account>>;
  const logLines: string[] = [];
  /** Every credential value these tests give the server: none may reach its log. */
  const given: string[] = [];
  const nowSeconds = () => Math.floor(Date.now() / 1000);

  beforeAll(async () => {
    tokens = await startTokenEndpoint();
    const logger = createLogger({ logLevel: 'trace' }, { write: (line: string) => void logLines.push(line) });
    server = await startTestServer(dialect, { allowPrivateNetwork: true }, { logger });
    user = await account(server);
    other = await account(server);
  });
  afterAll(async () => {
    await server?.destroy();
    await tokens?.close();
  });

  const { create: createWorkflow, finishedRuns } = workflowCalls(() => user.api);

  async function connect(api: ReturnType<typeof client>, credentials: Record<string, unknown>, app = 'acme', name = 'Acme') {
    for (const value of Object.values(credentials)) if (typeof value === 'string' && value.length > 12) given.push(value);
    const res = await api.post('/v1/accounts', { app, name, credentials });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data;
  }

  async function deploy(code: string, configured_props: object, name?: string) {
    const res = await user.api.post('/v1/sources', { component_code: code, configured_props, ...(name && { name }) });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data;
  }

  /** The source's newest event once it has `n`. */
  async function newestEvent(sourceId: string, n: number, stream = ''): Promise<any> {
    return (await user.eventsOf(sourceId, n, stream))[0].event;
  }

  it('creates, reads, lists, renames, rotates and deletes an account, never showing a credential', async () => {
    const key = secret('crud-key');
    const created = await user.api.post('/v1/accounts', {
      app: 'acme',
      name: 'Acme prod',
      credentials: { api_key: key, site_domain: 'acme.example', port: 443, tls: true },
    });
    given.push(key);
    expect(created.status).toBe(200);
    const view = created.body.data;
    expect(Object.keys(view).sort()).toEqual(VIEW_KEYS);
    expect(view).toMatchObject({ app: 'acme', name: 'Acme prod', fields: ['api_key', 'site_domain', 'port', 'tls'], healthy: true });
    expect(view.id).toMatch(/^apn_[0-9a-z]{26}$/);
    expect(view.created_at).toBe(view.updated_at);
    expect(Math.abs(view.created_at - nowSeconds())).toBeLessThan(5);

    const read = await user.api.get(`/v1/accounts/${view.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ data: view });
    const listed = await user.api.get('/v1/users/me/accounts');
    expect(listed.body.data.find((a: any) => a.id === view.id)).toEqual(view);

    const renamed = await user.api.put(`/v1/accounts/${view.id}`, { name: 'Acme staging' });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data).toMatchObject({ id: view.id, name: 'Acme staging', fields: view.fields, healthy: true });
    const rotatedKey = secret('crud-rotated');
    given.push(rotatedKey);
    const rotated = await user.api.put(`/v1/accounts/${view.id}`, { credentials: { api_key: rotatedKey } });
    expect(rotated.status).toBe(200);
    expect(rotated.body.data).toMatchObject({ name: 'Acme staging', fields: ['api_key'] });
    const nothing = await user.api.put(`/v1/accounts/${view.id}`, {});
    expect([nothing.status, nothing.body.error]).toEqual([400, 'give name, credentials or both: nothing else of a connected account changes']);
    expect((await user.api.get(`/v1/accounts/${view.id}`)).body.data.updated_at).toBe(rotated.body.data.updated_at);
    // Its name and credentials sent again change nothing, updated_at included (set back, so that this second would show).
    await server.running.services.store.db.updateTable('connected_accounts').set({ updated_at: 1_000_000_000 }).where('id', '=', view.id).execute();
    const again = await user.api.put(`/v1/accounts/${view.id}`, { name: 'Acme staging', credentials: { api_key: rotatedKey } });
    expect([again.status, again.body.data.updated_at]).toEqual([200, 1_000_000_000]);
    const renamedAgain = await user.api.put(`/v1/accounts/${view.id}`, { name: 'Acme staging 2' });
    expect(renamedAgain.body.data.updated_at).toBeGreaterThan(1_000_000_000);
    for (const res of [created, read, listed, renamed, rotated]) {
      expect(res.text).not.toContain(key);
      expect(res.text).not.toContain(rotatedKey);
    }

    const deleted = await user.api.delete(`/v1/accounts/${view.id}`);
    expect(deleted.status).toBe(204);
    expect((await user.api.get(`/v1/accounts/${view.id}`)).status).toBe(404);
  });

  it('refuses malformed apps and credentials with a 400 that names no value', async () => {
    const value = secret('bad-value');
    const cases: Array<[object, RegExp]> = [
      [{ app: 'Not A Slug', name: 'x', credentials: { api_key: value } }, /app/],
      [{ app: 'acme', name: 'x', credentials: {} }, /credentials/],
      [{ app: 'acme', name: 'x', credentials: { nested: { api_key: value } } }, /credentials/],
      [{ app: 'acme', name: 'x', credentials: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`f${i}`, value])) }, /credentials/],
      [{ app: 'acme', name: 'x', credentials: { a: value.repeat(400), b: value.repeat(400) } }, /at most 16384 bytes/],
      [{ app: 'acme', name: 'x', credentials: { api_key: value, expires_at: `soon ${value}` } }, /expires_at must be epoch seconds or an ISO 8601 date/],
      [{ app: 'acme', name: 'x', credentials: { oauth_token_url: `ftp://${value}` } }, /oauth_token_url must be an http or https URL/],
      [
        { app: 'acme', name: 'x', credentials: { oauth_access_token: value, oauth_client_auth: 'post' } },
        /^credentials.oauth_client_auth must be "basic" or "body"$/,
      ],
      [
        { app: 'acme', name: 'x', credentials: { oauth_access_token: value, oauth_client_auth: true } },
        /^credentials.oauth_client_auth must be "basic" or "body"$/,
      ],
      [{ app: 'acme', name: '  ', credentials: { api_key: value } }, /name/],
    ];
    for (const [body, message] of cases) {
      const res = await user.api.post('/v1/accounts', body);
      expect(res.status, JSON.stringify(body).slice(0, 200)).toBe(400);
      expect(res.body.code).toBe('invalid_request');
      expect(res.body.error).toMatch(message);
      expect(res.text).not.toContain(value);
    }
  });

  it("names the refused credential or name in the 400's details, as a schema's refusal does, on POST and PUT", async () => {
    const acme = await connect(user.api, { api_key: 'kept key' }, 'acme', 'details');
    const refusal = (field: string, message: string) => ({
      error: `${field} ${message}`,
      code: 'invalid_request',
      details: [{ in: 'body', field, message }],
    });
    const expiresAt = refusal('credentials.expires_at', 'must be epoch seconds or an ISO 8601 date');
    const created = await user.api.post('/v1/accounts', { app: 'acme', name: 'x', credentials: { expires_at: 'soon' } });
    expect([created.status, created.body]).toEqual([400, expiresAt]);
    const replaced = await user.api.put(`/v1/accounts/${acme.id}`, { credentials: { oauth_access_token: 'a', expires_at: 'soon' } });
    expect([replaced.status, replaced.body]).toEqual([400, expiresAt]);
    const url = await user.api.put(`/v1/accounts/${acme.id}`, { credentials: { oauth_token_url: 'ftp://x' } });
    expect([url.status, url.body]).toEqual([400, refusal('credentials.oauth_token_url', 'must be an http or https URL')]);
    const auth = await user.api.post('/v1/accounts', { app: 'acme', name: 'x', credentials: { oauth_client_auth: 'post' } });
    expect([auth.status, auth.body]).toEqual([400, refusal('credentials.oauth_client_auth', 'must be "basic" or "body"')]);
    const big = await user.api.post('/v1/accounts', { app: 'acme', name: 'x', credentials: { a: 'v'.repeat(9000), b: 'v'.repeat(9000) } });
    expect([big.status, big.body]).toEqual([400, refusal('credentials', 'may take at most 16384 bytes of JSON, not 18015')]);
    const blank = await user.api.put(`/v1/accounts/${acme.id}`, { name: '  ' });
    expect([blank.status, blank.body]).toEqual([400, refusal('name', 'must be a non-empty string')]);
    expect((await user.api.get(`/v1/accounts/${acme.id}`)).body.data).toEqual(acme);
  });

  it('refuses a field it does not take with a 400 naming it, and changes nothing', async () => {
    const acme = await connect(user.api, { api_key: 'unchanged key' }, 'acme', 'typo');
    const created = await user.api.post('/v1/accounts', { app: 'acme', name: 'x', credentials: { api_key: 'k' }, healthy: false });
    expect(created.status).toBe(400);
    expect(created.body).toMatchObject({ code: 'invalid_request', error: 'invalid body: must not have the field "healthy"' });
    // A misspelt `credentials` answered 200 with the name changed and the old credentials still in use.
    const renamed = await user.api.put(`/v1/accounts/${acme.id}`, { name: 'renamed', credentails: { api_key: 'new key' } });
    // The detail names the field, as a missing field's does, so that a client can point at it.
    expect([renamed.status, renamed.body]).toEqual([
      400,
      {
        error: 'invalid body: must not have the field "credentails"',
        code: 'invalid_request',
        details: [{ in: 'body', field: 'credentails', message: 'must not have the field "credentails"' }],
      },
    ]);
    expect((await user.api.get(`/v1/accounts/${acme.id}`)).body.data).toEqual(acme);
  });

  it('pages the list newest first like every list', async () => {
    const fresh = await account(server);
    const empty = await fresh.api.get('/v1/users/me/accounts');
    expect(empty.body).toEqual({ page_info: { total_count: 0, count: 0, start_cursor: 'head', end_cursor: 'head' }, data: [] });
    const ids: string[] = [];
    for (const n of [1, 2, 3]) ids.push((await connect(fresh.api, { api_key: `k${n}` }, 'acme', `n${n}`)).id);
    const first = await fresh.api.get('/v1/users/me/accounts?limit=2');
    expect(first.body.page_info).toMatchObject({ total_count: 3, count: 2 });
    expect(first.body.data.map((a: any) => a.id)).toEqual([ids[2], ids[1]]);
    const second = await fresh.api.get(`/v1/users/me/accounts?limit=2&after=${first.body.page_info.end_cursor}`);
    expect(second.body.data.map((a: any) => a.id)).toEqual([ids[0]]);
    const back = await fresh.api.get(`/v1/users/me/accounts?limit=2&before=${second.body.page_info.start_cursor}`);
    expect(back.body.data.map((a: any) => a.id)).toEqual([ids[2], ids[1]]);
    expect((await fresh.api.get('/v1/users/me/accounts?after=apn_bogus')).body.code).toBe('invalid_cursor');
  });

  it("answers 404 for another account's connected account on every route and at every deploy", async () => {
    const theirs = await connect(other.api, { api_key: secret('theirs') });
    const notFound = { error: `connected account "${theirs.id}" not found`, code: 'not_found' };
    expect((await user.api.get(`/v1/accounts/${theirs.id}`)).body).toEqual(notFound);
    expect((await user.api.put(`/v1/accounts/${theirs.id}`, { name: 'mine now' })).body).toEqual(notFound);
    const deleted = await user.api.delete(`/v1/accounts/${theirs.id}?force=true`);
    expect([deleted.status, deleted.body]).toEqual([404, notFound]);
    expect((await user.api.get('/v1/users/me/accounts?limit=100')).body.data.map((a: any) => a.id)).not.toContain(theirs.id);

    // A deploy's 404 names the prop too, as its 422s do, so that a form can mark the field.
    const onProp = (id: string, label = '') => ({
      error: `connected account "${id}" not found`,
      code: 'not_found',
      details: [{ prop: 'acme', message: `${label}names connected account "${id}", which is not found` }],
    });
    const deployed = await user.api.post('/v1/sources', { component_code: OAUTH_SOURCE, configured_props: { acme: { authProvisionId: theirs.id } } });
    expect([deployed.status, deployed.body]).toEqual([404, onProp(theirs.id)]);
    const bogus = await user.api.post('/v1/sources', { component_code: OAUTH_SOURCE, configured_props: { acme: { authProvisionId: 'apn_nope' } } });
    expect([bogus.status, bogus.body]).toEqual([404, onProp('apn_nope')]);
    const workflow = await user.api.post('/v1/workflows', {
      name: 'theirs',
      steps: [{ name: 'read', component_code: AUTH_STEP, configured_props: { acme: { authProvisionId: theirs.id } } }],
    });
    expect([workflow.status, workflow.body]).toEqual([404, onProp(theirs.id, 'steps[0] ("read"): ')]);
    const source = await deploy(OAUTH_SOURCE, {});
    const patched = await user.api.patch(`/v1/sources/${source.id}`, { configured_props: { acme: { authProvisionId: theirs.id } } });
    expect([patched.status, patched.body]).toEqual([404, onProp(theirs.id)]);
    // The owner still has it, untouched.
    expect((await other.api.get(`/v1/accounts/${theirs.id}`)).body.data).toMatchObject({ name: 'Acme', healthy: true });
  });

  it("refuses an account of another app than the prop's with 422 props_invalid", async () => {
    const wrong = await connect(user.api, { api_key: secret('wrong-app') }, 'globex');
    const res = await user.api.post('/v1/sources', { component_code: OAUTH_SOURCE, configured_props: { acme: { authProvisionId: wrong.id } } });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      error: `invalid configured_props: acme names connected account ${wrong.id} of app "globex"; the prop needs an account of app "acme"`,
      code: 'props_invalid',
      details: [{ prop: 'acme', message: `names connected account ${wrong.id} of app "globex"; the prop needs an account of app "acme"` }],
    });
    const step = await user.api.post('/v1/workflows', {
      name: 'wrong app',
      steps: [{ name: 'read', component_code: AUTH_STEP, configured_props: { acme: { authProvisionId: wrong.id } } }],
    });
    expect([step.status, step.body.code]).toEqual([422, 'props_invalid']);
    expect(step.body.error).toMatch(/^steps\[0\] \("read"\): invalid configured_props: acme names connected account/);
  });

  it('refuses an app prop value with a field besides authProvisionId, as a data_store prop does one besides name', async () => {
    const acme = await connect(user.api, { api_key: secret('extra-field') });
    const before = (await user.api.get('/v1/users/me/sources')).body.page_info.total_count;
    const res = await user.api.post('/v1/sources', { component_code: OAUTH_SOURCE, configured_props: { acme: { authProvisionId: acme.id, extra: 1 } } });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      error: 'invalid configured_props: acme takes { authProvisionId } only, not the field "extra"',
      code: 'props_invalid',
      details: [{ prop: 'acme', message: 'takes { authProvisionId } only, not the field "extra"' }],
    });
    expect((await user.api.get('/v1/users/me/sources')).body.page_info.total_count).toBe(before);
  });

  it('gives $auth to run, the deploy hook and app methods, and a rotation reaches the next run', async () => {
    const first = secret('key-one');
    const acme = await connect(user.api, { api_key: first });
    const source = await deploy(APP_SOURCE, { acme: { authProvisionId: acme.id } });
    expect(source.configured_props.acme).toEqual({ authProvisionId: acme.id });
    await user.runAndWait(source.id, {});
    expect(await newestEvent(source.id, 1)).toEqual({ run: first, method: `Bearer ${first}`, deploy: first });

    const second = secret('key-two');
    given.push(second);
    expect((await user.api.put(`/v1/accounts/${acme.id}`, { credentials: { api_key: second } })).status).toBe(200);
    await user.runAndWait(source.id, {});
    expect(await newestEvent(source.id, 2)).toEqual({ run: second, method: `Bearer ${second}`, deploy: first });
  });

  it('gives $auth to a workflow step, read again for each run', async () => {
    const first = secret('step-one');
    const acme = await connect(user.api, { api_key: first });
    const workflow = await createWorkflow({
      name: 'reads auth',
      steps: [{ name: 'read', component_code: AUTH_STEP, configured_props: { acme: { authProvisionId: acme.id } } }],
    });
    expect(workflow.steps[0].configured_props).toEqual({ acme: { authProvisionId: acme.id } });
    expect((await user.api.post(`/v1/workflows/${workflow.id}/run`, {})).status).toBe(202);
    expect((await finishedRuns(workflow.id, 1))[0].steps[0].$return_value).toBe(first);
    const second = secret('step-two');
    given.push(second);
    await user.api.put(`/v1/accounts/${acme.id}`, { credentials: { api_key: second } });
    await user.api.post(`/v1/workflows/${workflow.id}/run`, {});
    expect((await finishedRuns(workflow.id, 2))[0].steps[0].$return_value).toBe(second);
  });

  it("gives $auth to a prop's options(), and refuses another account's id there as at deploy", async () => {
    const acme = await connect(user.api, { api_key: secret('options-key'), site: 'acme.dev' });
    const saved = await user.api.post('/v1/components', { component_code: OPTIONS_SOURCE });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    const options = (id: string) =>
      user.api.post(`/v1/components/${saved.body.data.id}/props/repo/options`, { configured_props: { acme: { authProvisionId: id } } });
    expect((await options(acme.id)).body.data).toEqual({ options: ['acme.dev/alpha', 'acme.dev/beta'], context: null, errors: [] });
    const theirs = await connect(other.api, { api_key: secret('options-theirs'), site: 'globex.dev' });
    const refused = (await options(theirs.id)).body.data;
    expect(refused).toMatchObject({ options: [], errors: [`connected account "${theirs.id}" not found`] });
  });

  it("refuses another account's id in a props reload of a component without additionalProps(), where no worker is asked", async () => {
    const theirs = await connect(other.api, { api_key: secret('reload-theirs') });
    const saved = await user.api.post('/v1/components', { component_code: APP_SOURCE });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    const reload = (configured_props: object) => user.api.post(`/v1/components/${saved.body.data.id}/props/reload`, { configured_props });
    const refused = await reload({ acme: { authProvisionId: theirs.id } });
    expect([refused.status, refused.body.data.errors]).toEqual([200, [`connected account "${theirs.id}" not found`]]);
    const mine = await connect(user.api, { api_key: secret('reload-mine') });
    expect((await reload({ acme: { authProvisionId: mine.id } })).body.data.errors).toEqual([]);
  });

  it('refuses to delete an account in use (409 naming the users), and with force=true deactivates them first', async () => {
    const key = secret('in-use');
    const acme = await connect(user.api, { api_key: key });
    const source = await deploy(APP_SOURCE, { acme: { authProvisionId: acme.id } }, 'uses acme');
    const workflow = await createWorkflow({
      name: 'flows with acme',
      steps: [{ name: 'read', component_code: AUTH_STEP, configured_props: { acme: { authProvisionId: acme.id } } }],
    });
    const refused = await user.api.delete(`/v1/accounts/${acme.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({
      error: `connected account "${acme.id}" is used by source "uses acme" (${source.id}), workflow "flows with acme" (${workflow.id}); delete with force=true to deactivate them and delete it`,
      code: 'conflict',
      details: [
        { type: 'source', id: source.id, name: 'uses acme', active: true },
        { type: 'workflow', id: workflow.id, name: 'flows with acme', active: true },
      ],
    });
    expect((await user.api.get(`/v1/accounts/${acme.id}`)).status).toBe(200);

    expect((await user.api.delete(`/v1/accounts/${acme.id}?force=true`)).status).toBe(204);
    expect((await user.api.get(`/v1/accounts/${acme.id}`)).status).toBe(404);
    const sources = (await user.api.get('/v1/users/me/sources?limit=100')).body.data;
    expect(sources.find((s: any) => s.id === source.id).active).toBe(false);
    expect((await user.api.get(`/v1/workflows/${workflow.id}`)).body.data.active).toBe(false);
    // The deactivate() hook ran, as for a PATCH { active: false }, while the credentials were still there.
    const row = await server.running.services.store.db
      .selectFrom('source_db')
      .select('value')
      .where('source_id', '=', source.id)
      .where('key', '=', 'seenAtDeactivate')
      .executeTakeFirst();
    expect(row && JSON.parse(row.value)).toBe(key);
    // Left off, it can be renamed and switched off again without the account; turning it back on needs one.
    const renamed = await user.api.patch(`/v1/sources/${source.id}`, { name: 'was acme', active: false });
    expect([renamed.status, renamed.body.data?.name, renamed.body.data?.active]).toEqual([200, 'was acme', false]);
    const again = await user.api.patch(`/v1/sources/${source.id}`, { active: true });
    expect([again.status, again.body.error]).toEqual([404, `connected account "${acme.id}" not found`]);
    const given = await user.api.patch(`/v1/sources/${source.id}`, { configured_props: { acme: { authProvisionId: acme.id } } });
    expect([given.status, given.body.error]).toEqual([404, `connected account "${acme.id}" not found`]);
    // So for the workflow: a PUT of `active` alone turned it on, and each of its runs then failed with account_missing.
    const renamedFlow = await user.api.put(`/v1/workflows/${workflow.id}`, { name: 'flowed with acme', active: false });
    expect([renamedFlow.status, renamedFlow.body.data?.active]).toEqual([200, false]);
    const flowAgain = await user.api.put(`/v1/workflows/${workflow.id}`, { active: true });
    expect([flowAgain.status, flowAgain.body.error]).toEqual([404, `connected account "${acme.id}" not found`]);
    expect((await user.api.get(`/v1/workflows/${workflow.id}`)).body.data).toMatchObject({ name: 'flowed with acme', active: false });
  });

  it('keeps both of a concurrent rename and rotation, and lets one of two concurrent deletes succeed', async () => {
    // On PostgreSQL these requests interleave: a rename wrote back the credentials it had read, undoing the
    // rotation, and both deletes (or an update after the delete) answered as if they had found the account.
    for (let i = 0; i < 20; i++) {
      const acme = await connect(user.api, { api_key: `before-${i}` }, 'acme', 'race');
      const [rotated, renamed] = await Promise.all([
        user.api.put(`/v1/accounts/${acme.id}`, { credentials: { [`rotated_${i}`]: 'v' } }),
        user.api.put(`/v1/accounts/${acme.id}`, { name: `renamed ${i}` }),
      ]);
      expect([rotated.status, renamed.status]).toEqual([200, 200]);
      expect((await user.api.get(`/v1/accounts/${acme.id}`)).body.data).toMatchObject({ name: `renamed ${i}`, fields: [`rotated_${i}`] });
      const answers = await Promise.all([user.api.delete(`/v1/accounts/${acme.id}`), user.api.delete(`/v1/accounts/${acme.id}`)]);
      expect(answers.map((a) => a.status).sort()).toEqual([204, 404]);
      expect(answers.find((a) => a.status === 404)!.body).toEqual({ error: `connected account "${acme.id}" not found`, code: 'not_found' });
      const late = await user.api.put(`/v1/accounts/${acme.id}`, { name: 'too late' });
      expect(late.status).toBe(404);
    }
  });

  it('never deletes an account that a source or workflow deployed at the same time came to name', async () => {
    // On PostgreSQL a deploy checked the account, the delete found no user and removed it, then the deploy committed:
    // an active source and workflow naming an account that was gone, the delete answered 204.
    for (let i = 0; i < 15; i++) {
      const acme = await connect(user.api, { api_key: `race ${i}` }, 'acme', 'raced');
      const named = { acme: { authProvisionId: acme.id } };
      const [source, workflow, deleted] = await Promise.all([
        user.api.post('/v1/sources', { component_code: OAUTH_SOURCE, configured_props: named }),
        user.api.post('/v1/workflows', { name: 'raced', steps: [{ name: 'read', component_code: AUTH_STEP, configured_props: named }] }),
        user.api.delete(`/v1/accounts/${acme.id}`),
      ]);
      // The same 404 whether the check before the transaction or the hold inside it found the account gone.
      const notFound = (label = '') => ({
        error: `connected account "${acme.id}" not found`,
        code: 'not_found',
        details: [{ prop: 'acme', message: `${label}names connected account "${acme.id}", which is not found` }],
      });
      if (deleted.status === 204) {
        expect([source.status, source.body]).toEqual([404, notFound()]);
        expect([workflow.status, workflow.body]).toEqual([404, notFound('steps[0] ("read"): ')]);
      } else {
        expect([deleted.status, deleted.body.code]).toEqual([409, 'conflict']);
        // Named by what had committed when the delete looked (a deploy committing after the 409 is not).
        const users = [source, workflow].filter((r) => r.status === 200).map((r) => r.body.data.id);
        expect(deleted.body.details.length).toBeGreaterThan(0);
        for (const listed of deleted.body.details) expect(users).toContain(listed.id);
        if (source.status === 200) await user.api.delete(`/v1/sources/${source.body.data.id}`);
        if (workflow.status === 200) await user.api.delete(`/v1/workflows/${workflow.body.data.id}`);
      }
    }
  });

  it('keeps no credential readable at rest', async () => {
    const first = secret('at-rest-one');
    const second = secret('at-rest-two');
    const acme = await connect(user.api, { api_key: first, oauth_client_secret: first });
    given.push(second);
    await user.api.put(`/v1/accounts/${acme.id}`, { credentials: { api_key: second } });
    const db = server.running.services.store.db;
    const row = await db.selectFrom('connected_accounts').selectAll().where('id', '=', acme.id).executeTakeFirstOrThrow();
    expect(row.credentials).toMatch(/^enc:v2:/);
    if (dialect === 'sqlite') {
      const files = filesUnder(server.dataDir);
      expect(files.some((f) => f.endsWith('.db'))).toBe(true);
      for (const file of files) {
        const bytes = fs.readFileSync(file);
        expect(bytes.includes(first), file).toBe(false);
        expect(bytes.includes(second), file).toBe(false);
      }
    } else {
      const { rows } = await sql<{ t: string }>`select t::text as t from connected_accounts t`.execute(db);
      expect(rows.length).toBeGreaterThan(0);
      for (const { t } of rows) {
        expect(t).not.toContain(first);
        expect(t).not.toContain(second);
      }
    }
  });

  describe('OAuth', () => {
    function oauth(refreshToken: string, path: string, expiresAt: number | string) {
      return {
        oauth_access_token: secret(`access-${refreshToken}`),
        oauth_refresh_token: refreshToken,
        expires_at: expiresAt,
        oauth_client_id: 'tributary client',
        oauth_client_secret: secret('client-secret'),
        oauth_token_url: `${tokens.url}${path}`,
      };
    }

    it('refreshes an expired token once before the run, which sees the new one', async () => {
      const refresh = secret('refresh');
      const credentials = oauth(refresh, '/token', nowSeconds() - 60);
      const acme = await connect(user.api, credentials);
      const source = await deploy(OAUTH_SOURCE, { acme: { authProvisionId: acme.id } });
      const before = tokens.requests.length;
      await user.runAndWait(source.id, {});
      expect(await newestEvent(source.id, 1)).toEqual({ token: `new-${refresh}` });
      expect(tokens.requests.length).toBe(before + 1);
      const request = tokens.requests.at(-1)!;
      expect(request.contentType).toBe('application/x-www-form-urlencoded');
      expect(Object.fromEntries(request.body)).toEqual({ grant_type: 'refresh_token', refresh_token: refresh });
      const basic = Buffer.from(`tributary+client:${credentials.oauth_client_secret}`).toString('base64');
      expect(request.authorization).toBe(`Basic ${basic}`);

      // The new token is stored (with the rotated refresh token): the next run needs no refresh.
      await user.runAndWait(source.id, {});
      expect(await newestEvent(source.id, 2)).toEqual({ token: `new-${refresh}` });
      expect(tokens.requests.length).toBe(before + 1);
      expect((await user.api.get(`/v1/accounts/${acme.id}`)).body.data).toMatchObject({ healthy: true, fields: Object.keys(credentials) });
    });

    it('refreshes an expired token of a workflow step (expires_at as an ISO date)', async () => {
      const refresh = secret('step-refresh');
      const acme = await connect(user.api, oauth(refresh, '/token', new Date(Date.now() - 60_000).toISOString()));
      const workflow = await createWorkflow({
        name: 'oauth step',
        steps: [{ name: 'read', component_code: AUTH_STEP, configured_props: { acme: { authProvisionId: acme.id } } }],
      });
      await user.api.post(`/v1/workflows/${workflow.id}/run`, {});
      expect((await finishedRuns(workflow.id, 1))[0].steps[0].$return_value).toBe(`new-${refresh}`);
    });

    it('fails the run with a clear $errors entry and marks the account unhealthy when the refresh fails', async () => {
      const acme = await connect(user.api, oauth(secret('revoked'), '/fail', nowSeconds() - 60));
      const source = await deploy(OAUTH_SOURCE, { acme: { authProvisionId: acme.id } });
      await user.runAndWait(source.id, { n: 1 });
      const failure = await newestEvent(source.id, 1, '/$errors');
      expect(failure.error).toMatchObject({
        name: 'OAuthRefreshError',
        code: 'oauth_refresh_failed',
        message: `could not refresh the OAuth token of account ${acme.id}: the token endpoint answered 400 (invalid_grant)`,
      });
      expect(failure.original_event).toEqual({ n: 1 });
      expect((await user.api.get(`/v1/accounts/${acme.id}`)).body.data.healthy).toBe(false);
      expect((await user.api.get(`/v1/sources/${source.id}/event_summaries`)).body.data).toEqual([]);
      // A hook that cannot have its credentials fails its request, as a hook that throws does.
      const hooked = await user.api.post('/v1/sources', { component_code: APP_SOURCE, configured_props: { acme: { authProvisionId: acme.id } } });
      expect([hooked.status, hooked.body.code]).toEqual([422, 'hook_failed']);
      expect(hooked.body.error).toBe(
        `deploy() could not run: could not refresh the OAuth token of account ${acme.id}: the token endpoint answered 400 (invalid_grant)`,
      );

      // New credentials make it healthy again, and the next run uses them.
      const fresh = oauth(secret('reconnected'), '/token', nowSeconds() + 3600);
      given.push(fresh.oauth_access_token);
      expect((await user.api.put(`/v1/accounts/${acme.id}`, { credentials: fresh })).body.data.healthy).toBe(true);
      await user.runAndWait(source.id, {});
      expect(await newestEvent(source.id, 1)).toEqual({ token: fresh.oauth_access_token });
    });

    it('refreshes and retries a run once when the component gets an HTTP 401', async () => {
      const refresh = secret('on-401');
      const acme = await connect(user.api, oauth(refresh, '/token', nowSeconds() + 3600));
      const source = await deploy(OAUTH_SOURCE, { acme: { authProvisionId: acme.id } });
      const before = tokens.requests.length;
      await user.runAndWait(source.id, { needs: `new-${refresh}` });
      expect(await newestEvent(source.id, 1)).toEqual({ token: `new-${refresh}` });
      expect(tokens.requests.length).toBe(before + 1);
      const logs = await user.eventsOf(source.id, 1, '/$logs');
      expect(logs.map((l: any) => l.event.msg)).toContain('the run got HTTP 401: the OAuth token was refreshed and the run retried once');
      // A token that still gets a 401 after the refresh fails the run: retried once, not again.
      await user.runAndWait(source.id, { needs: 'a token no server gives' });
      const failure = await newestEvent(source.id, 1, '/$errors');
      expect(failure.error.message).toBe('Request failed with status code 401');
      expect(tokens.requests.length).toBe(before + 2);
    });
  });

  it('never writes a credential to the log', () => {
    // The server logged at trace level all along (every request, the failed refresh): the log is not empty.
    expect(logLines.some((line) => line.includes('/v1/accounts'))).toBe(true);
    expect(logLines.some((line) => line.includes('OAuth token refresh failed'))).toBe(true);
    const log = logLines.join('');
    for (const value of given) expect(log.includes(value), value).toBe(false);
  });
});
