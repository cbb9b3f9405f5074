// The console in Chromium: a workflow's runs, a webhook's delivery log and the sources list show what the server added
// or removed since they were read (a run its endpoint started, an attempt of an event emitted since, a source created or
// deleted through the API), with nothing pressed.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { BROWSER_SUITE, newAccount, openSignedIn, waitForText, withServerAndBrowser } from './browser.js';

const STEP = `export default defineComponent({ async run({ steps }) { return steps.trigger.event.body; } });`;

const HTTP_SOURCE = `module.exports = {
  name: "Hook", version: "0.1.0", props: { http: "$.interface.http" },
  async run(event) { this.$emit(event.body); },
};`;

describe.each(DIALECTS)('web console: lists that follow the server (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  let receiver: http.Server;
  let receiverUrl: string;

  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  });
  withServerAndBrowser(
    dialect,
    (started, launched) => {
      server = started;
      browser = launched;
    },
    { allowPrivateNetwork: true },
  );
  afterAll(async () => {
    await new Promise((resolve) => receiver?.close(resolve));
  });

  it("lists the runs a workflow's endpoint starts while its page is open, the first and the ones after it", async () => {
    const { user, api } = await newAccount(server);
    const workflow = (await api.post('/v1/workflows', { name: 'hooked', trigger: { type: 'http' }, steps: [{ name: 'echo', component_code: STEP }] })).body
      .data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/workflows/${workflow.id}`, user.apiKey);
    const table = page.locator('table.runs');
    await waitForText(table, 'No runs yet: a request to its endpoint starts one');
    // The list was read once: the run this request started never showed, under "No runs yet".
    expect((await request('POST', workflow.trigger.endpoint_url, { body: { n: 1 } })).status).toBe(200);
    const rows = table.locator('tbody tr');
    await waitForText(rows.first().locator('.badge'), 'succeeded');
    expect(await rows.allTextContents()).toEqual([expect.stringMatching(/^wr_\w+succeededhttp/)]);
    // With every listed run finished, a later request's run shows too.
    expect((await request('POST', workflow.trigger.endpoint_url, { body: { n: 2 } })).status).toBe(200);
    await rows.nth(1).waitFor();
    await waitForText(rows.first().locator('.badge'), 'succeeded');
    const runs = (await api.get(`/v1/workflows/${workflow.id}/runs`)).body.data;
    expect(await table.locator('tbody th a').allTextContents()).toEqual(runs.map((run: { id: string }) => run.id));
    await finish();
  });

  it("lists the attempts of events emitted while a webhook's delivery log is open, though it showed none", async () => {
    const { user, api } = await newAccount(server);
    const source = (await api.post('/v1/sources', { component_code: HTTP_SOURCE, name: 'feed' })).body.data;
    const hook = (await api.post(`/v1/webhooks?url=${encodeURIComponent(receiverUrl)}&name=sink`)).body.data;
    expect((await api.post(`/v1/subscriptions?emitter_id=${source.id}&listener_id=${hook.id}`)).status).toBe(200);
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/webhooks/${hook.id}`, user.apiKey);
    const table = page.locator('table.deliveries');
    await waitForText(table, 'Nothing delivered yet.');
    expect((await request('POST', source.configured_props.http.endpoint_url, { body: { n: 1 } })).status).toBe(200);
    const rows = table.locator('tbody tr');
    await waitForText(rows.first().locator('.badge'), 'succeeded');
    expect(await rows.count()).toBe(1);
    // With no attempt pending, an event emitted later is delivered and shows as well.
    expect((await request('POST', source.configured_props.http.endpoint_url, { body: { n: 2 } })).status).toBe(200);
    await rows.nth(1).waitFor();
    await waitForText(rows.first().locator('.badge'), 'succeeded');
    expect(await table.locator('tbody .badge').allTextContents()).toEqual(['succeeded', 'succeeded']);
    await finish();
  });

  it('lists the sources created and leaves out those deleted through the API while the sources list is open', async () => {
    const { user, api } = await newAccount(server);
    const kept = (await api.post('/v1/sources', { component_code: HTTP_SOURCE, name: 'kept' })).body.data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/sources`, user.apiKey);
    const names = page.locator('table.sources tbody th');
    await waitForText(names, 'kept');
    // The list was read once: a source created elsewhere never showed until the page was loaded again.
    const added = await api.post('/v1/sources', { component_code: HTTP_SOURCE, name: 'added' });
    expect(added.status).toBe(200);
    await waitForText(names, 'added');
    expect(await names.allTextContents()).toEqual(['added', 'kept']);
    // And one deleted elsewhere stayed listed.
    expect((await api.delete(`/v1/sources/${kept.id}`)).status).toBe(204);
    await page.locator('table.sources tbody th', { hasText: 'kept' }).waitFor({ state: 'detached' });
    expect(await names.allTextContents()).toEqual(['added']);
    expect(await page.locator('table.sources tbody th a').getAttribute('href')).toBe(`#/sources/${added.body.data.id}`);
    await finish();
  });

  it("shows a listed source's newer events in its last event and sparkline, read again every 30 s", async () => {
    const { user, api } = await newAccount(server);
    const source = (await api.post('/v1/sources', { component_code: HTTP_SOURCE, name: 'quiet' })).body.data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/sources`, user.apiKey, { clock: true });
    const cells = page.locator('table.sources tbody tr', { hasText: 'quiet' }).getByRole('cell');
    await waitForText(cells.nth(2), 'never');
    expect(await page.locator('table.sources svg.sparkline').getAttribute('aria-label')).toBe('0 events in the last 30 minutes');
    expect((await request('POST', source.configured_props.http.endpoint_url, { body: { n: 1 } })).status).toBe(200);
    await waitFor(
      () => api.get(`/v1/sources/${source.id}/event_summaries`),
      (r) => r.body.data?.length === 1,
      { what: 'the event stored' },
    );
    // Read once, the row said "never" until the page was loaded again.
    await page.clock.runFor(30_000);
    await cells
      .nth(2)
      .filter({ hasText: /^\d+ s ago$/ })
      .waitFor();
    expect(await page.locator('table.sources svg.sparkline').getAttribute('aria-label')).toBe('1 event in the last 30 minutes');
    await finish();
  });
});
