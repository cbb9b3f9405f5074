// The console in Chromium: sign-in, the sources list, deploying through the generated form, and live events.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, request } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { evaluate, launchBrowser, openConsole, signIn, waitForText } from './browser.js';

/** An HTTP source that logs each request, fails when the body asks it to, and emits the body otherwise. */
const HTTP_SOURCE = `
module.exports = {
  name: "Hook",
  version: "0.1.0",
  props: { http: "$.interface.http" },
  async run(event) {
    console.log("got", event.method);
    if (event.body && event.body.fail) throw new Error(event.body.fail);
    this.$emit(event.body, { summary: "body " + JSON.stringify(event.body) });
  },
};
`;

const TIMER_SOURCE = `
module.exports = {
  name: "Ticker",
  version: "0.1.0",
  props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 3600 } } },
  async run() { this.$emit({ tick: true }); },
};
`;

/** Every kind of input the form generates, and a prop whose choices come from async options(). */
const FORM_SOURCE = `
export default {
  name: "Form Showcase",
  version: "1.0.0",
  props: {
    http: "$.interface.http",
    timer: { type: "$.interface.timer", default: { intervalSeconds: 60 } },
    token: { type: "string", secret: true, label: "API token" },
    count: { type: "integer", label: "Count", min: 1, max: 10 },
    color: { type: "string", options: ["red", "green", { label: "Blue", value: "blue" }] },
    flavour: { type: "string", label: "Flavour", async options({ page }) { return ["vanilla", "mint-" + page]; } },
    enabled: { type: "boolean", optional: true },
    tags: { type: "string[]", optional: true },
  },
  async run(event) { this.$emit(event); },
};
`;

describe.each(DIALECTS)('web console: sources (%s)', (dialect) => {
  let server: TestServer;
  let browser: Browser;

  beforeAll(async () => {
    [server, browser] = await Promise.all([startTestServer(dialect), launchBrowser()]);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.destroy();
  });

  async function deploy(key: string, body: object): Promise<any> {
    const res = await client(server.url, key).post('/v1/sources', body);
    expect(res.status, res.text).toBe(200);
    return res.body.data;
  }

  it('signs in with a key kept in session storage only, refuses a wrong key, and signs out', async () => {
    const user = await server.createUser();
    const { page, problems } = await openConsole(browser, server.url);
    await page.getByLabel('API key').fill('trb_not-a-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await waitForText(page.getByRole('alert'), 'That key was not accepted');
    expect(await evaluate(page, 'sessionStorage.length')).toBe(0);

    await signIn(page, user.apiKey);
    await page.getByRole('heading', { name: 'Sources' }).waitFor();
    expect(await evaluate(page, 'sessionStorage.getItem("tributary.apiKey")')).toBe(user.apiKey);
    expect(await evaluate(page, 'document.cookie')).toBe('');
    expect(page.url()).not.toContain(user.apiKey);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await evaluate(page, 'sessionStorage.length')).toBe(0);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('lists deployed sources with their type, state, last event and a sparkline of events per minute', async () => {
    const user = await server.createUser();
    const http = await deploy(user.apiKey, { component_code: HTTP_SOURCE, name: 'incoming' });
    await deploy(user.apiKey, { component_code: TIMER_SOURCE, name: 'ticker' });
    for (const n of [1, 2, 3]) expect((await request('POST', http.configured_props.http.endpoint_url, { body: { n } })).status).toBe(200);
    await waitFor(
      () => client(server.url, user.apiKey).get(`/v1/sources/${http.id}/event_summaries`),
      (r) => r.body.data.length === 3,
      { what: 'three events' },
    );

    const { page, problems } = await openConsole(browser, server.url);
    await signIn(page, user.apiKey);
    const incoming = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'incoming' }) });
    await incoming.getByRole('img', { name: '3 events in the last 30 minutes' }).waitFor();
    const cells = await incoming.getByRole('cell').allTextContents();
    expect(cells.slice(0, 3)).toEqual(['HTTP', 'Active', expect.stringMatching(/s ago$/)]);
    const ticker = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'ticker' }) });
    await ticker.getByRole('img', { name: '0 events in the last 30 minutes' }).waitFor();
    expect((await ticker.getByRole('cell').allTextContents()).slice(0, 3)).toEqual(['Timer', 'Active', 'never']);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('deploys a source through the form generated from its props: checks before submit, async options, the server 422 on its field', async () => {
    const user = await server.createUser();
    const api = client(server.url, user.apiKey);
    const { page, problems } = await openConsole(browser, server.url);
    await signIn(page, user.apiKey);
    await page.getByRole('link', { name: 'New source' }).click();
    await page.getByLabel('Component code').fill(FORM_SOURCE);
    await page.getByRole('button', { name: 'Load props' }).click();
    await page.getByRole('heading', { name: /Configure Form Showcase/ }).waitFor();

    // The secret is masked; static options are a select; the timer starts at its default.
    expect(await page.getByLabel('API token').getAttribute('type')).toBe('password');
    expect(await page.getByLabel('color').locator('option').allTextContents()).toEqual(['Choose…', 'red', 'green', 'Blue']);
    expect(await page.getByLabel('Interval in seconds').inputValue()).toBe('60');

    await page.getByLabel('Source name').fill('showcase');
    await page.getByLabel('API token').fill('s3cret');
    await page.getByLabel('Count').fill('11');
    await page.getByLabel('color').selectOption('blue');
    await page.getByRole('button', { name: 'Load choices for Flavour' }).click();
    await page.getByLabel('Flavour', { exact: true }).locator('option', { hasText: 'mint-0' }).waitFor({ state: 'attached' });
    await page.getByLabel('Flavour', { exact: true }).selectOption('mint-0');
    await page.getByRole('button', { name: 'Deploy' }).click();
    // max is checked before anything is sent: no source exists.
    await waitForText(page.locator('#prop-count-error'), 'Count must be at most 10');
    expect(await page.getByLabel('Count').getAttribute('aria-invalid')).toBe('true');
    expect((await api.get('/v1/users/me/sources')).body.data).toEqual([]);

    // An interval under the server's minimum (15 s) is the server's to refuse: its 422 lands on the timer's field.
    await page.getByLabel('Count').fill('5');
    await page.getByLabel('Interval in seconds').fill('5');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await waitForText(page.locator('#prop-timer-error'), /timer .*15/);
    expect(await page.locator('#prop-count-error').textContent()).toBe('');
    expect((await api.get('/v1/users/me/sources')).body.data).toEqual([]);

    await page.getByLabel('Interval in seconds').fill('60');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await page.getByRole('heading', { name: 'showcase', level: 1 }).waitFor();
    const [source] = (await api.get('/v1/users/me/sources')).body.data;
    expect(source.configured_props).toMatchObject({ token: '********', count: 5, color: 'blue', flavour: 'mint-0', timer: { interval_seconds: 60 } });
    expect(page.url()).toContain(`#/sources/${source.id}`);
    expect(await page.locator('#endpoint-url').textContent()).toBe(source.configured_props.http.endpoint_url);
    expect(problems).toEqual([]);
    await page.context().close();
  });
});
