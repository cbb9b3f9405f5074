// The console in Chromium with names that hold no place to break a line (a step's identifier, a name typed without
// spaces): a notice, a run's step and a confirmation's title wrap them rather than widening the page.
import type { Browser, Locator, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { request } from '../helpers/client.js';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { BROWSER_SUITE, evaluate, newAccount, openSignedIn, waitForText, withServerAndBrowser } from './browser.js';

const HTTP_SOURCE = `module.exports = { name: "Hook", version: "0.1.0", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body); } };`;

describe.each(DIALECTS)('web console: long unbroken names (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  /** How far the page reaches past the screen's right edge: 0 when nothing makes it scroll sideways. */
  const overflow = (page: Page) => evaluate<number>(page, 'document.documentElement.scrollWidth - document.documentElement.clientWidth');
  /** The element's text runs past its own box (cut off, or pushing the page wider). */
  const spills = (element: Locator) => element.evaluate((node) => node.scrollWidth > node.clientWidth);

  it("wraps a long source name in a notice and in the Delete question's title", async () => {
    const { user, api } = await newAccount(server);
    const name = `source${'x'.repeat(194)}`;
    const source = (await api.post('/v1/sources', { component_code: HTTP_SOURCE, name })).body.data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/sources/${source.id}`, user.apiKey);
    await page.getByRole('button', { name: 'Deactivate' }).click();
    // The notice's line ran on past the screen's edge, and the whole page scrolled sideways.
    await waitForText(page.getByRole('status'), `Deactivated ${name}.`);
    expect(await overflow(page)).toBe(0);
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    // The title ran past the dialog's edge, cut off there.
    const title = page.getByRole('dialog').getByRole('heading', { name: `Delete ${name}?` });
    await title.waitFor();
    expect(await spills(title)).toBe(false);
    await page.keyboard.press('Escape');
    await finish();
  });

  it('cuts a long channel name short in the live table (in full on hover), which then needs no sideways scroll', async () => {
    const { user, api } = await newAccount(server);
    const channel = `channel${'c'.repeat(143)}`;
    const code = `module.exports = { name: "Hook", version: "0.1.0", props: { http: "$.interface.http" },
      async run(e) { this.$emit(e.body, { summary: "one", name: ${JSON.stringify(channel)} }); } };`;
    const source = (await api.post('/v1/sources', { component_code: code, name: 'channels' })).body.data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/sources/${source.id}`, user.apiKey);
    await page.locator('.live-state.live').waitFor();
    expect((await request('POST', source.configured_props.http.endpoint_url, { body: {} })).status).toBe(200);
    const cell = page.getByRole('cell', { name: channel });
    await cell.waitFor();
    // The channel ran on in full: the 1200 px table scrolled sideways, its channel past the frame's edge.
    expect(await spills(page.locator('.events-scroll'))).toBe(false);
    expect(await cell.getAttribute('title')).toBe(channel);
    await finish();
  });

  it("wraps a workflow step's long name in its run at 400 px", async () => {
    const { user, api } = await newAccount(server);
    const step = `parse_${'n'.repeat(58)}`;
    const workflow = (
      await api.post('/v1/workflows', {
        name: 'steps',
        steps: [{ name: step, component_code: 'export default defineComponent({ async run() { return 1; } });' }],
      })
    ).body.data;
    const run = (await api.post(`/v1/workflows/${workflow.id}/run`, {})).body.data;
    await waitFor(
      () => api.get(`/v1/workflows/${workflow.id}/runs/${run.id}`),
      (r) => r.body.data.status === 'succeeded',
      { what: 'the run finished' },
    );
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/workflows/${workflow.id}/${run.id}`, user.apiKey, { width: 400 });
    // The step's heading ran on one line, and the page was twice the screen's width.
    await page
      .getByRole('listitem', { name: `Step ${step}` })
      .getByRole('heading', { name: step })
      .waitFor();
    expect(await overflow(page)).toBe(0);
    await finish();
  });
});
