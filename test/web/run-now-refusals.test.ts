// The console in Chromium: Run now marks its event field invalid only when the event itself is refused (not JSON, or
// a 400 of the body), not when the run is refused for another reason, such as the source switched off meanwhile.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { BROWSER_SUITE, newAccount, openSignedIn, waitForText, withServerAndBrowser } from './browser.js';

const HTTP_SOURCE = `module.exports = { name: "Hook", version: "0.1.0", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body); } };`;

describe.each(DIALECTS)('web console: Run now refused (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  it('a 409 for a source switched off elsewhere shows under the field, which is not marked invalid; bad JSON is', async () => {
    const { user, api } = await newAccount(server);
    const source = (await api.post('/v1/sources', { component_code: HTTP_SOURCE, name: 'switched off elsewhere' })).body.data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/sources/${source.id}`, user.apiKey);
    await waitForText(page.locator('.live-state'), 'Live');
    // Switched off through the API after the page was read: the page still offers Run.
    expect((await api.patch(`/v1/sources/${source.id}`, { active: false })).status).toBe(200);
    await page.getByText('Run now').click();
    const field = page.getByLabel('Event (JSON)');
    await field.fill('{"n": 1}');
    await page.getByRole('button', { name: 'Run with this event' }).click();
    await waitForText(page.getByRole('alert'), /is inactive; activate it/);
    expect(await field.getAttribute('aria-invalid')).toBeNull();

    await field.fill('{"n": ');
    await page.getByRole('button', { name: 'Run with this event' }).click();
    await waitForText(page.getByRole('alert'), 'The event must be valid JSON.');
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    await finish();
  });
});
