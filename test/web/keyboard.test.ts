// The console in Chromium, used from the keyboard: after a check refuses what was typed, the keyboard is on the field
// to fix.
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
});
