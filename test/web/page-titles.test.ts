// The document's title names the page shown, so that the browser's tab and history tell the pages apart.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { BROWSER_SUITE, newAccount, openConsole, signIn, withServerAndBrowser } from './browser.js';

const HTTP_SOURCE = `module.exports = { name: "Hook", version: "0.1.0", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body); } };`;

describe.each(DIALECTS)('web console: page titles (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  it('titles each page after what it shows, through links, the back button and sign-out', async () => {
    const { user, api } = await newAccount(server);
    const source = (await api.post('/v1/sources', { component_code: HTTP_SOURCE, name: 'orders' })).body.data;
    const { page, finish } = await openConsole(browser, server.url);
    // Every page was titled "Tributary": the back button's list and the tabs showed the same name for each.
    const expectTitle = (title: string) => expect.poll(() => page.title()).toBe(title);
    await expectTitle('Sign in — Tributary');
    await signIn(page, user.apiKey);
    await expectTitle('Sources — Tributary');
    await page.getByRole('link', { name: 'orders' }).click();
    await expectTitle(`Source ${source.id} — Tributary`);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Workflows' }).click();
    await expectTitle('Workflows — Tributary');
    await page.getByRole('link', { name: 'New workflow' }).click();
    await expectTitle('New workflow — Tributary');
    await page.goBack();
    await expectTitle('Workflows — Tributary');
    await page.goBack();
    await expectTitle(`Source ${source.id} — Tributary`);
    await page.goto(`${server.url}/#/nowhere`);
    await expectTitle('Not found — Tributary');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expectTitle('Sign in — Tributary');
    await finish();
  });
});
