// A prop that was secret and is plain in the new code keeps its value as the value it stands for: sent back as the
// placeholder, or kept by omitting configured_props. The sealed text itself was stored as the plain value (the run got
// ciphertext, GET showed `enc:v1:…`), and the placeholder was stored as the value.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';

const VALUE = 'pw-7c1e04';
const source = (secret: boolean) =>
  `module.exports = { name: "s", version: "${secret ? 1 : 2}", props: { pw: { type: "string", secret: ${secret} } }, async run() { this.$emit({ pw: this.pw }); } };`;

describe.each(DIALECTS)('a secret prop turned plain on %s', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    server = await startTestServer(dialect);
    api = client(server.url, (await server.createUser({ plan: 'paid' })).apiKey);
  });
  afterAll(() => server?.destroy());

  it.each([
    ['PATCH with the placeholder', 'patch', { configured_props: { pw: '********' } }],
    ['PATCH without configured_props', 'patch', {}],
    ['PUT without configured_props', 'put', {}],
  ] as const)('keeps the value opened on a %s', async (_, method, body) => {
    const created = await api.post('/v1/sources', { component_code: source(true), configured_props: { pw: VALUE } });
    expect(created.body.data.configured_props).toEqual({ pw: '********' });
    const id = created.body.data.id;
    const updated = await api[method](`/v1/sources/${id}`, { component_code: source(false), ...body });
    expect([updated.status, updated.body.data?.configured_props]).toEqual([200, { pw: VALUE }]);
    expect((await api.get(`/v1/sources/${id}`)).body.data.configured_props).toEqual({ pw: VALUE });
    expect((await api.post(`/v1/sources/${id}/run`, {})).status).toBe(202);
    const events = await waitFor(
      () => api.get(`/v1/sources/${id}/event_summaries`),
      (r) => r.body.data?.length === 1,
      { what: 'the run event' },
    );
    expect(events.body.data[0].event).toEqual({ pw: VALUE });
  });
});
