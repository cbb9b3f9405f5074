// The console in Chromium on a slow server: Run now says Starting… while its run is being queued, on a source and on a
// workflow, and goes back to Run with this event once the server has answered.
import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { BROWSER_SUITE, holdUntilReleased, newAccount, openSignedIn, waitForText, withServerAndBrowser } from './browser.js';

const HTTP_SOURCE = `module.exports = { name: "Hook", version: "0.1.0", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body); } };`;

describe.each(DIALECTS)('web console: Run now on a slow server (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  /** Presses Run with this event while the run's POST is held: the button says Starting… until it is let go. */
  async function runHeld(page: Page, done: string | RegExp): Promise<void> {
    const { held: runs, release } = await holdUntilReleased(page, '**/v1/**/run');
    await page.getByText('Run now').click();
    await page.getByRole('button', { name: 'Run with this event' }).click();
    // It only looked held, saying nothing, however long the server took.
    const busy = page.getByRole('button', { name: 'Starting…' });
    await busy.waitFor();
    expect(await busy.getAttribute('aria-disabled')).toBe('true');
    // The page says Starting… as it sends the request, which the route may see a moment later on a slow machine.
    await waitFor(
      async () => runs.length,
      (count) => count === 1,
      { what: 'the run request held' },
    );
    release();
    await waitForText(page.getByRole('status'), done);
    await page.getByRole('button', { name: 'Run with this event' }).waitFor();
    expect(runs).toHaveLength(1);
    await page.unrouteAll();
  }

  it('says Starting… while a source or a workflow run is being queued', async () => {
    const { user, api } = await newAccount(server);
    const source = (await api.post('/v1/sources', { component_code: HTTP_SOURCE, name: 'slow run' })).body.data;
    const workflow = (
      await api.post('/v1/workflows', {
        name: 'slow run',
        steps: [{ name: 'echo', component_code: 'export default defineComponent({ async run() { return 1; } });' }],
      })
    ).body.data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/sources/${source.id}`, user.apiKey);
    await waitForText(page.locator('.live-state'), 'Live');
    await runHeld(page, /^Run queued \(inv_/);
    await page.goto(`${server.url}/#/workflows/${workflow.id}`);
    await page.getByRole('heading', { name: 'slow run' }).waitFor();
    await runHeld(page, /^Started run wr_/);
    await finish();
  });
});
