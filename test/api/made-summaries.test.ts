// The summaries the server makes, a `$logs` line's and an error's, are their text's first 200 characters (code
// points): cut in UTF-16 units, an emoji at the edge was cut in half, and the lone surrogate left came back as U+FFFD.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { workflowCalls } from '../helpers/workflows.js';

describe.each(DIALECTS)('summaries the server makes, on %s', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  const { create, finishedRuns } = workflowCalls(() => api);

  beforeAll(async () => {
    server = await startTestServer(dialect);
    api = client(server.url, (await server.createUser({ plan: 'paid' })).apiKey);
  });
  afterAll(async () => {
    await server?.destroy();
  });

  const summaries = (path: string) =>
    waitFor(
      async () => (await api.get(path)).body.data.map((e: { metadata: { summary: string } }) => e.metadata.summary),
      (found: string[]) => found.length > 0,
      { what: path },
    );

  it("keeps a $logs line's and an error's first 200 characters whole, an emoji at the edge too", async () => {
    // 199 "a" and an emoji are 200 characters (201 UTF-16 units); "Error: ", 192 "b" and an emoji likewise.
    const code = `module.exports = { name: "edges", version: "1.0.0", async run() {
      console.log("a".repeat(199) + "\\u{1F600}tail");
      throw new Error("b".repeat(192) + "\\u{1F600}tail");
    } };`;
    const created = await api.post('/v1/sources', { component_code: code });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id: string = created.body.data.id;
    expect((await api.post(`/v1/sources/${id}/run`, {})).status).toBe(202);
    expect(await summaries(`/v1/sources/${id}/$logs/event_summaries`)).toEqual([`${'a'.repeat(199)}😀`]);
    expect(await summaries(`/v1/sources/${id}/$errors/event_summaries`)).toEqual([`Error: ${'b'.repeat(192)}😀`]);
  });

  it("keeps a failed workflow step's error summary whole at the edge", async () => {
    const step = 'export default defineComponent({ async run() { throw new TypeError("c".repeat(188) + "\\u{1F600}tail"); } });';
    const workflow = await create({ name: 'edges', steps: [{ name: 'fails', component_code: step }] });
    expect((await api.post(`/v1/workflows/${workflow.id}/run`, { body: {} })).status).toBe(202);
    await finishedRuns(workflow.id, 1);
    // "TypeError: " is 11 characters: with 188 "c" and the emoji, 200.
    expect(await summaries(`/v1/workflows/${workflow.id}/$errors/event_summaries`)).toEqual([`TypeError: ${'c'.repeat(188)}😀`]);
  });
});
