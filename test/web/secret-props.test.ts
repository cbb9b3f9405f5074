// The console in Chromium: Edit props keeps a stored secret of any type (an integer, a list, an object, a boolean) as ********,
// which saves unchanged, rather than refusing the mask as a bad number or bad JSON.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { BROWSER_SUITE, newAccount, openSignedIn, waitForText, withServerAndBrowser } from './browser.js';

const SOURCE = `export default {
  name: "Sealed", version: "0.1.0",
  props: {
    pin: { type: "integer", label: "Pin", secret: true },
    tokens: { type: "string[]", label: "Tokens", secret: true },
    creds: { type: "object", label: "Creds", secret: true },
    flag: { type: "boolean", label: "Flag", secret: true },
    note: { type: "string", label: "Note", optional: true },
  },
  async run() { this.$emit({ pin: this.pin, tokens: this.tokens, creds: this.creds, note: this.note, flag: this.flag }); },
};`;

describe.each(DIALECTS)('web console: secret props (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  it('saves Edit props with the stored integer, list, object and boolean secrets left as ********, which keeps them', async () => {
    const { user, api } = await newAccount(server);
    const created = await api.post('/v1/sources', {
      component_code: SOURCE,
      name: 'sealed',
      configured_props: { pin: 1234, tokens: ['a', 'b'], creds: { user: 'u' }, flag: true },
    });
    expect(created.status).toBe(200);
    const source = created.body.data;
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.goto(`${server.url}/#/sources/${source.id}`);
    await page.getByText('Edit props').click();
    await page.getByLabel('Note').fill('changed');
    for (const label of ['Pin', 'Tokens', 'Creds']) expect(await page.getByLabel(label).inputValue()).toBe('********');
    await page.getByRole('button', { name: 'Save props' }).click();
    await waitForText(page.getByRole('status'), 'Saved the props of sealed');
    expect(await page.locator('#edit-pin-error').textContent()).toBe('');
    expect((await api.get(`/v1/sources/${source.id}`)).body.data.configured_props).toEqual({
      pin: '********',
      tokens: '********',
      creds: '********',
      flag: '********',
      note: 'changed',
    });

    // The run reads the values stored at deploy: the mask kept them.
    const run = await api.post(`/v1/sources/${source.id}/run`, {});
    expect(run.status).toBe(202);
    await waitForText(page.locator('.events-table td.summary'), '"pin":1234');
    const [event] = (await api.get(`/v1/sources/${source.id}/event_summaries?expand=event`)).body.data;
    expect(event.event).toEqual({ pin: 1234, tokens: ['a', 'b'], creds: { user: 'u' }, note: 'changed', flag: true });
    await finish();
  });
});
