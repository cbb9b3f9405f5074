// The console in Chromium when the server refuses a live table's stream: its reason is shown while the table retries.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { client } from '../helpers/client.js';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { BROWSER_SUITE, openSignedIn, waitForText, withServerAndBrowser } from './browser.js';

const HTTP_SOURCE = `
module.exports = {
  name: "Hook",
  version: "0.1.0",
  props: { http: "$.interface.http" },
  async run(event) { this.$emit(event.body, { summary: "body " + JSON.stringify(event.body) }); },
};
`;

describe.each(DIALECTS)('web console: a refused live stream (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;

  // One live stream per account: a second is answered 429 too_many_streams.
  withServerAndBrowser(
    dialect,
    (started, launched) => {
      server = started;
      browser = launched;
    },
    {},
    { maxStreamsPerAccount: 1 },
  );

  it('says why the server refused the stream while it tries again, and goes live once there is room', async () => {
    const user = await server.createUser();
    const deployed = await client(server.url, user.apiKey).post('/v1/sources', { component_code: HTTP_SOURCE, name: 'hook' });
    expect(deployed.status, deployed.text).toBe(200);
    const source = deployed.body.data;
    // Another client holds the account's one stream.
    const holder = new AbortController();
    const held = await fetch(`${server.url}/v1/sources/${source.id}/sse`, {
      headers: { authorization: `Bearer ${user.apiKey}` },
      signal: holder.signal,
    });
    expect(held.status).toBe(200);

    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.goto(`${server.url}/#/sources/${source.id}`);
    // Not a bare "Reconnecting…" that never says why: the server's reason, with its status and code.
    await waitForText(page.locator('.live-state'), 'Reconnecting…');
    await waitForText(
      page.getByRole('alert'),
      /The server refused the live stream: this account has 1 live streams open .*\(429 too_many_streams\)\. Trying again\./,
    );

    holder.abort();
    await waitForText(page.locator('.live-state'), 'Live');
    expect(await page.getByText('The server refused the live stream').count()).toBe(0);
    const posted = await fetch(source.configured_props.http.endpoint_url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ n: 1 }),
    });
    expect(posted.status).toBe(200);
    await waitForText(page.locator('.events-table tbody'), 'body {"n":1}');
    await finish();
  });
});
