// Sign-in with a pasted key that no header can carry: the README's own `trb_…`, a key with a zero-width space.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { BROWSER_SUITE, evaluate, openConsole, signIn, waitForFocus, waitForText, withServerAndBrowser } from './browser.js';

describe.each(DIALECTS)('web console: a key that cannot be one (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  it('names the character that no key holds, rather than saying the server cannot be reached', async () => {
    const user = await server.createUser();
    const { page, finish } = await openConsole(browser, server.url);
    const error = page.locator('#api-key-error');
    const requests: string[] = [];
    page.on('request', (sent) => requests.push(new URL(sent.url()).pathname));

    // The README's placeholder, pasted as it stands: before, "Cannot reach the server: …".
    await page.getByLabel('API key').fill('trb_…');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await waitForText(error, 'That is not an API key');
    expect(await error.innerText()).toBe(
      'That is not an API key: character 5 is "…" (U+2026), and a key is letters, digits and punctuation only, without spaces. Paste the key as it was printed.',
    );
    await waitForFocus(page, '#api-key');

    // An invisible character pasted along with a real key is named by its code point.
    await page.getByLabel('API key').fill(`${user.apiKey.slice(0, 8)}\u200b${user.apiKey.slice(8)}`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await waitForText(error, 'character 9 is U+200B,');
    // A space inside the key: said here, not as the server's "malformed Authorization header".
    await page.getByLabel('API key').fill('trb_ab cd');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await waitForText(error, 'character 7 is U+0020,');
    expect(requests.filter((path) => path.startsWith('/v1/'))).toEqual([]);
    expect(await evaluate(page, 'sessionStorage.length')).toBe(0);

    await signIn(page, user.apiKey);
    await finish();
  });
});
