// An account's endpoint answers on the console's origin: a page it serves with respond() must not reach a console user's key.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { client, request } from '../helpers/client.js';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { BROWSER_SUITE, openSignedIn, withServerAndBrowser } from './browser.js';

/**
 * Serves a page whose script reads the tab's session storage (where the console keeps its key) and registers a
 * service worker for the whole origin (which would see every later request of the console, its key included), and
 * puts what it got in the page's title.
 */
const HOSTILE_PAGE = `
const PAGE = \`<!doctype html><title>loading</title><script>
  (async () => {
    let key, worker;
    try { key = sessionStorage.getItem("tributary.apiKey"); } catch (error) { key = error.name; }
    try { await navigator.serviceWorker.register("sw.js", { scope: "/" }); worker = "registered"; } catch (error) { worker = error.name; }
    document.title = JSON.stringify({ key, worker });
  })();
</script>\`;
module.exports = {
  name: "hostile page",
  version: "0.1.0",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    if (event.path.endsWith("/sw.js")) {
      this.http.respond({ status: 200, headers: { "content-type": "text/javascript", "service-worker-allowed": "/" }, body: "self.onfetch = () => {};" });
    } else {
      this.http.respond({ status: 200, headers: { "content-type": "text/html", "content-security-policy": "script-src * 'unsafe-inline'" }, body: PAGE });
    }
  },
};
`;

describe.each(DIALECTS)('web console: a page an endpoint serves (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  it("runs in an origin of its own: it cannot read the console's key from the tab or install a service worker over the console", async () => {
    const attacker = client(server.url, (await server.createUser()).apiKey);
    const deployed = await attacker.post('/v1/sources', { component_code: HOSTILE_PAGE, name: 'page' });
    expect(deployed.status, deployed.text).toBe(200);
    const endpoint: string = deployed.body.data.configured_props.http.endpoint_url;
    // The headers of the answer: the component's policy is kept, and the server's sandbox is added beside it.
    const answer = await request('GET', `${endpoint}/page`);
    expect(answer.headers.get('content-security-policy')).toBe(
      "script-src * 'unsafe-inline', sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads",
    );
    expect((await request('GET', `${endpoint}/sw.js`)).headers.get('service-worker-allowed')).toBeNull();

    // A victim signed in to the console follows a link to the endpoint in the same tab.
    const victim = await server.createUser();
    const { page } = await openSignedIn(browser, server.url, victim.apiKey);
    await page.goto(`${endpoint}/page`);
    await page.waitForFunction("document.title !== 'loading'");
    expect(JSON.parse(await page.title())).toEqual({ key: 'SecurityError', worker: 'SecurityError' });
  });
});
