// The console in Chromium, used from the keyboard: after a check or the server refuses what was typed, the keyboard is
// on the field to fix.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { BROWSER_SUITE, newAccount, openSignedIn, waitForFocus, waitForText, withServerAndBrowser } from './browser.js';

const SOURCE = `export default {
  name: "Echo", version: "0.1.0",
  props: {},
  async run(event) { this.$emit(event); },
};`;

describe.each(DIALECTS)('web console: keyboard (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  it("Run now's event that is not JSON gives the keyboard to the event, on a source and on a workflow", async () => {
    const { user, api } = await newAccount(server);
    const source = await api.post('/v1/sources', { component_code: SOURCE });
    expect(source.status, source.text).toBe(200);
    const workflow = await api.post('/v1/workflows', {
      name: 'echo',
      steps: [{ name: 'echo', component_code: 'export default defineComponent({ async run({ steps }) { return steps.trigger.event; } });' }],
    });
    expect(workflow.status, workflow.text).toBe(200);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    for (const address of [`#/sources/${source.body.data.id}`, `#/workflows/${workflow.body.data.id}`]) {
      await page.goto(`${server.url}/${address}`);
      await page.getByText('Run now').click();
      const event = page.getByLabel('Event (JSON)');
      await event.fill('{"a": ');
      await page.getByRole('button', { name: 'Run with this event' }).press('Enter');
      await waitForText(page.getByRole('alert'), 'The event must be valid JSON.');
      // It stayed on the button, so that fixing the event took a Shift+Tab first.
      await waitForFocus(page, 'textarea[aria-invalid="true"]');
      expect(await event.getAttribute('aria-invalid')).toBe('true');
    }
    await finish();
  });

  it("New source's refused code, key or id gives the keyboard to its field; no answer from the server marks none", async () => {
    const { user } = await newAccount(server);
    const { page, problems, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.goto(`${server.url}/#/sources/new`);
    await page.getByLabel('Component code').fill('export default { name: "x", version: "0.1.0", props: {}, async run() { this.$emit( } };');
    await page.getByRole('button', { name: 'Load props' }).press('Enter');
    await waitForText(page.getByRole('alert'), 'Unexpected "}"');
    // It stayed on Load props, the marked code a Shift+Tab away.
    await waitForFocus(page, '#component-code[aria-invalid="true"]');
    await page.getByLabel('Saved component').check();
    await page.getByLabel('Component id or key').fill('sc_gone');
    await page.getByRole('button', { name: 'Load props' }).press('Enter');
    await waitForText(page.getByRole('alert'), 'component "sc_gone" not found');
    await waitForFocus(page, '#saved-component[aria-invalid="true"]');

    // The server gone: the code is not at fault, and Try again is the same press.
    await page.getByLabel('Paste code').check();
    await page.getByLabel('Component code').fill(SOURCE);
    await page.route('**/v1/components/stream', (route) => route.abort('connectionrefused'));
    await page.getByRole('button', { name: 'Load props' }).press('Enter');
    await waitForText(page.getByRole('alert'), 'Cannot reach the server');
    await waitForFocus(page, 'button', /^Load props$/);
    expect(await page.getByLabel('Component code').getAttribute('aria-invalid')).toBeNull();
    // Chromium logs the refused connection, which this test made.
    expect(problems.splice(0)).toEqual(['console: Failed to load resource: net::ERR_CONNECTION_REFUSED']);
    await page.unroute('**/v1/components/stream');
    await page.getByRole('button', { name: 'Load props' }).press('Enter');
    await page.getByRole('heading', { name: /Configure Echo/ }).waitFor();
    await finish();
  });
});
