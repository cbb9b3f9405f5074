// The console in Chromium: the long lists of one thing (a workflow's runs, a webhook's deliveries, a source's events)
// page back to the oldest, a Load more at a time.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type client, request } from '../helpers/client.js';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { BROWSER_SUITE, evaluate, newAccount, openSignedIn, waitForFocus, withServerAndBrowser } from './browser.js';

const HTTP_SOURCE = `module.exports = {
  name: "Hook", version: "0.1.0", props: { http: "$.interface.http" },
  async run(event) { this.$emit(event.body); },
};`;

/** A source that emitted 130 events ({ n: 0 } to { n: 129 }): its newest 100 summaries, then the 30 older ones in full. */
async function sourceWith130Events(api: ReturnType<typeof client>, name: string) {
  const source = (await api.post('/v1/sources', { component_code: HTTP_SOURCE, name })).body.data;
  for (let i = 0; i < 130; i += 10) {
    const sent = await Promise.all(Array.from({ length: 10 }, (_, j) => request('POST', source.configured_props.http.endpoint_url, { body: { n: i + j } })));
    expect(sent.map((res) => res.status)).toEqual(sent.map(() => 200));
  }
  const newest = await waitFor(
    async () => (await api.get(`/v1/sources/${source.id}/event_summaries?limit=100`)).body,
    (body) => body.page_info.total_count === 130,
    { what: 'every event emitted' },
  );
  const older = (await api.get(`/v1/sources/${source.id}/event_summaries?limit=100&after=${newest.page_info.end_cursor}&expand=event`)).body.data;
  return { source, newest, older };
}

const STEP = `export default defineComponent({ async run({ steps }) { return steps.trigger.event.n; } });`;

describe.each(DIALECTS)('web console: paging (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  let receiver: http.Server;
  let receiverUrl: string;

  beforeAll(async () => {
    // The webhooks' destination, which takes everything.
    receiver = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => receiver?.close(resolve));
  });
  withServerAndBrowser(
    dialect,
    (started, launched) => {
      server = started;
      browser = launched;
    },
    { allowPrivateNetwork: true, eventRetention: 1000 },
  );

  it("pages back through a workflow's runs to the oldest, and a refresh keeps the pages opened", async () => {
    const { user, api } = await newAccount(server);
    const workflow = (await api.post('/v1/workflows', { name: 'many runs', trigger: null, steps: [{ name: 'one', component_code: STEP }] })).body.data;
    const started: string[] = [];
    for (let n = 0; n < 30; n++) {
      const run = await api.post(`/v1/workflows/${workflow.id}/run`, { n });
      expect(run.status, run.text).toBe(202);
      started.push(run.body.data.id);
    }
    await waitFor(
      async () => (await api.get(`/v1/workflows/${workflow.id}/runs?limit=100&status=succeeded`)).body.page_info.total_count,
      (done) => done === started.length,
      { what: 'every run finished' },
    );
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/workflows/${workflow.id}`, user.apiKey);
    const rows = page.locator('table.runs tbody th a');
    await rows.nth(24).waitFor();
    // The newest 25 were all the page showed: the first five runs could not be reached.
    expect(await rows.count()).toBe(25);
    // From the keyboard: the focus goes to the first run the press brought, not (with the button gone) the page's top.
    await page.getByRole('button', { name: 'Load more' }).focus();
    await page.keyboard.press('Enter');
    await rows.nth(29).waitFor();
    await waitForFocus(page, 'table.runs tbody tr:nth-child(26) th a', new RegExp(`^${started[4]}$`));
    expect(await rows.allTextContents()).toEqual([...started].reverse());
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);

    // A new run and a Refresh: the new one on top, the oldest still shown.
    const newest = (await api.post(`/v1/workflows/${workflow.id}/run`, { n: 30 })).body.data.id;
    await page.getByRole('button', { name: 'Refresh' }).click();
    await rows.filter({ hasText: newest }).waitFor();
    expect(await rows.allTextContents()).toEqual([newest, ...[...started].reverse()]);

    // The oldest run opens from its row.
    await rows.filter({ hasText: started[0]! }).click();
    await page.getByRole('heading', { name: new RegExp(`Run ${started[0]}`) }).waitFor();
    // It opened below the 31 rows, out of sight, the focus left on its link: now the focus and the view are on it.
    await waitForFocus(page, '#run-title');
    const [top, height] = await evaluate<[number, number]>(page, `[document.getElementById('run-title').getBoundingClientRect().top, innerHeight]`);
    expect(top >= 0 && top < height).toBe(true);
    await finish();
  });

  it("pages back through a webhook's deliveries past the newest 100", async () => {
    const { user, api } = await newAccount(server);
    const source = (await api.post('/v1/sources', { component_code: HTTP_SOURCE, name: 'feed' })).body.data;
    const hook = (await api.post(`/v1/webhooks?url=${encodeURIComponent(receiverUrl)}&name=sink`)).body.data;
    expect((await api.post(`/v1/subscriptions?emitter_id=${source.id}&listener_id=${hook.id}`)).status).toBe(200);
    for (let i = 0; i < 105; i += 15) {
      const sent = await Promise.all(Array.from({ length: 15 }, (_, j) => request('POST', source.configured_props.http.endpoint_url, { body: { n: i + j } })));
      expect(sent.map((res) => res.status)).toEqual(sent.map(() => 200));
    }
    const delivered = await waitFor(
      async () => (await api.get(`/v1/webhooks/${hook.id}/deliveries?limit=100`)).body,
      (body) => body.page_info.total_count === 105 && body.data.every((d: any) => d.state === 'succeeded'),
      { what: 'every event delivered' },
    );
    const older = (await api.get(`/v1/webhooks/${hook.id}/deliveries?limit=100&after=${delivered.page_info.end_cursor}`)).body.data;
    const events = [...delivered.data, ...older].map((d: any) => d.event_id);

    const { page, finish } = await openSignedIn(browser, `${server.url}/#/webhooks/${hook.id}`, user.apiKey);
    const rows = page.locator('table.deliveries tbody tr');
    await rows.nth(99).waitFor();
    // The newest 100 were all the log showed.
    expect(await rows.count()).toBe(100);
    await page.getByRole('button', { name: 'Load more' }).focus();
    await page.keyboard.press('Enter');
    await rows.nth(104).waitFor();
    await waitForFocus(page, 'table.deliveries tbody tr:nth-child(101) a');
    expect(await rows.locator('td code').allTextContents()).toEqual(events);
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
    await finish();
  });

  it("pages back through a source's events past the newest 100, and new live events stay on top", async () => {
    const { user, api } = await newAccount(server);
    const { source, newest, older } = await sourceWith130Events(api, 'many events');
    const ids = [...newest.data, ...older].map((e: any) => e.id);
    expect(ids).toHaveLength(130);

    const { page, finish } = await openSignedIn(browser, `${server.url}/#/sources/${source.id}`, user.apiKey);
    const rows = page.locator('table.events-table tbody tr');
    await rows.nth(99).waitFor();
    await page.locator('.live-state.live').waitFor();
    // The newest 100 were all the table showed: the first 30 events could not be reached.
    expect(await rows.count()).toBe(100);
    // A live event while the older pages are unread: it goes on top, and the 100th row gives way to it.
    const live = await request('POST', source.configured_props.http.endpoint_url, { body: { n: 130 } });
    expect(live.status).toBe(200);
    await rows.first().filter({ hasText: '"n":130' }).waitFor();
    expect(await rows.count()).toBe(100);
    const liveId = await rows.first().getAttribute('data-event-id');

    await page.getByRole('button', { name: 'Load more' }).focus();
    await page.keyboard.press('Enter');
    await rows.nth(130).waitFor();
    // The focus goes to the first event the press brought: the 101st row's time.
    await waitForFocus(page, 'table.events-table tbody tr:nth-child(101) button');
    const shown = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-event-id')));
    expect(shown).toEqual([liveId, ...ids]);
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
    expect(await page.locator('.events .toolbar .muted').textContent()).toBe('131 events');

    // The oldest event opens from its row.
    await rows.last().click();
    await page.getByRole('heading', { name: `Event ${ids.at(-1)}` }).waitFor();
    await finish();
  });

  it("opens a link to a source's event older than the newest 100, down the table", async () => {
    const { user, api } = await newAccount(server);
    const { source, older } = await sourceWith130Events(api, 'linked far back');
    expect(older).toHaveLength(30);
    const oldest = older.at(-1);

    const { page, finish } = await openSignedIn(browser, `${server.url}/#/sources/${source.id}/events/${oldest.id}`, user.apiKey);
    await page.getByRole('heading', { name: `Event ${oldest.id}` }).waitFor();
    await page.getByRole('tab', { name: 'Events', selected: true }).waitFor();
    expect(await page.getByRole('figure', { name: 'Event JSON' }).textContent()).toContain(`"n": ${oldest.event.n}`);
    const rows = page.locator('table.events-table tbody tr');
    expect(await rows.count()).toBe(130);
    expect(await rows.last().getAttribute('data-event-id')).toBe(oldest.id);
    expect(await page.getByRole('alert').count()).toBe(0);
    await finish();
  });
});
