// A source on a default server cannot call the server's own API: the refusal lands in its $errors stream, named.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, request } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

describe.each(DIALECTS)('egress of component code on %s', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    server = await startTestServer(dialect, { allowPrivateNetwork: false });
    api = client(server.url, (await server.createUser()).apiKey);
  });
  afterAll(() => server?.destroy());

  it("refuses a run's request to the server's own API and reports it in $errors", async () => {
    const code = `module.exports = { name: "prober", version: "1.0.0", props: { http: "$.interface.http" },
      async run() { const r = await fetch(${JSON.stringify(`${server.url}/v1/users/me`)}); this.$emit({ status: r.status }); } };`;
    const created = await api.post('/v1/sources', { component_code: code });
    expect(created.status).toBe(200);
    const { id } = created.body.data;
    expect((await request('POST', created.body.data.configured_props.http.endpoint_url, { body: {} })).status).toBe(200);
    const errors = await waitFor(
      () => api.get(`/v1/sources/${id}/$errors/event_summaries?expand=event`),
      (res) => res.body.data?.length === 1,
      { what: 'the refused run to report its error' },
    );
    expect(errors.body.data[0].event.error.message).toMatch(/^fetch failed: egress refused: 127\.0\.0\.1 port \d+ .*--egress-allow/);
    expect((await api.get(`/v1/sources/${id}/event_summaries`)).body.data).toEqual([]);
  });
});
