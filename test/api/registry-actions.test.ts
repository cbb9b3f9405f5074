// Real actions of the reference service's public registry run unmodified as workflow steps: they come from the
// app's package as published on npm (@pipedream/helper_functions, pinned in the lockfile). Each is bundled with
// esbuild as the client CLI does (the server refuses relative imports), npm packages and @pipedream/platform
// staying imports the server provides.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleCode } from '../../src/client/bundle.js';
import { client } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { workflowCalls } from '../helpers/workflows.js';

const PACKAGE = path.dirname(createRequire(import.meta.url).resolve('@pipedream/helper_functions/package.json'));

/** An action of the published package, bundled as the client CLI bundles a step file (relative imports inlined). */
function bundle(action: string): Promise<string> {
  return bundleCode(path.join(PACKAGE, action));
}

const ACTIONS = {
  base64Decode: 'actions/base64-decode-string/base64-decode-string.mjs',
  exportVariables: 'actions/export-variables/export-variables.mjs',
  delay: 'actions/delay/delay.mjs',
  xmlToJson: 'actions/xml-to-json/xml-to-json.mjs',
  newRssStories: 'actions/retrieve-new-rss-stories/retrieve-new-rss-stories.mjs',
} as const;

type ActionName = keyof typeof ACTIONS;

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

  it('Base64 Decode String exports the decoded UTF-8 string', async () => {
    const text = 'Hello, Tributary! 🌊';
    const workflow = await create({
      name: 'base64',
      steps: [{ name: 'decode', component_code: code.base64Decode, configured_props: { data: '{{ steps.trigger.event.body.data }}' } }],
    });
    expect(workflow.steps[0].configured_props).toEqual({ helper_functions: {}, data: '{{ steps.trigger.event.body.data }}' });
    const run = await runOnce(workflow.id, { data: Buffer.from(text).toString('base64') });
    expect(run.status).toBe('succeeded');
    expect(run.steps[0].exports).toEqual({ data: text });
    expect(run.steps[0]).not.toHaveProperty('$return_value');
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
});
