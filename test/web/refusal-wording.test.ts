// The console in Chromium: a refusal reads once, wherever it is shown: the server's message, then its status and code,
// the code not repeated by a detail's reason; an answer that is not the server's JSON (a proxy's 502 page) says the
// status it came with, once.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { request } from '../helpers/client.js';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { BROWSER_SUITE, newAccount, openSignedIn, waitForText, withServerAndBrowser } from './browser.js';

const HTTP_SOURCE = `module.exports = { name: "Hook", version: "0.1.0", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body); } };`;
/** What a proxy in front of the server answers when the server is down: HTML, not the server's JSON error. */
const PROXY_502 = { status: 502, contentType: 'text/html', body: '<html><body><h1>502 Bad Gateway</h1></body></html>' };
/** What Chromium logs for such an answer, which these tests make. */
const LOGGED_502 = 'console: Failed to load resource: the server responded with a status of 502 (Bad Gateway)';

describe.each(DIALECTS)('web console: how a refusal reads (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  it("says a syntax error's message, status and code once, without the detail's reason after them", async () => {
    const { user } = await newAccount(server);
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/sources/new`, user.apiKey);
    await page.getByLabel('Component code').fill('export default { name: "x", version: "0.1.0", props: {}, async run() { this.$emit( } };');
    await page.getByRole('button', { name: 'Load props' }).click();
    await waitForText(page.locator('#component-error'), 'Unexpected "}"');
    // It read `… (422 component_invalid) — syntax_error`.
    expect(await page.locator('#component-error').textContent()).toBe('Unexpected "}" (line 1, column 84) (422 component_invalid)');
    await finish();
  });

  it("says a proxy's non-JSON 502 as the status the server answered, once, on a page and in a notice", async () => {
    const { user, api } = await newAccount(server);
    const source = (await api.post('/v1/sources', { component_code: HTTP_SOURCE, name: 'behind a proxy' })).body.data;
    expect((await request('POST', source.configured_props.http.endpoint_url, { body: { n: 1 } })).status).toBe(200);
    const [event] = await waitFor(
      async () => (await api.get(`/v1/sources/${source.id}/event_summaries`)).body.data as Array<{ id: string }>,
      (list) => list.length === 1,
    );
    const { page, problems, finish } = await openSignedIn(browser, `${server.url}/#/sources`, user.apiKey);
    const sourceUrl = `**/v1/sources/${source.id}`;
    await page.route(sourceUrl, (route) => route.fulfill(PROXY_502));
    await page.goto(`${server.url}/#/sources/${source.id}`);
    const alert = page.getByRole('alert');
    await alert.getByRole('button', { name: 'Try again' }).waitFor();
    // It read `502 Bad Gateway (502 unknown)`.
    expect(await alert.locator('p').textContent()).toBe('the server answered 502 Bad Gateway');
    await page.unroute(sourceUrl);
    await alert.getByRole('button', { name: 'Try again' }).click();
    await page.getByRole('heading', { name: 'behind a proxy' }).waitFor();

    // A delete the proxy answers so: the notice said the bare message, without the status, and now says it as every
    // other refusal is said.
    await page.getByRole('region', { name: 'Events of this source' }).locator(`tr[data-event-id="${event!.id}"]`).click();
    await page.route(`**/v1/sources/${source.id}/events?*`, (route) => (route.request().method() === 'DELETE' ? route.fulfill(PROXY_502) : route.continue()));
    await page.getByRole('button', { name: 'Delete this event' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await waitForText(page.getByRole('alert'), 'Could not delete');
    expect(await page.locator('.notice.error > span').textContent()).toBe('Could not delete: the server answered 502 Bad Gateway');
    expect(problems.splice(0)).toEqual([LOGGED_502, LOGGED_502]);
    await finish();
  });
});
