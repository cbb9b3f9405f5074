// The console in Chromium: a workflow's page says whether it is active, and switches it off and on.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { BROWSER_SUITE, newAccount, openSignedIn, waitForText, withServerAndBrowser } from './browser.js';

const STEP = `export default defineComponent({ async run({ steps }) { return steps.trigger.event.body; } });`;

describe.each(DIALECTS)('web console: a workflow switched off and on (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  it('shows an inactive workflow as such, with Run now off, and activates and deactivates it', async () => {
    const { user, api } = await newAccount(server);
    const workflow = (await api.post('/v1/workflows', { name: 'switched', trigger: { type: 'http' }, steps: [{ name: 'echo', component_code: STEP }] })).body
      .data;
    expect((await api.put(`/v1/workflows/${workflow.id}`, { active: false })).status).toBe(200);
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/workflows/${workflow.id}`, user.apiKey);
    const facts = page.locator('.facts');
    // The page said nothing of it: Run now answered a 409 naming PUT /v1/workflows/… {"active": true}, to be sent by hand.
    await waitForText(facts, 'StateInactive: it starts no run');
    await page.getByText('Run now').click();
    const run = page.getByRole('button', { name: 'Run with this event' });
    expect(await run.isDisabled()).toBe(true);
    expect(await run.getAttribute('title')).toBe('An inactive workflow does not run');

    await page.getByRole('button', { name: 'Activate', exact: true }).click();
    await waitForText(page.locator('.notice'), 'Activated switched.');
    await waitForText(facts, 'StateActive');
    expect((await api.get(`/v1/workflows/${workflow.id}`)).body.data.active).toBe(true);
    expect(await run.isDisabled()).toBe(false);
    await run.click();
    await waitForText(page.locator('.notice'), /^Started run wr_/);

    await page.getByRole('button', { name: 'Deactivate', exact: true }).click();
    await waitForText(page.locator('.notice'), 'Deactivated switched.');
    await page.getByRole('button', { name: 'Activate', exact: true }).waitFor();
    await waitForText(facts, 'StateInactive');
    expect((await api.get(`/v1/workflows/${workflow.id}`)).body.data.active).toBe(false);
    await finish();
  });
});
