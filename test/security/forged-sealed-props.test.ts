// A value that looks sealed (`enc:v2:…`) given to a prop that is not secret is the client's text, not a secret this
// server sealed: when the prop turns secret (other code, or what additionalProps() says), a secret's placeholder must
// not keep it, or the run would get it opened. With a copy of the database, an account could so read every account's
// connected-account credentials and secret props through its own source.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';

const CREDENTIAL = 'owner-credential-5d2f9a';
const plain = (version: string) =>
  `module.exports = { name: "s", version: "${version}", props: { pw: { type: "string" } }, async run() { this.$emit({ pw: this.pw }); } };`;
const secret = `module.exports = { name: "s", version: "2.0.0", props: { pw: { type: "string", secret: true } }, async run() { this.$emit({ pw: this.pw }); } };`;
/** `x` is secret or not as the answer to `flag` says. */
const flipping = (kind: 'source' | 'step') => `${kind === 'source' ? 'module.exports = { name: "f", version: "1.0.0",' : 'export default defineComponent({'}
  props: { flag: { type: "boolean", reloadProps: true } },
  async additionalProps() { return { x: { type: "string", secret: this.flag } }; },
  async run() { ${kind === 'source' ? 'this.$emit({ x: this.x });' : 'return this.x;'} } }${kind === 'source' ? '' : ')'};`;

const keptButNone = (prop: string, label = '') => {
  const message = `is "********", which keeps a stored secret, but none is stored: give the value`;
  return { error: `${label}invalid configured_props: ${prop} ${message}`, code: 'props_invalid', details: [{ prop, message }] };
};

describe.each(DIALECTS)('a sealed-looking value of a prop that was not secret, on %s', (dialect) => {
  let server: TestServer;
  let thief: ReturnType<typeof client>;
  let sealed: string;

  beforeAll(async () => {
    server = await startTestServer(dialect);
    const owner = client(server.url, (await server.createUser({ plan: 'paid' })).apiKey);
    thief = client(server.url, (await server.createUser({ plan: 'paid' })).apiKey);
    const account = await owner.post('/v1/accounts', { app: 'acme', name: 'Acme', credentials: { api_key: CREDENTIAL } });
    expect(account.status).toBe(200);
    // What a copy of the database shows of the owner's credentials.
    const db = server.running.services.store.db;
    sealed = (await db.selectFrom('connected_accounts').select('credentials').where('id', '=', account.body.data.id).executeTakeFirstOrThrow()).credentials;
    expect(sealed).toMatch(/^enc:v2:/);
  });
  afterAll(() => server?.destroy());

  it('is not kept as a secret when other code makes the prop secret', async () => {
    const created = await thief.post('/v1/sources', { component_code: plain('1.0.0'), configured_props: { pw: sealed } });
    expect(created.status).toBe(200);
    const id = created.body.data.id;
    for (const body of [{ component_code: secret, configured_props: { pw: '********' } }, { component_code: secret }]) {
      const res = await thief.patch(`/v1/sources/${id}`, body);
      expect([res.status, res.body]).toEqual([422, keptButNone('pw')]);
    }
    const after = await thief.get(`/v1/sources/${id}`);
    expect([after.body.data.component_id, after.body.data.configured_props]).toEqual([created.body.data.component_id, { pw: sealed }]);
    // Code where the prop stays plain keeps the text as it is.
    const again = await thief.patch(`/v1/sources/${id}`, { component_code: plain('1.0.1') });
    expect([again.status, again.body.data.configured_props]).toEqual([200, { pw: sealed }]);
  });

  it("is not kept as a secret when additionalProps() makes the prop secret, on a source and on a workflow's step", async () => {
    const created = await thief.post('/v1/sources', { component_code: flipping('source'), configured_props: { flag: false, x: sealed } });
    expect([created.status, created.body.data?.configured_props]).toEqual([200, { flag: false, x: sealed }]);
    const res = await thief.patch(`/v1/sources/${created.body.data.id}`, { configured_props: { flag: true, x: '********' } });
    expect([res.status, res.body]).toEqual([422, keptButNone('x')]);
    expect((await thief.get(`/v1/sources/${created.body.data.id}`)).body.data.configured_props).toEqual({ flag: false, x: sealed });

    const step = { name: 's', component_code: flipping('step') };
    const workflow = await thief.post('/v1/workflows', { name: 'w', steps: [{ ...step, configured_props: { flag: false, x: sealed } }] });
    expect(workflow.status, JSON.stringify(workflow.body)).toBe(200);
    const changed = await thief.put(`/v1/workflows/${workflow.body.data.id}`, { steps: [{ ...step, configured_props: { flag: true, x: '********' } }] });
    expect([changed.status, changed.body]).toEqual([422, keptButNone('x', 'steps[0] ("s"): ')]);
    expect((await thief.get(`/v1/workflows/${workflow.body.data.id}`)).body.data.steps[0].configured_props).toEqual({ flag: false, x: sealed });
  });
});
