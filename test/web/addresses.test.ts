// The console in Chromium: addresses typed by hand or kept as bookmarks open the page they name.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { BROWSER_SUITE, newAccount, openSignedIn, waitForText, withServerAndBrowser } from './browser.js';

describe.each(DIALECTS)('web console: addresses (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  it('opens an address holding a bare % as typed, at load and after another page, instead of a blank console', async () => {
    const { user, api } = await newAccount(server);
    const written = await api.put('/v1/data_stores/50%25/records?key=a', { value: 1 });
    expect(written.status, written.text).toBe(200);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    // Typed in the address bar: the browser keeps a % that starts no escape as it is.
    await page.goto(`${server.url}/#/data-stores/50%`);
    await page.reload();
    await page.getByRole('heading', { name: '50%', exact: true }).waitFor();
    await page.getByRole('button', { name: 'a', exact: true }).waitFor();
    // From another page (a hashchange, not a load).
    await page.goto(`${server.url}/#/sources/%`);
    await waitForText(page.getByRole('alert'), 'source "%" not found');
    await finish();
  });

  it("heads a source's page that is not there with its id, as every other page that is not there is", async () => {
    const { user } = await newAccount(server);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.goto(`${server.url}/#/sources/dc_gone`);
    await waitForText(page.getByRole('alert'), 'source "dc_gone" not found');
    // It had the 404 alone, no heading: a screen reader's list of headings was empty.
    await page.getByRole('region', { name: 'dc_gone' }).getByRole('heading', { level: 1, name: 'dc_gone' }).waitFor();
    await finish();
  });
});
