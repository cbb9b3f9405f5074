// The live events table on a link that froze (nothing arrives, nothing is closed): after a minute without even the
// server's heartbeat it says Reconnecting…, connects again, and brings the events it missed, each once.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { client, request } from '../helpers/client.js';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { BROWSER_SUITE, openSignedIn, waitForText, withServerAndBrowser } from './browser.js';

const HTTP_SOURCE = `module.exports = {
  name: "Hook", version: "0.1.0", props: { http: "$.interface.http" },
  async run(event) { this.$emit(event.body, { summary: "n=" + event.body.n }); },
};`;

describe.each(DIALECTS)('web console: a live stream gone silent (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  it('takes a minute without a heartbeat as a lost connection, reconnects, and shows what it missed once', async () => {
    const user = await server.createUser();
    const created = await client(server.url, user.apiKey).post('/v1/sources', { component_code: HTTP_SOURCE, name: 'live' });
    expect(created.status, created.text).toBe(200);
    const endpoint = created.body.data.configured_props.http.endpoint_url;
    // The page talks to the server through a proxy that can freeze; the endpoint is called directly.
    const target = new URL(server.url);
    const proxy = await startTcpProxy(target.hostname, Number(target.port));
    try {
      const { page, finish } = await openSignedIn(browser, `http://127.0.0.1:${proxy.port}/#/sources/${created.body.data.id}`, user.apiKey, { clock: true });
      const state = page.locator('.live-state');
      await waitForText(state, 'Live');
      const table = page.getByRole('region', { name: 'Events of this source' });
      expect((await request('POST', endpoint, { body: { n: 1 } })).status).toBe(200);
      await table.getByRole('row').filter({ hasText: 'n=1' }).waitFor();

      proxy.freeze();
      expect((await request('POST', endpoint, { body: { n: 2 } })).status).toBe(200);
      // A minute and more without a byte, heartbeats included: it said Live on, and n=2 never came.
      await page.clock.runFor(61_000);
      await waitForText(state, 'Reconnecting…');
      proxy.thaw();
      await page.clock.runFor(1_000);
      await waitForText(state, 'Live');
      await table.getByRole('row').filter({ hasText: 'n=2' }).waitFor();
      expect(await table.locator('td.summary').allInnerTexts()).toEqual(['n=2', 'n=1']);
      await finish();
    } finally {
      await proxy.close();
    }
  });
});
