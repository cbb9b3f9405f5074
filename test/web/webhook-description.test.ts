// The console in Chromium: a webhook's description, typed when it was created, is shown on its page.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { BROWSER_SUITE, newAccount, openSignedIn, waitForText, withServerAndBrowser } from './browser.js';

describe.each(DIALECTS)("web console: a webhook's description (%s)", BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(
    dialect,
    (started, launched) => {
      server = started;
      browser = launched;
    },
    { allowPrivateNetwork: true },
  );

  it("shows the description typed in New webhook on the webhook's page, and none for one made without", async () => {
    const { user, api } = await newAccount(server);
    const bare = (await api.post(`/v1/webhooks?url=${encodeURIComponent('http://127.0.0.1:9/bare')}&name=bare`)).body.data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/webhooks`, user.apiKey);
    await page.getByLabel('URL').fill('http://127.0.0.1:9/orders');
    await page.getByLabel('Name').fill('orders');
    await page.getByLabel('Description').fill('new orders, for the warehouse');
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await page.locator('#webhook-secret').waitFor();
    // It was sent and stored, and then shown on no page of the console.
    await page.getByRole('link', { name: 'orders' }).click();
    await page.getByRole('heading', { name: 'Deliveries of orders' }).waitFor();
    await waitForText(page.locator('main p.description'), 'new orders, for the warehouse');
    await page.goto(`${server.url}/#/webhooks/${bare.id}`);
    await page.getByRole('heading', { name: 'Deliveries of bare' }).waitFor();
    await waitForText(page.locator('table.deliveries'), 'Nothing delivered yet.');
    expect(await page.locator('main p.description').count()).toBe(0);
    await finish();
  });
});
