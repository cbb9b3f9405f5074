// The console in Chromium: loading a source's props from code that imports npm packages says what the server is doing
// while npm works (the time taken, then each package's step), rather than a button that seems to do nothing.
// npm's registry is real, as in test/api/save-progress.test.ts.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { BROWSER_SUITE, holdUntilReleased, newAccount, openSignedIn, waitForText, withServerAndBrowser } from './browser.js';

const SOURCE = `import isOdd from "is-odd@3.0.1";
export default {
  name: "Odd", version: "0.1.0", props: { http: "$.interface.http" },
  async run(e) { this.$emit({ odd: isOdd(e.body.n) }); },
};`;

describe.each(DIALECTS)('web console: npm installs of a new source (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  it('shows the time taken while the component is saved, then each npm package it installed', async () => {
    const { user, api } = await newAccount(server);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('link', { name: 'New source' }).click();
    await page.getByLabel('Component code').fill(SOURCE);
    // The save is held in the browser while the page is looked at: what it shows does not depend on npm's speed.
    const { release } = await holdUntilReleased(page, '**/v1/components/stream');
    await page.getByRole('button', { name: 'Load props' }).click();
    // The button said nothing and nothing else moved while npm worked.
    await page.getByRole('button', { name: 'Loading props…' }).waitFor();
    await waitForText(page.locator('.install-status'), 'Saving the component: installing the npm packages its code imports…');
    // The seconds count up while the server is silent.
    await waitForText(page.locator('.install-elapsed'), /^[1-9]\d* s$/);
    release();

    await page.getByRole('heading', { name: /Configure Odd/ }).waitFor();
    await page.locator('.install-status').waitFor({ state: 'detached' });
    const lines = page.getByRole('list', { name: 'Installing packages' }).getByRole('listitem');
    expect(await lines.allTextContents()).toEqual([expect.stringMatching(/^is-odd@3\.0\.1: (installed|cached) — 1 of 1, \d+\.\d s$/)]);
    expect((await api.get('/v1/users/me/components')).body.data.map((c: any) => c.name)).toEqual(['Odd']);
    await finish();
  });

  it('says a package whose install failed was not installed, rather than leave it resolving under the refusal', async () => {
    const { user, api } = await newAccount(server);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('link', { name: 'New source' }).click();
    const name = 'tributary-console-test-no-such-package';
    await page.getByLabel('Component code').fill(`import x from "${name}";
export default { name: "Missing", version: "0.1.0", props: {}, async run() { this.$emit(x); } };`);
    await page.getByRole('button', { name: 'Load props' }).click();
    await waitForText(page.locator('#component-error'), `could not install npm package "${name}"`);
    const lines = page.getByRole('list', { name: 'Installing packages' }).getByRole('listitem');
    // Its last step heard was "resolving", which it said for good.
    expect(await lines.allTextContents()).toEqual([expect.stringMatching(new RegExp(`^${name}@latest: not installed — 1 of 1, \\d+\\.\\d s$`))]);
    expect((await api.get('/v1/users/me/components')).body.data).toEqual([]);
    await finish();
  });
});
