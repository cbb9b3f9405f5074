// Real actions of the reference service's public registry (test/fixtures/pipedream, copied verbatim from
// PipedreamHQ/pipedream) run unmodified as workflow steps. Each is bundled with esbuild as the client CLI does
// (the server refuses relative imports), npm packages and @pipedream/platform staying imports the server provides.
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, request } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { workflowCalls } from '../helpers/workflows.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/pipedream/', import.meta.url));

/** The action bundled as the client CLI bundles it: its relative imports inlined, packages left as imports. */
async function bundle(action: string): Promise<string> {
  const result = await build({
    entryPoints: [`${FIXTURES}${action}`],
    bundle: true,
    format: 'esm',
    platform: 'node',
    write: false,
    packages: 'external',
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}

const ACTIONS = {
  base64Decode: 'helper_functions/actions/base64-decode-string/base64-decode-string.mjs',
  exportVariables: 'helper_functions/actions/export-variables/export-variables.mjs',
  delay: 'helper_functions/actions/delay/delay.mjs',
  xmlToJson: 'helper_functions/actions/xml-to-json/xml-to-json.mjs',
  newRssStories: 'helper_functions/actions/retrieve-new-rss-stories/retrieve-new-rss-stories.mjs',
  workflowDelay: 'delay/actions/workflow-delay/workflow-delay.mjs',
  verifyHmac: 'http/actions/verify-hmac-signature/verify-hmac-signature.mjs',
  returnHttpResponse: 'http/actions/return-http-response/return-http-response.mjs',
} as const;

type ActionName = keyof typeof ACTIONS;

/** A code step that answers the request, for the requests the HMAC action lets through. */
const ACCEPT_STEP = `export default defineComponent({ async run({ steps, $ }) { await $.respond({ status: 202, body: { accepted: steps.trigger.event.body } }); } });`;

/** A local RSS feed whose items the test changes between runs. */
function rssFeed(items: Array<{ title: string; link: string }>): string {
  const entries = items.map((i) => `<item><title>${i.title}</title><link>${i.link}</link><guid>${i.link}</guid></item>`).join('');
  return `<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>Tributary news</title><link>http://example.test/</link><description>d</description>${entries}</channel></rss>`;
}

describe.each(DIALECTS)('registry actions on %s', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  let feedServer: http.Server;
  let feedUrl: string;
  let feedItems: Array<{ title: string; link: string }> = [];
  const code = {} as Record<ActionName, string>;

  beforeAll(async () => {
    for (const [name, file] of Object.entries(ACTIONS)) code[name as ActionName] = await bundle(file);
    server = await startTestServer(dialect, { allowPrivateNetwork: true });
    api = client(server.url, (await server.createUser()).apiKey);
    feedServer = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/rss+xml' });
      res.end(rssFeed(feedItems));
    });
    await new Promise<void>((resolve) => feedServer.listen(0, '127.0.0.1', resolve));
    feedUrl = `http://127.0.0.1:${(feedServer.address() as AddressInfo).port}/feed.xml`;
  });
  afterAll(async () => {
    await new Promise((resolve) => feedServer?.close(resolve));
    await server?.destroy();
  });

  const { create, finishedRuns } = workflowCalls(() => api);

  /** Starts a manual run with `body` as the event's body and waits for it (and those before it) to finish. */
  async function runOnce(workflowId: string, body: unknown, count = 1): Promise<any> {
    const started = await api.post(`/v1/workflows/${workflowId}/run`, { body });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const runs = await finishedRuns(workflowId, count);
    return runs.find((r) => r.id === started.body.data.id);
  }

  it('Base64 Decode String exports the decoded UTF-8 string, or the raw bytes with outputFormat binary', async () => {
    const text = 'Hello, Tributary! 🌊';
    const workflow = await create({
      name: 'base64',
      steps: [
        { name: 'decode', component_code: code.base64Decode, configured_props: { data: '{{ steps.trigger.event.body.data }}' } },
        {
          name: 'decode_binary',
          component_code: code.base64Decode,
          configured_props: { data: '{{ steps.trigger.event.body.data }}', outputFormat: 'binary' },
        },
      ],
    });
    expect(workflow.steps[0].configured_props).toEqual({ helper_functions: {}, data: '{{ steps.trigger.event.body.data }}', outputFormat: 'utf8' });
    const run = await runOnce(workflow.id, { data: Buffer.from(text).toString('base64') });
    expect(run.status).toBe('succeeded');
    expect(run.steps.map((s: any) => [s.name, s.status])).toEqual([
      ['decode', 'succeeded'],
      ['decode_binary', 'succeeded'],
    ]);
    expect(run.steps[0].exports).toEqual({ data: text });
    expect(run.steps[0]).not.toHaveProperty('$return_value');
    // A Buffer is exported as JSON.stringify writes it.
    expect(run.steps[1].exports).toEqual({ data: { type: 'Buffer', data: [...Buffer.from(text)] } });
  });

  it('Export Variables exports its config object, parses a JSON string, and fails with its ConfigurationError otherwise', async () => {
    const literal = await create({
      name: 'export literal',
      steps: [{ name: 'vars', component_code: code.exportVariables, configured_props: { config: { region: 'eu', retries: 3, tags: ['a', 'b'] } } }],
    });
    const run = await runOnce(literal.id, {});
    expect(run.status).toBe('succeeded');
    expect(run.steps[0].exports).toEqual({ config: { region: 'eu', retries: 3, tags: ['a', 'b'] } });

    const templated = await create({
      name: 'export template',
      steps: [
        { name: 'vars', component_code: code.exportVariables, configured_props: { config: '{{ steps.trigger.event.body.config }}' } },
        { name: 'use', component_code: 'export default defineComponent({ async run({ steps }) { return steps.vars.config.retries * 2; } });' },
      ],
    });
    const fromObject = await runOnce(templated.id, { config: { retries: 4 } });
    expect(fromObject.status).toBe('succeeded');
    expect(fromObject.steps[0].exports).toEqual({ config: { retries: 4 } });
    expect(fromObject.steps[1].$return_value).toBe(8);

    // A custom expression giving a string is parsed by the action itself (its `parse` method).
    const fromString = await runOnce(templated.id, { config: '{"retries": 5}' }, 2);
    expect(fromString.status).toBe('succeeded');
    expect(fromString.steps[0].exports).toEqual({ config: { retries: 5 } });
    expect(fromString.steps[1].$return_value).toBe(10);

    // The ConfigurationError of @pipedream/platform, as the server provides it, fails the step by its name.
    const bad = await runOnce(templated.id, { config: 'not json' }, 3);
    expect(bad.status).toBe('failed');
    expect(bad.steps.map((s: any) => [s.name, s.status])).toEqual([['vars', 'failed']]);
    expect(bad.steps[0].error).toMatchObject({ name: 'ConfigurationError', message: 'Make sure the custom expression contains a valid object' });
    expect(bad.error).toMatchObject({ name: 'ConfigurationError', step: 'vars' });
  });

  it('Delay by N milliseconds (helper_functions) waits inside its step, then the next step runs', async () => {
    const workflow = await create({
      name: 'helper delay',
      steps: [
        { name: 'wait', component_code: code.delay, configured_props: { ms: '300' } },
        { name: 'after', component_code: 'export default defineComponent({ async run() { return "after"; } });' },
      ],
    });
    const run = await runOnce(workflow.id, {});
    expect(run.status).toBe('succeeded');
    expect(run.steps[0].exports).toEqual({ $summary: 'Workflow successfully delayed for 300 ms' });
    expect(run.steps[0].duration_ms).toBeGreaterThanOrEqual(290);
    expect(run.steps[1].$return_value).toBe('after');
  });

  it('Delay Workflow (delay app) delays the run with $.flow.delay: the run is delayed, then succeeds', async () => {
    const workflow = await create({
      name: 'flow delay',
      steps: [
        { name: 'delay', component_code: code.workflowDelay, configured_props: { delayDurationValue: 1, delayDurationUnit: 'Seconds' } },
        { name: 'after', component_code: 'export default defineComponent({ async run() { return "after"; } });' },
      ],
    });
    expect(workflow.steps[0].configured_props).toEqual({ delay: {}, delayDurationValue: 1, delayDurationUnit: 'Seconds' });
    const started = await api.post(`/v1/workflows/${workflow.id}/run`, { body: {} });
    expect(started.status).toBe(202);
    const delayed = await waitFor(
      () => api.get(`/v1/workflows/${workflow.id}/runs/${started.body.data.id}`),
      (r) => r.body.data.status === 'delayed',
      { what: 'the run to be delayed' },
    );
    expect(delayed.body.data.steps.map((s: any) => s.name)).toEqual(['delay']);
    expect(delayed.body.data.steps[0].exports).toEqual({ $summary: 'Successfully configured this workflow to delay for 1 Seconds.' });
    // The action returns what $.flow.delay gave it; Tributary has no resume or cancel links, so both are left out.
    expect(delayed.body.data.steps[0].$return_value).toEqual({});
    const [run] = await finishedRuns(workflow.id, 1);
    expect(run.status).toBe('succeeded');
    expect(run.steps.map((s: any) => s.name)).toEqual(['delay', 'after']);
    expect(run.steps[1].started_at_ms - run.steps[0].started_at_ms).toBeGreaterThanOrEqual(1000);
    expect(run.steps[1].$return_value).toBe('after');
  });

  it('XML to JSON returns the xml-js compact conversion', async () => {
    const workflow = await create({
      name: 'xml',
      steps: [{ name: 'xml', component_code: code.xmlToJson, configured_props: { input: '{{ steps.trigger.event.body.xml }}' } }],
    });
    const xml =
      '<?xml version="1.0" encoding="utf-8"?><note importance="high"><to>Tove</to><from>Jani</from><tag>a</tag><tag>b</tag><body>Don\'t forget me this weekend!</body></note>';
    const run = await runOnce(workflow.id, { xml });
    expect(run.status).toBe('succeeded');
    expect(run.steps[0].exports).toEqual({ $summary: 'Successfully converted XML to JSON' });
    expect(run.steps[0].$return_value).toEqual({
      _declaration: { _attributes: { version: '1.0', encoding: 'utf-8' } },
      note: {
        _attributes: { importance: 'high' },
        to: { _text: 'Tove' },
        from: { _text: 'Jani' },
        tag: [{ _text: 'a' }, { _text: 'b' }],
        body: { _text: "Don't forget me this weekend!" },
      },
    });
  });

  /** The step's `$.service.db` as the server stored it. */
  async function stepDb(workflowId: string, step: string): Promise<Record<string, unknown>> {
    const rows = await server.running.services.store.db
      .selectFrom('workflow_step_db')
      .select(['key', 'value'])
      .where('workflow_id', '=', workflowId)
      .where('step', '=', step)
      .execute();
    return Object.fromEntries(rows.map((r) => [r.key, JSON.parse(r.value)]));
  }

  const FIRST = { title: 'First', link: 'http://example.test/1' };
  const SECOND = { title: 'Second', link: 'http://example.test/2' };
  const THIRD = { title: 'Third', link: 'http://example.test/3' };
  const story = (item: { title: string; link: string }) => ({ ...item, guid: item.link });

  it('Retrieve New RSS Stories returns the feed items with rss-parser and records their links in its $.service.db', async () => {
    feedItems = [FIRST, SECOND];
    const workflow = await create({
      name: 'rss first',
      steps: [{ name: 'rss', component_code: code.newRssStories, configured_props: { rss_feeds: ['{{ steps.trigger.event.body.feed }}'] } }],
    });
    const run = await runOnce(workflow.id, { feed: feedUrl });
    expect(run.status).toBe('succeeded');
    expect(run.steps[0].$return_value).toEqual([story(FIRST), story(SECOND)]);
    expect(run.steps[0].logs.map((l: any) => l.msg)).toEqual(['Tributary news', 'First:http://example.test/1', 'Second:http://example.test/2']);
    expect(await stepDb(workflow.id, 'rss')).toEqual({ $checkpoint: [FIRST.link, SECOND.link] });
  });

  // The action reads what it saw from `this.$checkpoint` and writes it with `this.db.set("$checkpoint", …)`.
  it('Retrieve New RSS Stories returns only the items it has not seen on later runs, and exits when there are none', async () => {
    feedItems = [FIRST, SECOND];
    const workflow = await create({
      name: 'rss again',
      steps: [
        { name: 'rss', component_code: code.newRssStories, configured_props: { rss_feeds: [feedUrl] } },
        { name: 'after', component_code: 'export default defineComponent({ async run({ steps }) { return steps.rss.$return_value.length; } });' },
      ],
    });
    const first = await runOnce(workflow.id, {});
    expect(first.steps.map((s: any) => s.$return_value)).toEqual([[story(FIRST), story(SECOND)], 2]);

    const second = await runOnce(workflow.id, {}, 2);
    expect(second).toMatchObject({ status: 'succeeded', exit_reason: 'No new stories' });
    expect(second.steps.map((s: any) => s.name)).toEqual(['rss']);

    feedItems = [THIRD, FIRST, SECOND];
    const third = await runOnce(workflow.id, {}, 3);
    expect(third.steps.map((s: any) => s.$return_value)).toEqual([[story(THIRD)], 1]);
    expect(await stepDb(workflow.id, 'rss')).toEqual({ $checkpoint: [FIRST.link, SECOND.link, THIRD.link] });
  });

  const HMAC_SECRET = 'hmac-test-secret';
  const sign = (body: string) => createHmac('sha256', HMAC_SECRET).update(body, 'utf8').digest('hex');
  const verifyStep = (customResponse?: boolean) => ({
    name: 'verify',
    component_code: code.verifyHmac,
    configured_props: {
      secret: HMAC_SECRET,
      signature: '{{ steps.trigger.event.headers["x-signature"] }}',
      bodyRaw: '{{ steps.trigger.event.bodyRaw }}',
      ...(customResponse !== undefined && { customResponse }),
    },
  });

  it('Verify HMAC Signature answers 401 through $.respond and ends the run with $.flow.exit for a bad signature, and lets a good one through', async () => {
    const workflow = await create({
      name: 'hmac',
      trigger: { type: 'http', custom_response: true },
      steps: [verifyStep(), { name: 'accept', component_code: ACCEPT_STEP }],
    });
    expect(workflow.steps[0].configured_props).toEqual({
      http: {},
      secret: '********',
      signature: '{{ steps.trigger.event.headers["x-signature"] }}',
      bodyRaw: '{{ steps.trigger.event.bodyRaw }}',
      customResponse: true,
    });
    const body = '{"order":42,"total":"9.99"}';
    const raw = { body, contentType: 'application/json' };

    const bad = await request('POST', workflow.trigger.endpoint_url, { raw, headers: { 'x-signature': sign(`${body} `) } });
    expect(bad.status).toBe(401);
    expect(bad.text).toBe('Invalid credentials');

    const good = await request('POST', workflow.trigger.endpoint_url, { raw, headers: { 'x-signature': sign(body) } });
    expect(good.status).toBe(202);
    expect(good.body).toEqual({ accepted: { order: 42, total: '9.99' } });

    const runs = await finishedRuns(workflow.id, 2);
    const [accepted, refused] = runs;
    expect(refused).toMatchObject({ status: 'succeeded', trigger: 'http', exit_reason: 'Invalid credentials' });
    expect(refused.steps.map((s: any) => [s.name, s.status])).toEqual([['verify', 'succeeded']]);
    expect(refused.steps[0].exports).toEqual({});
    expect(accepted.status).toBe('succeeded');
    expect(accepted).not.toHaveProperty('exit_reason');
    expect(accepted.steps.map((s: any) => [s.name, s.status])).toEqual([
      ['verify', 'succeeded'],
      ['accept', 'succeeded'],
    ]);
    expect(accepted.steps[0].exports).toEqual({ $summary: 'HTTP request successfully authenticated' });
  });

  it('Verify HMAC Signature with customResponse false ends the run without answering: the caller gets 504 no_response', async () => {
    const workflow = await create({
      name: 'hmac quiet',
      trigger: { type: 'http', custom_response: true },
      steps: [verifyStep(false), { name: 'accept', component_code: ACCEPT_STEP }],
    });
    const body = 'plain text body';
    const res = await request('POST', workflow.trigger.endpoint_url, { raw: { body, contentType: 'text/plain' }, headers: { 'x-signature': 'abcd' } });
    expect(res.status).toBe(504);
    expect(res.body).toEqual({ error: 'the workflow did not respond: no step called $.respond()', code: 'no_response' });
    const [run] = await finishedRuns(workflow.id, 1);
    expect(run).toMatchObject({ status: 'succeeded', exit_reason: 'Invalid credentials' });
    expect(run.steps.map((s: any) => s.name)).toEqual(['verify']);
  });

  // The step the HMAC action is meant to be followed by; its `resBody` prop has type "any".
  it('Return HTTP Response answers the request a verified signature let through', async () => {
    const workflow = await create({
      name: 'hmac and respond',
      trigger: { type: 'http', custom_response: true },
      steps: [
        verifyStep(),
        {
          name: 'respond',
          component_code: code.returnHttpResponse,
          configured_props: { resStatusCode: 201, resHeaders: { 'x-verified': 'yes' }, resBody: '{{ steps.trigger.event.body }}' },
        },
      ],
    });
    const body = '{"order":7}';
    const res = await request('POST', workflow.trigger.endpoint_url, {
      raw: { body, contentType: 'application/json' },
      headers: { 'x-signature': sign(body) },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('x-verified')).toBe('yes');
    expect(res.body).toEqual({ order: 7 });
  });
});
