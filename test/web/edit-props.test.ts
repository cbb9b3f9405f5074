// The console in Chromium: Edit props shows each stored value as it can be sent back, so saving the form unchanged
// keeps every value and its type.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { BROWSER_SUITE, newAccount, openSignedIn, waitForText, withServerAndBrowser } from './browser.js';

const ANY_SOURCE = `export default {
  name: "Anything", version: "0.1.0",
  props: {
    word: { type: "any", label: "Word" },
    digits: { type: "any", label: "Digits" },
    shape: { type: "any", label: "Shape" },
  },
  async run() { this.$emit({ word: this.word }); },
};`;

describe.each(DIALECTS)('web console: edit props (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  it('shows an any prop holding a string as JSON, and saves it back as the same string', async () => {
    const { user, api } = await newAccount(server);
    const stored = { word: 'plain words', digits: '5', shape: { a: [1, 'b'] } };
    const deployed = await api.post('/v1/sources', { component_code: ANY_SOURCE, configured_props: stored });
    expect(deployed.status, deployed.text).toBe(200);
    const id = deployed.body.data.id;
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.goto(`${server.url}/#/sources/${id}`);
    await page.getByText('Edit props').click();
    // A string was shown bare: "plain words" was then refused as not JSON, and "5" saved as the number 5.
    await page.getByLabel('Word').waitFor();
    expect(await page.getByLabel('Word').inputValue()).toBe('"plain words"');
    expect(await page.getByLabel('Digits').inputValue()).toBe('"5"');
    await page.getByRole('button', { name: 'Save props' }).click();
    await waitForText(page.getByRole('status'), 'Saved the props of anything');
    expect((await api.get(`/v1/sources/${id}`)).body.data.configured_props).toEqual(stored);
    await finish();
  });

  it("says why the component's props could not be read, with a Try again that reads them once the server answers", async () => {
    const { user, api } = await newAccount(server);
    const deployed = await api.post('/v1/sources', { component_code: ANY_SOURCE, configured_props: { word: 'w', digits: '1', shape: {} } });
    expect(deployed.status, deployed.text).toBe(200);
    const { id, component_id } = deployed.body.data;
    const { page, problems, finish } = await openSignedIn(browser, `${server.url}/#/sources/${id}`, user.apiKey);
    // The server out of reach for the component's read alone: the request fails without an answer.
    const componentUrl = `**/v1/components/${component_id}`;
    await page.route(componentUrl, (route) => route.abort('connectionrefused'));
    await page.getByText('Edit props').click();
    const alert = page.locator('details').getByRole('alert');
    await waitForText(alert, 'Cannot reach the server: it may be stopped or restarting, or the network is down.');
    // Chromium logs the refused connection, which this test made.
    expect(problems.splice(0)).toEqual(['console: Failed to load resource: net::ERR_CONNECTION_REFUSED']);
    await page.unroute(componentUrl);
    await alert.getByRole('button', { name: 'Try again' }).click();
    await page.getByLabel('Word').waitFor();
    expect(await page.getByLabel('Word').inputValue()).toBe('"w"');
    expect(await alert.count()).toBe(0);
    await finish();
  });
});
