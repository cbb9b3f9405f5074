// The console in Chromium: a confirmation's dialog, answered, gives the keyboard back to the button that opened it at
// once, the focus going nowhere else on its way (the page's content took it until the dialog's cleanup ran, after paint).
import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { BROWSER_SUITE, evaluate, newAccount, openSignedIn, waitForFocus, waitForText, withServerAndBrowser } from './browser.js';

const HTTP_SOURCE = `module.exports = { name: "Hook", version: "0.1.0", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body); } };`;

/** From now on, every element outside a dialog the focus moves to, as `tag#id:text` (the list starts again at each call). */
async function recordFocus(page: Page): Promise<() => Promise<string[]>> {
  await evaluate(
    page,
    `window.__focused = [];
    window.__recording ??= document.addEventListener('focusin', (e) =>
      e.target.closest('dialog') || window.__focused.push(e.target.tagName.toLowerCase() + (e.target.id ? '#' + e.target.id : '') + ':' + e.target.textContent.trim().slice(0, 20)),
    ) ?? true;`,
  );
  return () => evaluate<string[]>(page, 'window.__focused');
}

describe.each(DIALECTS)('web console: focus after a confirmation (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  it('Cancel, Escape and a failed confirm give the focus straight back to the button that opened the dialog', async () => {
    const { user, api } = await newAccount(server);
    const source = (await api.post('/v1/sources', { component_code: HTTP_SOURCE, name: 'kept' })).body.data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/sources/${source.id}`, user.apiKey);
    const open = page.getByRole('button', { name: 'Delete', exact: true });
    const dialog = page.getByRole('dialog', { name: 'Delete kept?' });

    /** Opens the dialog, answers it with `answer`, and lists where the focus went once it had left the dialog. */
    const ask = async (answer: () => Promise<void>) => {
      await open.click();
      await waitForFocus(page, 'dialog button', /^Cancel$/);
      const focused = await recordFocus(page);
      await answer();
      await dialog.waitFor({ state: 'detached' });
      await waitForFocus(page, 'button.danger', /^Delete$/);
      return focused();
    };
    // It went to the page's content first (main#main), and came back only after paint.
    expect(await ask(() => dialog.getByRole('button', { name: 'Cancel' }).click())).toEqual(['button:Delete']);
    expect(await ask(() => page.keyboard.press('Escape'))).toEqual(['button:Delete']);
    // A confirmed delete the server refuses: the source stays, and so does the keyboard, on Delete.
    await page.route(`**/v1/sources/${source.id}`, (route) =>
      route.request().method() === 'DELETE' ? route.fulfill({ status: 409, json: { error: 'not now', code: 'conflict' } }) : route.continue(),
    );
    expect(await ask(() => dialog.getByRole('button', { name: 'Delete source' }).click())).toEqual(['button:Delete']);
    await waitForText(page.getByRole('alert'), 'not now (409 conflict)');
    await waitForFocus(page, 'button.danger', /^Delete$/);
    expect((await api.get(`/v1/sources/${source.id}`)).status).toBe(200);
    await finish();
  });
});
