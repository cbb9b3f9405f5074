// The console in Chromium: the long lists of one thing (a workflow's runs, a webhook's deliveries) page back to the
// oldest, a Load more at a time.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { BROWSER_SUITE, launchBrowser, openConsole, signIn } from './browser.js';

const STEP = `export default defineComponent({ async run({ steps }) { return steps.trigger.event.n; } });`;

describe.each(DIALECTS)('web console: paging (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;

  beforeAll(async () => {
    [server, browser] = await Promise.all([startTestServer(dialect), launchBrowser()]);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.destroy();
  });

  it("pages back through a workflow's runs to the oldest, and a refresh keeps the pages opened", async () => {
    const user = await server.createUser();
    const api = client(server.url, user.apiKey);
    const workflow = (await api.post('/v1/workflows', { name: 'many runs', trigger: null, steps: [{ name: 'one', component_code: STEP }] })).body.data;
    const started: string[] = [];
    for (let n = 0; n < 30; n++) {
      const run = await api.post(`/v1/workflows/${workflow.id}/run`, { n });
      expect(run.status, run.text).toBe(202);
      started.push(run.body.data.id);
    }
    await waitFor(
      async () => (await api.get(`/v1/workflows/${workflow.id}/runs?limit=100&status=succeeded`)).body.page_info.total_count,
      (done) => done === started.length,
      { what: 'every run finished' },
    );
    const { page, problems } = await openConsole(browser, `${server.url}/#/workflows/${workflow.id}`);
    await signIn(page, user.apiKey);
    const rows = page.locator('table.runs tbody th a');
    await rows.nth(24).waitFor();
    // The newest 25 were all the page showed: the first five runs could not be reached.
    expect(await rows.count()).toBe(25);
    await page.getByRole('button', { name: 'Load more' }).click();
    await rows.nth(29).waitFor();
    expect(await rows.allTextContents()).toEqual([...started].reverse());
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);

    // A new run and a Refresh: the new one on top, the oldest still shown.
    const newest = (await api.post(`/v1/workflows/${workflow.id}/run`, { n: 30 })).body.data.id;
    await page.getByRole('button', { name: 'Refresh' }).click();
    await rows.filter({ hasText: newest }).waitFor();
    expect(await rows.allTextContents()).toEqual([newest, ...[...started].reverse()]);

    // The oldest run opens from its row.
    await rows.filter({ hasText: started[0]! }).click();
    await page.getByRole('heading', { name: new RegExp(`Run ${started[0]}`) }).waitFor();
    expect(problems).toEqual([]);
    await page.context().close();
  });
});
