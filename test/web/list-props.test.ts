// The console in Chromium: a boolean[] prop is sent as booleans and an object[] prop as a JSON array of objects, at
// deploy and by Edit props, which shows the stored objects as JSON; a string[] prop's choices may be chosen several,
// which a hint beside them says how.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { BROWSER_SUITE, newAccount, openSignedIn, waitForText, withServerAndBrowser } from './browser.js';

const SOURCE = `export default {
  name: "Lists", version: "0.1.0",
  props: {
    flags: { type: "boolean[]", label: "Flags" },
    rules: { type: "object[]", label: "Rules" },
  },
  async run() { this.$emit({ flags: this.flags, rules: this.rules }); },
};`;

describe.each(DIALECTS)('web console: list props (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  it('deploys boolean[] and object[] props with values of their types, and edits them without losing the objects', async () => {
    const { user, api } = await newAccount(server);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('link', { name: 'New source' }).click();
    await page.getByLabel('Component code').fill(SOURCE);
    await page.getByRole('button', { name: 'Load props' }).click();
    await page.getByRole('heading', { name: /Configure Lists/ }).waitFor();

    // Values of the wrong shape are refused on their fields, before anything is sent.
    await page.getByLabel('Flags').fill('true\nyes');
    await page.getByLabel('Rules').fill('{"match": "a"}');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await waitForText(page.locator('#prop-flags-error'), 'Flags takes true or false (one value a line)');
    await waitForText(page.locator('#prop-rules-error'), 'Rules must be a JSON array of objects');
    expect((await api.get('/v1/users/me/sources')).body.data).toEqual([]);

    await page.getByLabel('Flags').fill('true\nfalse');
    await page.getByLabel('Rules').fill('[{"match": "a", "weight": 2}, {"match": "b"}]');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await waitForText(page.getByRole('status'), 'Deployed Lists.');
    const [source] = (await api.get('/v1/users/me/sources')).body.data;
    const stored = { flags: [true, false], rules: [{ match: 'a', weight: 2 }, { match: 'b' }] };
    expect(source.configured_props).toEqual(stored);

    // Edit props shows the stored values as they can be sent back, and saving them keeps them.
    await page.getByText('Edit props').click();
    await page.getByLabel('Rules').waitFor();
    expect(await page.getByLabel('Flags').inputValue()).toBe('true\nfalse');
    expect(JSON.parse(await page.getByLabel('Rules').inputValue())).toEqual(stored.rules);
    await page.getByRole('button', { name: 'Save props' }).click();
    await waitForText(page.getByRole('status'), 'Saved the props of Lists');
    expect((await api.get(`/v1/sources/${source.id}`)).body.data.configured_props).toEqual(stored);
    await finish();
  });

  it("chooses several of a string[] prop's choices, static options or options()'s, and Edit props shows them chosen", async () => {
    const { user, api } = await newAccount(server);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('link', { name: 'New source' }).click();
    await page.getByLabel('Component code').fill(`export default {
      name: "Picks", version: "0.1.0",
      props: {
        kinds: { type: "string[]", label: "Kinds", options: ["order", "refund", "payout"] },
        regions: { type: "string[]", label: "Regions", async options() { return ["eu", "us", "apac"]; } },
      },
      async run() { this.$emit({ kinds: this.kinds, regions: this.regions }); },
    };`);
    await page.getByRole('button', { name: 'Load props' }).click();
    await page.getByRole('heading', { name: /Configure Picks/ }).waitFor();
    // Beside each multiple select, and read out with it: how to choose several (a plain click keeps one).
    const hint = 'Ctrl-click (⌘-click on a Mac) to choose several; Shift-click for a range.';
    for (const id of ['prop-kinds', 'prop-regions']) {
      expect(await page.locator(`#${id}-several`).textContent()).toBe(hint);
      expect((await page.locator(`#${id}`).getAttribute('aria-describedby'))?.split(' ')).toContain(`${id}-several`);
      expect(await page.locator(`#${id}-several`).isVisible()).toBe(true);
    }
    await page.getByLabel('Kinds').selectOption(['order', 'payout']);
    await page.getByRole('button', { name: 'Load choices for Regions' }).click();
    await page.locator('#prop-regions option', { hasText: 'apac' }).waitFor({ state: 'attached' });
    await page.getByLabel('Regions', { exact: true }).selectOption(['eu', 'apac']);
    await page.getByRole('button', { name: 'Deploy' }).click();
    await waitForText(page.getByRole('status'), 'Deployed Picks.');
    const [source] = (await api.get('/v1/users/me/sources')).body.data;
    expect(source.configured_props).toEqual({ kinds: ['order', 'payout'], regions: ['eu', 'apac'] });

    await page.getByText('Edit props').click();
    await page.getByLabel('Kinds').waitFor();
    const chosen = (id: string) => page.locator(`#edit-${id} option:checked`).evaluateAll((options) => options.map((o) => o.textContent));
    expect(await chosen('kinds')).toEqual(['order', 'payout']);
    // Before its choices are loaded, the stored values are offered, chosen.
    expect(await chosen('regions')).toEqual(['eu', 'apac']);
    await page.getByLabel('Kinds').selectOption(['refund']);
    await page.getByRole('button', { name: 'Save props' }).click();
    await waitForText(page.getByRole('status'), 'Saved the props of Picks');
    expect((await api.get(`/v1/sources/${source.id}`)).body.data.configured_props).toEqual({ kinds: ['refund'], regions: ['eu', 'apac'] });
    await finish();
  });
});
