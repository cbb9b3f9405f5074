// The console's webhooks page turns a webhook a 410 retired back on: before, the page showed it Inactive with no way
// out but a new webhook (a new secret for the receiver, new subscriptions).
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { BROWSER_SUITE, newAccount, openSignedIn, waitForText, withServerAndBrowser } from './browser.js';

describe.each(DIALECTS)('web console: turning a retired webhook back on (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  it('offers Turn on beside Inactive (410 Gone), and the webhook is active once pressed', async () => {
    const { user, api } = await newAccount(server);
    const hook = (await api.post(`/v1/webhooks?url=${encodeURIComponent('https://example.com/orders')}&name=orders`)).body.data;
    // As a 410 leaves it: only the server's own delivery code turns a webhook off.
    await server.running.services.store.db.updateTable('webhooks').set({ active: 0 }).where('id', '=', hook.id).execute();
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/webhooks`, user.apiKey);
    const row = page.getByRole('row', { name: /orders/ });
    await waitForText(row, 'Inactive (410 Gone)');
    await row.getByRole('button', { name: 'Turn webhook orders back on' }).click();
    await waitForText(page.getByRole('status'), 'Turned webhook orders back on: the events stored from now on are delivered.');
    await waitForText(row.locator('td').nth(1), 'Active');
    expect(await row.getByRole('button', { name: /back on/ }).count()).toBe(0);
    expect((await api.get(`/v1/webhooks/${hook.id}`)).body.data.active).toBe(true);
    await finish();
  });
});
