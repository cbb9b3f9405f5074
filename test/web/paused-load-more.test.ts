// The live events table paused while older events are read with Load more: the events held by the pause stay held
// (not shown, still counted), and Resume shows each of them once.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { request } from '../helpers/client.js';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { BROWSER_SUITE, newAccount, openSignedIn, withServerAndBrowser } from './browser.js';

const HTTP_SOURCE = `module.exports = {
  name: "Hook", version: "0.1.0", props: { http: "$.interface.http" },
  async run(event) { this.$emit(event.body, { summary: "n=" + event.body.n }); },
};`;

describe.each(DIALECTS)('web console: Load more while paused (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(
    dialect,
    (started, launched) => {
      server = started;
      browser = launched;
    },
    { eventRetention: 1000 },
  );

  it('keeps the events that came during a pause held when Load more reads past them, and Resume shows each once', async () => {
    const { user, api } = await newAccount(server);
    const source = (await api.post('/v1/sources', { component_code: HTTP_SOURCE, name: 'many' })).body.data;
    const endpoint = source.configured_props.http.endpoint_url;
    const send = async (n: number) => expect((await request('POST', endpoint, { body: { n } })).status).toBe(200);
    // One after another, so that the events' order is their n's.
    for (let n = 0; n < 101; n++) await send(n);
    await waitFor(
      async () => (await api.get(`/v1/sources/${source.id}/event_summaries?limit=1`)).body.page_info.total_count,
      (total) => total === 101,
      { what: 'every event emitted' },
    );

    const { page, finish } = await openSignedIn(browser, `${server.url}/#/sources/${source.id}`, user.apiKey);
    const rows = page.locator('table.events-table tbody tr');
    await rows.nth(99).waitFor();
    await page.locator('.live-state.live').waitFor();
    await page.getByRole('button', { name: 'Pause' }).click();
    await send(101);
    await send(102);
    await page.getByRole('button', { name: 'Resume (2 new)' }).waitFor();

    // Load more reads from the newest, the two held events included: they were shown while paused, and once
    // resumed each was listed twice.
    await page.getByRole('button', { name: 'Load more' }).click();
    await page.getByRole('button', { name: 'Load more' }).waitFor({ state: 'detached' });
    const summaries = () => page.locator('table.events-table td.summary').allInnerTexts();
    const older = Array.from({ length: 101 }, (_, i) => `n=${100 - i}`);
    expect(await summaries()).toEqual(older);
    expect(await page.locator('.events .toolbar .muted').textContent()).toBe('101 events');
    // The table keeps as many rows as were paged back to: the two oldest give way again, a Load more away.
    await page.getByRole('button', { name: 'Resume (2 new)' }).click();
    await rows.first().filter({ hasText: 'n=102' }).waitFor();
    expect(await summaries()).toEqual(['n=102', 'n=101', ...older.slice(0, 99)]);

    // Live again: the next event comes once; so does each event a Load more reads again.
    await send(103);
    await rows.first().filter({ hasText: 'n=103' }).waitFor();
    await page.getByRole('button', { name: 'Load more' }).click();
    await page.getByRole('button', { name: 'Load more' }).waitFor({ state: 'detached' });
    expect(await summaries()).toEqual(['n=103', 'n=102', 'n=101', ...older]);
    await finish();
  });
});
