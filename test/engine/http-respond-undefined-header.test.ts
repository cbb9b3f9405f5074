// A respond() header whose value is undefined is left out, as the reference service's own quickstart source needs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, request } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

// Trimmed from PipedreamHQ/pipedream docs/docs/components/quickstart/nodejs/sources/README.md ("Invoke your code on
// HTTP requests"), with the `version` Tributary requires. Request header names arrive in lower case, so
// `event.headers["Content-Type"]` is undefined, and the echo must still answer with the body.
const QUICKSTART_ECHO = `
module.exports = {
  name: "Source Demo",
  version: "0.0.1",
  description: "This is a demo source",
  props: {
    db: "$.service.db",
    http: {
      type: "$.interface.http",
      customResponse: true
    },
  },
  async run(event) {
    let count = this.db.get("count") || 1;

    this.http.respond({
      status: 200,
      body: event.body,
      headers: {
        "Content-Type": event.headers["Content-Type"],
        "x-kept": "yes",
      },
    });

    this.$emit(event.body, {
      summary: \`Invocation #\${count}\`,
    });

    this.db.set("count", ++count);
  },
};
`;

describe.each(DIALECTS)('respond() headers left undefined on %s', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    server = await startTestServer(dialect);
    api = client(server.url, (await server.createUser()).apiKey);
  });
  afterAll(() => server?.destroy());

  it('answers the quickstart echo with its body and the other headers, and emits its events', async () => {
    const deployed = await api.post('/v1/sources', { component_code: QUICKSTART_ECHO });
    expect(deployed.status).toBe(200);
    const { id } = deployed.body.data;
    const url: string = deployed.body.data.configured_props.http.endpoint_url;

    const first = await request('POST', url, { body: { message: 'hello world!' } });
    expect([first.status, first.body]).toEqual([200, { message: 'hello world!' }]);
    expect(first.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(first.headers.get('x-kept')).toBe('yes');
    const second = await request('POST', url, { body: { message: 'again' } });
    expect([second.status, second.body]).toEqual([200, { message: 'again' }]);

    const events = await waitFor(
      () => api.get(`/v1/sources/${id}/event_summaries?expand=event`),
      (r) => r.body.data?.length === 2,
      { what: `2 events on ${id}` },
    );
    expect(events.body.data.map((e: { event: unknown; metadata: { summary: string } }) => [e.event, e.metadata.summary])).toEqual([
      [{ message: 'again' }, 'Invocation #2'],
      [{ message: 'hello world!' }, 'Invocation #1'],
    ]);
    const errors = await api.get(`/v1/sources/${id}/$errors/event_summaries`);
    expect(errors.body.data).toEqual([]);
  });
});
