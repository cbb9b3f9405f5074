// The console in Chromium on a slow server: each page's Delete, once confirmed, says Deleting… and asks nothing more
// until its DELETE has answered, so that a second press cannot send a second DELETE (whose 404 replaced "Deleted").
import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { request } from '../helpers/client.js';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { BROWSER_SUITE, holdUntilReleased, newAccount, openSignedIn, waitForText, withServerAndBrowser } from './browser.js';

const HTTP_SOURCE = `module.exports = { name: "Hook", version: "0.1.0", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body); } };`;

describe.each(DIALECTS)('web console: deleting on a slow server (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  /**
   * Presses `button`, confirms with `confirm` in the dialog, then presses the button again while the DELETE is held:
   * it says Deleting… (aria-disabled) and opens no second question. Released, one DELETE went, and `done` is said.
   */
  async function deleteOnce(page: Page, button: string | RegExp, confirm: string, done: string): Promise<string[]> {
    // Only DELETEs: the reads go on, so that the page is drawn as the server says.
    const { held: deletes, release } = await holdUntilReleased(page, '**/v1/**', 'DELETE');
    await page
      .getByRole('button', { name: button, exact: typeof button === 'string' })
      .first()
      .click();
    await page.getByRole('dialog').getByRole('button', { name: confirm }).click();
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    const busy = page.locator('main button', { hasText: /^Deleting…$/ });
    await busy.waitFor();
    expect(await busy.getAttribute('aria-disabled')).toBe('true');
    // Forced: Playwright waits for an aria-disabled button to be enabled; a user's press comes anyway.
    await busy.click({ force: true });
    expect(await page.getByRole('dialog').count()).toBe(0);
    expect(deletes).toHaveLength(1);
    release();
    await waitForText(page.getByRole('status'), done);
    expect(deletes).toHaveLength(1);
    return deletes;
  }

  it("a source's and a workflow's Delete send one DELETE each", async () => {
    const { user, api } = await newAccount(server);
    const source = (await api.post('/v1/sources', { component_code: HTTP_SOURCE, name: 'slow source' })).body.data;
    const workflow = (
      await api.post('/v1/workflows', {
        name: 'slow workflow',
        steps: [{ name: 'echo', component_code: 'export default defineComponent({ async run() { return 1; } });' }],
      })
    ).body.data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/sources/${source.id}`, user.apiKey);
    expect(await deleteOnce(page, 'Delete', 'Delete source', 'Deleted slow source.')).toEqual([`/v1/sources/${source.id}`]);
    expect(page.url()).toMatch(/#\/sources$/);
    await page.unrouteAll();
    await page.goto(`${server.url}/#/workflows/${workflow.id}`);
    await page.getByRole('heading', { name: 'slow workflow' }).waitFor();
    expect(await deleteOnce(page, 'Delete', 'Delete workflow', 'Deleted slow workflow.')).toEqual([`/v1/workflows/${workflow.id}`]);
    expect((await api.get('/v1/users/me/sources')).body.data).toEqual([]);
    expect((await api.get('/v1/users/me/workflows')).body.data).toEqual([]);
    await finish();
  });

  it("a webhook's and a subscription's Delete send one DELETE each, their row saying Deleting…", async () => {
    const { user, api } = await newAccount(server);
    const hook = (await api.post(`/v1/webhooks?url=${encodeURIComponent('https://example.com/hook')}&name=slowhook`)).body.data;
    expect((await api.post(`/v1/subscriptions?emitter_id=dc_*&listener_id=${hook.id}`)).status).toBe(200);
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/subscriptions`, user.apiKey);
    await page.getByRole('row').filter({ hasText: hook.id }).waitFor();
    await deleteOnce(page, /^Delete subscription /, 'Delete subscription', 'Unsubscribed');
    await page.getByText('No subscriptions yet.').waitFor();
    await page.unrouteAll();
    await page.goto(`${server.url}/#/webhooks`);
    expect(await deleteOnce(page, /^Delete webhook /, 'Delete webhook', 'Deleted webhook slowhook.')).toEqual([`/v1/webhooks/${hook.id}`]);
    await page.getByText('No webhooks yet.').waitFor();
    expect((await api.get('/v1/users/me/webhooks')).body.data).toEqual([]);
    await finish();
  });

  it("a source's Delete this event and Delete range send one DELETE each, the button pressed saying Deleting…", async () => {
    const { user, api } = await newAccount(server);
    const source = (await api.post('/v1/sources', { component_code: HTTP_SOURCE, name: 'slow events' })).body.data;
    for (const n of [1, 2, 3]) expect((await request('POST', source.configured_props.http.endpoint_url, { body: { n } })).status).toBe(200);
    const events = async () => (await api.get(`/v1/sources/${source.id}/event_summaries`)).body.data as Array<{ id: string }>;
    // The endpoint answers before the runs emit.
    const three = await waitFor(events, (list) => list.length === 3, { what: 'the three events' });
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/sources/${source.id}`, user.apiKey);
    const table = page.getByRole('region', { name: 'Events of this source' });
    await table.locator(`tr[data-event-id="${three[0]!.id}"]`).click();
    const path = `/v1/sources/${source.id}/events`;
    expect(await deleteOnce(page, 'Delete this event', 'Delete', `Deleted event ${three[0]!.id}.`)).toEqual([path]);
    await table.locator(`tr[data-event-id="${three[0]!.id}"]`).waitFor({ state: 'detached' });
    expect((await events()).map((e) => e.id)).toEqual([three[1]!.id, three[2]!.id]);
    await page.unrouteAll();
    // Neither id: every event.
    expect(await deleteOnce(page, 'Delete range', 'Delete', 'Deleted the events.')).toEqual([path]);
    await page.getByText('No events yet').waitFor();
    expect(await events()).toEqual([]);
    await finish();
  });

  it("a connected account's and a data store's Delete send one DELETE each", async () => {
    const { user, api } = await newAccount(server);
    const account = (await api.post('/v1/accounts', { app: 'acme', name: 'slow account', credentials: { api_key: 'k' } })).body.data;
    expect((await api.put('/v1/data_stores/slowstore/records?key=a', { value: 1 })).status).toBe(200);
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/connected-accounts/${account.id}`, user.apiKey);
    expect(await deleteOnce(page, 'Delete', 'Delete connected account', 'Deleted connected account slow account.')).toEqual([`/v1/accounts/${account.id}`]);
    await page.unrouteAll();
    await page.goto(`${server.url}/#/data-stores/slowstore`);
    await deleteOnce(page, 'Delete store', 'Delete store', 'Deleted data store slowstore');
    expect((await api.get('/v1/users/me/accounts')).body.data).toEqual([]);
    expect((await api.get('/v1/data_stores')).body.data).toEqual([]);
    await finish();
  });
});
