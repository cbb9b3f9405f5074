// The console in Chromium at a phone's width: an empty table's line is read in full, wrapped within the screen.
import type { Browser, Locator, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { BROWSER_SUITE, newAccount, openSignedIn, waitForText, withServerAndBrowser } from './browser.js';

const STEP = `export default defineComponent({ async run() { return 1; } });`;
const HTTP_SOURCE = `module.exports = {
  name: "Hook", version: "0.1.0", props: { http: "$.interface.http" },
  async run(event) { this.$emit(event.body); },
};`;

/** Where the text of `cell` ends, in page pixels. */
async function textRight(cell: Locator): Promise<number> {
  return cell.evaluate((td) => {
    const range = td.ownerDocument.createRange();
    range.selectNodeContents(td);
    const box = range.getBoundingClientRect();
    return box.x + box.width;
  });
}

/** The empty line in `frame` is inside the frame's visible width, on the screen, and says `text`. */
async function expectWithinFrame(page: Page, frame: Locator, text: string): Promise<void> {
  const cell = frame.locator('td.muted');
  await waitForText(cell, text);
  const box = (await frame.boundingBox())!;
  expect(await textRight(cell)).toBeLessThanOrEqual(box.x + box.width);
  expect(box.x + box.width).toBeLessThanOrEqual(page.viewportSize()!.width);
}

describe.each(DIALECTS)('web console: empty tables on a phone (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  it("wraps a workflow's empty runs line and a source's empty events line within a 375 px screen", async () => {
    const { user, api } = await newAccount(server);
    const workflow = (
      await api.post('/v1/workflows', {
        name: 'weekdays',
        trigger: { type: 'timer', cron: '0 9 * * 1-5', timezone: 'Europe/Paris' },
        steps: [{ name: 'one', component_code: STEP }],
      })
    ).body.data;
    const source = (await api.post('/v1/sources', { name: 'quiet', component_code: HTTP_SOURCE })).body.data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/workflows/${workflow.id}`, user.apiKey, { width: 375 });
    // It ran on, on one line, past the screen's edge: "No runs yet: its timer starts one on its schedule, o".
    await expectWithinFrame(page, page.locator('.table-wrap'), 'No runs yet: its timer starts one on its schedule, or start one by hand above.');
    await page.goto(`${server.url}/#/sources/${source.id}`);
    await page.getByRole('tab', { name: '$errors' }).click();
    await expectWithinFrame(page, page.locator('.events-scroll'), 'No $errors yet: they appear here as they happen.');
    await finish();
  });
});
