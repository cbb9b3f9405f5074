// The console in Chromium: sign-in, the sources list, deploying through the generated form, and live events.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { client, request } from '../helpers/client.js';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import {
  BROWSER_SUITE,
  evaluate,
  newAccount,
  openConsole,
  openSignedIn,
  screenshot,
  signIn,
  waitForFocus,
  waitForText,
  withServerAndBrowser,
} from './browser.js';

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

const BOTH_SOURCE = `
module.exports = {
  name: "Both",
  version: "0.1.0",
  props: { http: "$.interface.http", timer: { type: "$.interface.timer", default: { intervalSeconds: 900 } } },
  async run() { this.$emit({ tick: true }); },
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
    pin: { type: "integer", secret: true, label: "PIN", optional: true },
    keys: { type: "object", secret: true, label: "Keys", optional: true },
  },
  async run(event) { this.$emit(event); },
};
`;

describe.each(DIALECTS)('web console: sources (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  async function deploy(key: string, body: object): Promise<any> {
    const res = await client(server.url, key).post('/v1/sources', body);
    expect(res.status, res.text).toBe(200);
    return res.body.data;
  }

  it('signs in with a key kept in session storage only, refuses a wrong key, and signs out', async () => {
    const user = await server.createUser();
    const { page, finish } = await openConsole(browser, server.url);
    // Typing starts in the key field.
    await waitForFocus(page, '#api-key');
    await page.keyboard.type('trb_not-a-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await waitForText(page.getByRole('alert'), 'That key was not accepted');
    expect(await evaluate(page, 'sessionStorage.length')).toBe(0);

    await signIn(page, user.apiKey);
    await page.getByRole('heading', { name: 'Sources' }).waitFor();
    // Focus goes to the page's content, not back to the start of the document.
    await waitForFocus(page, '#main');
    expect(await evaluate(page, 'sessionStorage.getItem("tributary.apiKey")')).toBe(user.apiKey);
    expect(await evaluate(page, 'document.cookie')).toBe('');
    expect(page.url()).not.toContain(user.apiKey);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await evaluate(page, 'sessionStorage.length')).toBe(0);
    await finish();
  });

  it('says Signed out as news rather than as an error, and drops it once another key is tried', async () => {
    const user = await server.createUser();
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('button', { name: 'Sign out' }).click();
    // It was a red alert, as a refused key is, and stayed above the next key's own refusal.
    await waitForText(page.getByRole('status'), 'Signed out.');
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await page.locator('.sign-in .error').count()).toBe(0);
    await page.getByLabel('API key').fill('trb_not-a-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await waitForText(page.locator('#api-key-error'), 'That key was not accepted: invalid API key.');
    expect(await page.getByText('Signed out.').count()).toBe(0);
    await finish();
  });

  it('gives the key field the focus back when a key pressed in from the Sign in button is refused', async () => {
    const user = await server.createUser();
    const { page, finish } = await openConsole(browser, server.url);
    await waitForFocus(page, '#api-key');
    await page.keyboard.type('trb_not-a-key');
    await page.keyboard.press('Tab');
    await waitForFocus(page, 'button[type="submit"]', /^Sign in$/);
    await page.keyboard.press('Enter');
    await waitForText(page.locator('#api-key-error'), 'That key was not accepted');
    // The button was disabled while the key was checked, which dropped the focus to the document.
    await waitForFocus(page, '#api-key');
    await page.keyboard.press('Control+A');
    await page.keyboard.type(user.apiKey);
    await page.keyboard.press('Enter');
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();
    await finish();
  });

  it('lists deployed sources with their type, state, last event and a sparkline of events per minute', async () => {
    const user = await server.createUser();
    const http = await deploy(user.apiKey, { component_code: HTTP_SOURCE, name: 'incoming' });
    const tickerSource = await deploy(user.apiKey, { component_code: TIMER_SOURCE, name: 'ticker' });
    await deploy(user.apiKey, { component_code: BOTH_SOURCE, name: 'both' });
    for (const n of [1, 2, 3]) expect((await request('POST', http.configured_props.http.endpoint_url, { body: { n } })).status).toBe(200);
    await waitFor(
      () => client(server.url, user.apiKey).get(`/v1/sources/${http.id}/event_summaries`),
      (r) => r.body.data.length === 3,
      { what: 'three events' },
    );

    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    const incoming = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'incoming' }) });
    await incoming.getByRole('img', { name: '3 events in the last 30 minutes' }).waitFor();
    const cells = await incoming.getByRole('cell').allTextContents();
    expect(cells.slice(0, 3)).toEqual(['HTTP', 'Active', expect.stringMatching(/s ago$/)]);
    const ticker = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'ticker' }) });
    await ticker.getByRole('img', { name: '0 events in the last 30 minutes' }).waitFor();
    expect((await ticker.getByRole('cell').allTextContents()).slice(0, 3)).toEqual(['Timer', 'Active', 'never']);
    const both = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'both' }) });
    expect((await both.getByRole('cell').allTextContents()).slice(0, 2)).toEqual(['HTTP + timer', 'Active']);
    await screenshot(page, 'sources');
    // A timer's schedule is on the source's page.
    await page.goto(`${server.url}/#/sources/${tickerSource.id}`);
    await waitForText(page.locator('.facts'), 'Scheduleevery 1 h');
    await finish();
  });

  it('deploys a source through the form generated from its props: checks before submit, async options, the server 422 on its field', async () => {
    const { user, api } = await newAccount(server);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('link', { name: 'New source' }).click();
    await page.getByLabel('Component code').fill(FORM_SOURCE);
    await page.getByRole('button', { name: 'Load props' }).click();
    await page.getByRole('heading', { name: /Configure Form Showcase/ }).waitFor();
    // Focus moves from the Load props button to the form that now needs filling in.
    await waitForFocus(page, '#configure-title');

    // The secret is masked; static options are a select; the timer starts at its default.
    expect(await page.getByLabel('API token').getAttribute('type')).toBe('password');
    // Secrets of other types too: a number as a password field, JSON in a textarea drawn as discs.
    expect(await page.getByLabel('PIN').getAttribute('type')).toBe('password');
    await page.getByLabel('Keys').fill('{"k": "v"}');
    expect(await evaluate(page, `getComputedStyle(document.querySelector('#prop-keys')).webkitTextSecurity`)).toBe('disc');
    await page.getByLabel('Keys').fill('');
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
    // The keyboard lands on the field to fix.
    await waitForFocus(page, '#prop-count');
    expect((await api.get('/v1/users/me/sources')).body.data).toEqual([]);

    // What only the server can judge, a cron expression, is its to refuse: its 422 lands on the timer's field.
    await page.getByLabel('Count').fill('5');
    await page.getByLabel('Schedule').selectOption('cron');
    await page.getByLabel('Cron expression').fill('61 * * * *');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await waitForText(page.locator('#prop-timer-error'), /^timer /);
    expect(await page.locator('#prop-count-error').textContent()).toBe('');
    await waitForFocus(page, '#prop-timer');
    expect((await api.get('/v1/users/me/sources')).body.data).toEqual([]);
    await page.getByLabel('Cron expression').scrollIntoViewIfNeeded();
    await screenshot(page, 'new-source');

    // An interval under the server's minimum (--min-timer-interval, 15 s here) is caught before it is sent, by the
    // server's own rule: the field's min, its hint and its message say 15, and 15 itself passes.
    await page.getByLabel('Schedule').selectOption('interval');
    expect(await page.getByLabel('Interval in seconds').getAttribute('min')).toBe('15');
    await waitForText(page.locator('#prop-timer-min'), 'At least 15 seconds');
    await page.getByLabel('Interval in seconds').fill('14');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await waitForText(page.locator('#prop-timer-error'), 'timer needs an interval of at least 15 seconds');
    await waitForFocus(page, '#prop-timer');
    expect((await api.get('/v1/users/me/sources')).body.data).toEqual([]);

    await page.getByLabel('Interval in seconds').fill('15');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await page.getByRole('heading', { name: 'showcase', level: 1 }).waitFor();
    const [source] = (await api.get('/v1/users/me/sources')).body.data;
    expect(source.configured_props).toMatchObject({ token: '********', count: 5, color: 'blue', flavour: 'mint-0', timer: { interval_seconds: 15 } });
    expect(page.url()).toContain(`#/sources/${source.id}`);
    expect(await page.locator('#endpoint-url').textContent()).toBe(source.configured_props.http.endpoint_url);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    await page.getByRole('button', { name: 'Copy endpoint URL' }).click();
    await waitForText(page.locator('.copy output'), 'Copied');
    expect(await evaluate(page, 'navigator.clipboard.readText()')).toBe(source.configured_props.http.endpoint_url);
    await finish();
  });

  it("keeps the keyboard focus on Load choices while an async options() prop's choices load", async () => {
    const user = await server.createUser();
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/sources/new`, user.apiKey);
    await page.getByLabel('Component code').fill(FORM_SOURCE);
    await page.getByRole('button', { name: 'Load props' }).click();
    await page.getByRole('heading', { name: /Configure Form Showcase/ }).waitFor();
    const load = page.getByRole('button', { name: 'Load choices for Flavour' });
    await load.focus();
    await page.keyboard.press('Enter');
    await page.getByLabel('Flavour').locator('option', { hasText: 'mint-0' }).waitFor({ state: 'attached' });
    // The button was disabled while the choices loaded, which dropped the focus to the document: the next Tab began
    // again at the top of the page.
    await waitForText(load, 'Reload');
    await waitForFocus(page, 'button[aria-label="Load choices for Flavour"]');
    await page.keyboard.press('Enter');
    await waitForText(load, 'Reload');
    await waitForFocus(page, 'button[aria-label="Load choices for Flavour"]');
    await finish();
  });

  it("shows a component's alert prop as its author's note, asks nothing for it, and deploys", async () => {
    const { user, api } = await newAccount(server);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('link', { name: 'New source' }).click();
    await page.getByLabel('Component code').fill(`export default {
      name: "Noted", version: "0.1.0",
      props: { setup: { type: "alert", alertType: "warning", content: "Create an API key in Acme first." }, greeting: { type: "string" } },
      async run() { this.$emit({ greeting: this.greeting }); },
    };`);
    await page.getByRole('button', { name: 'Load props' }).click();
    const note = page.getByRole('note', { name: 'warning: setup' });
    await waitForText(note, 'Create an API key in Acme first.');
    expect(await note.getAttribute('class')).toBe('prop-alert warning');
    await page.getByLabel('greeting').fill('hi');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await waitForText(page.getByRole('status'), 'Deployed Noted.');
    expect((await api.get('/v1/users/me/sources')).body.data[0].configured_props).toEqual({ greeting: 'hi' });
    await finish();
  });

  it('shows the props additionalProps() adds for the values chosen, deploys with them, and edits them', async () => {
    const { user, api } = await newAccount(server);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('link', { name: 'New source' }).click();
    await page.getByLabel('Component code').fill(`export default {
      name: "Shaped", version: "0.1.0",
      props: {
        kind: { type: "string", label: "Kind", options: ["plain", "tagged"], reloadProps: true },
        channel: { type: "string", label: "Channel", hidden: true, optional: true },
      },
      async additionalProps(previous) {
        if (this.kind !== "tagged") return {};
        previous.channel.hidden = false;
        return { tag: { type: "string", label: "Tag", default: "urgent" } };
      },
      async run() { this.$emit({ kind: this.kind, tag: this.tag, channel: this.channel }); },
    };`);
    await page.getByRole('button', { name: 'Load props' }).click();
    await page.getByLabel('Kind').waitFor();
    expect(await page.getByLabel('Tag').count()).toBe(0);
    expect(await page.getByLabel('Channel').count()).toBe(0);
    // Choosing the value the added props depend on lists them, the added one at its default.
    await page.getByLabel('Kind').selectOption('tagged');
    await page.getByLabel('Tag').waitFor();
    expect(await page.getByLabel('Tag').inputValue()).toBe('urgent');
    await page.getByLabel('Channel').fill('ops');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await waitForText(page.getByRole('status'), 'Deployed shaped.');
    const [source] = (await api.get('/v1/users/me/sources')).body.data;
    expect(source.configured_props).toEqual({ kind: 'tagged', tag: 'urgent', channel: 'ops' });

    // Edit props lists them too, with their stored values; back to "plain", they go.
    await page.getByText('Edit props').click();
    await page.getByLabel('Tag').waitFor();
    expect(await page.getByLabel('Tag').inputValue()).toBe('urgent');
    await page.getByLabel('Tag').fill('later');
    await page.getByRole('button', { name: 'Save props' }).click();
    await waitForText(page.getByRole('status'), 'Saved the props of shaped');
    expect((await api.get(`/v1/sources/${source.id}`)).body.data.configured_props).toEqual({ kind: 'tagged', tag: 'later', channel: 'ops' });
    // After the save the form shows what was stored, the added props too.
    expect([await page.getByLabel('Tag').inputValue(), await page.getByLabel('Channel').inputValue()]).toEqual(['later', 'ops']);
    await page.getByLabel('Kind').selectOption('plain');
    await page.getByLabel('Tag').waitFor({ state: 'detached' });
    expect(await page.getByLabel('Channel').count()).toBe(0);
    await finish();
  });

  it('shows an event sent to the endpoint live, opens it as JSON, pauses and resumes, and deletes it with confirmation', async () => {
    const { user, api } = await newAccount(server);
    const source = await deploy(user.apiKey, { component_code: HTTP_SOURCE, name: 'live' });
    const endpoint = source.configured_props.http.endpoint_url;
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('link', { name: 'live' }).click();
    await waitForText(page.locator('.live-state'), 'Live');
    // A mark on the page's window: still there after the rows arrive, so they came without a reload.
    await evaluate(page, 'window.__sameDocument = true');
    const table = page.getByRole('region', { name: 'Events of this source' });
    // What is below the live table stays where it is while rows stream in.
    const below = page.getByRole('heading', { name: 'Delete events' });
    const before = await below.boundingBox();

    expect((await request('POST', endpoint, { body: { hello: 'world-1' } })).status).toBe(200);
    await table.getByRole('row').filter({ hasText: 'world-1' }).waitFor();
    expect(await evaluate(page, 'window.__sameDocument')).toBe(true);
    await waitForText(page.locator('[aria-live="polite"].sr-only'), 'world-1');

    // Paused: a new event waits, counted, until resumed.
    await page.getByRole('button', { name: 'Pause' }).click();
    expect((await request('POST', endpoint, { body: { hello: 'world-2' } })).status).toBe(200);
    await page.getByRole('button', { name: 'Resume (1 new)' }).waitFor();
    expect(await table.getByRole('row').filter({ hasText: 'world-2' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Resume (1 new)' }).click();
    await table.getByRole('row').filter({ hasText: 'world-2' }).waitFor();
    expect(await evaluate(page, 'window.__sameDocument')).toBe(true);
    expect(await below.boundingBox()).toEqual(before);

    // The row opens the full event as JSON, folded by level.
    await table.getByRole('row').filter({ hasText: 'world-1' }).click();
    const detail = page.getByRole('figure', { name: 'Event JSON' });
    await waitForText(detail, '"hello": "world-1"');
    await waitForText(detail, `"emitter_id": ${JSON.stringify(source.id)}`);
    // Each object folds: closing "event" hides its keys, opening it shows them again.
    const eventNode = detail.locator('summary').filter({ hasText: '"event":' });
    await eventNode.click();
    await detail.getByText('"world-1"').waitFor({ state: 'hidden' });
    await eventNode.press('Enter');
    await detail.getByText('"world-1"').waitFor();
    await detail.scrollIntoViewIfNeeded();
    await screenshot(page, 'source-events');

    // Delete this event: a dialog asks first; cancelling keeps it.
    const events = () => api.get(`/v1/sources/${source.id}/event_summaries`);
    const world1 = (await events()).body.data.find((e: any) => e.event.hello === 'world-1');
    await page.getByRole('button', { name: 'Delete this event' }).click();
    await page.getByRole('dialog', { name: 'Delete events?' }).getByRole('button', { name: 'Cancel' }).click();
    expect((await events()).body.data).toHaveLength(2);
    await page.getByRole('button', { name: 'Delete this event' }).click();
    await waitForText(page.getByRole('dialog'), `Event ${world1.id} will be deleted`);
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await table.getByRole('row').filter({ hasText: 'world-1' }).waitFor({ state: 'detached' });
    expect((await events()).body.data.map((e: any) => e.event.hello)).toEqual(['world-2']);
    await table.getByRole('row').filter({ hasText: 'world-2' }).waitFor();
    await finish();
  });

  it("shows a failing run on the $errors tab and the source's console output on $logs, live", async () => {
    const user = await server.createUser();
    const source = await deploy(user.apiKey, { component_code: HTTP_SOURCE, name: 'failing' });
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.goto(`${server.url}/#/sources/${source.id}`);
    await page.getByRole('tab', { name: '$errors' }).click();
    await page.getByRole('tab', { name: '$errors', selected: true }).waitFor();
    await waitForText(page.locator('.live-state'), 'Live');
    expect((await request('POST', source.configured_props.http.endpoint_url, { body: { fail: 'kaboom at step 3' } })).status).toBe(200);
    const errors = page.getByRole('region', { name: '$errors of this source' });
    // A short window: the opened event lies below the table, and is brought into view.
    await page.setViewportSize({ width: 1280, height: 420 });
    await errors.getByRole('row').filter({ hasText: 'kaboom at step 3' }).click();
    const detail = page.getByRole('figure', { name: 'Event JSON' });
    await waitForText(detail, '"name": "$errors"');
    // The error shows at once, not folded away.
    await waitForText(detail, '"message": "kaboom at step 3"');
    const heading = page.getByRole('heading', { name: /^Event / });
    await waitFor(
      async () => (await heading.boundingBox())?.y,
      (y) => y !== undefined && y >= 0 && y < 420,
      { what: 'the opened event in view' },
    );

    // Arrow keys move between tabs.
    await page.getByRole('tab', { name: '$errors' }).focus();
    await page.keyboard.press('ArrowLeft');
    await page.getByRole('tab', { name: '$logs', selected: true }).waitFor();
    await page.getByRole('region', { name: '$logs of this source' }).getByRole('row').filter({ hasText: 'got POST' }).waitFor();
    await finish();
  });

  it('gives each event row one tab stop, which Enter or Space opens, with a visible focus', async () => {
    const user = await server.createUser();
    const source = await deploy(user.apiKey, { component_code: HTTP_SOURCE, name: 'keyboard' });
    for (const n of [1, 2, 3]) expect((await request('POST', source.configured_props.http.endpoint_url, { body: { n } })).status).toBe(200);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.goto(`${server.url}/#/sources/${source.id}`);
    const table = page.getByRole('region', { name: 'Events of this source' });
    await table.getByRole('row').filter({ hasText: 'body {"n":1}' }).waitFor();
    const ids = await table.locator('tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-event-id')));
    expect(ids).toHaveLength(3);

    // From the scrolling table, Tab visits each row once, newest first, then leaves the table.
    await table.focus();
    const focusedRow = () => evaluate<string | null>(page, `document.activeElement.closest('tr')?.getAttribute('data-event-id') ?? null`);
    const visited: Array<string | null> = [];
    for (let i = 0; i < 4; i++) {
      await page.keyboard.press('Tab');
      visited.push(await focusedRow());
    }
    expect(visited).toEqual([...ids, null]);
    await waitForFocus(page, `#range-start-${source.id}`);

    // Back on the second row: the focus shows, and the stop says which event it is (its summary describes it).
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Shift+Tab');
    await waitForFocus(page, `tr[data-event-id="${ids[1]}"] button`);
    expect(await evaluate<string>(page, 'getComputedStyle(document.activeElement).outlineStyle')).toBe('solid');
    expect(await evaluate<string>(page, 'getComputedStyle(document.activeElement).outlineWidth')).toBe('3px');
    expect(await evaluate<string>(page, `document.getElementById(document.activeElement.getAttribute('aria-describedby')).textContent`)).toBe('body {"n":2}');
    const detail = page.getByRole('figure', { name: 'Event JSON' });
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: `Event ${ids[1]}` }).waitFor();
    await waitForText(detail, '"n": 2');
    expect(await table.locator(`tr[data-event-id="${ids[1]}"] button`).getAttribute('aria-expanded')).toBe('true');
    // Space opens too, and the focus stays on the row's stop.
    await page.keyboard.press('Shift+Tab');
    await waitForFocus(page, `tr[data-event-id="${ids[0]}"] button`);
    await page.keyboard.press('Space');
    await page.getByRole('heading', { name: `Event ${ids[0]}` }).waitFor();
    await waitForText(detail, '"n": 3');
    await waitForFocus(page, `tr[data-event-id="${ids[0]}"] button`);
    await finish();
  });

  it('opens a large event folded past its first hundred entries, and makes a fold only when it is opened', async () => {
    const user = await server.createUser();
    const source = await deploy(user.apiKey, { component_code: HTTP_SOURCE, name: 'large' });
    const items = Array.from({ length: 150 }, (_, i) => `item-${i}`);
    expect((await request('POST', source.configured_props.http.endpoint_url, { body: { items } })).status).toBe(200);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.goto(`${server.url}/#/sources/${source.id}`);
    await page.getByRole('row').filter({ hasText: 'item-0' }).first().click();
    const detail = page.getByRole('figure', { name: 'Event JSON' });
    const list = detail.locator('summary').filter({ hasText: '150 items' });
    await list.waitFor();
    expect(await detail.getByText('"item-149"').count()).toBe(0);
    await list.click();
    await detail.getByText('"item-149"').waitFor();
    await finish();
  });

  it("says a source's last event could not be read, rather than showing it as on its way forever", async () => {
    const user = await server.createUser();
    const source = await deploy(user.apiKey, { component_code: HTTP_SOURCE, name: 'unread' });
    const { page } = await openConsole(browser, server.url);
    // This source's events out of reach, as when the server stops answering between the list and its rows.
    await page.route(`**/v1/sources/${source.id}/event_summaries?*`, (route) => route.abort('connectionrefused'));
    await signIn(page, user.apiKey);
    const row = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'unread' }) });
    // It stayed "…", the mark of a read still on its way.
    await waitForText(row.getByRole('cell').nth(2), 'could not be read');
    expect(await row.getByRole('cell').nth(2).locator('span').getAttribute('title')).toMatch(/^Cannot reach the server/);
    await page.context().close();
  });

  it('says why a page could not be read, and reads it again on Try again once the server answers', async () => {
    const user = await server.createUser();
    const source = await deploy(user.apiKey, { component_code: HTTP_SOURCE, name: 'comes-back' });
    const { page } = await openSignedIn(browser, server.url, user.apiKey);
    // The server out of reach for this source's page, as when it is stopped: the request fails without an answer.
    const sourceUrl = `**/v1/sources/${source.id}`;
    await page.route(sourceUrl, (route) => route.abort('connectionrefused'));
    await page.goto(`${server.url}/#/sources/${source.id}`);
    const tryAgain = page.getByRole('alert').getByRole('button', { name: 'Try again' });
    await tryAgain.waitFor();
    // Said in words, not as the browser's "Failed to fetch".
    await waitForText(page.getByRole('alert'), 'Cannot reach the server: it may be stopped or restarting, or the network is down.');
    await page.unroute(sourceUrl);
    await tryAgain.click();
    await page.getByRole('heading', { name: 'comes-back' }).waitFor();
    // A source that does not exist (deleted, say) is said so, without a Try again that cannot help.
    await page.goto(`${server.url}/#/sources/dc_00000000000000000000000000`);
    await waitForText(page.getByRole('alert'), 'source "dc_00000000000000000000000000" not found');
    expect(await page.getByRole('alert').getByRole('button', { name: 'Try again' }).count()).toBe(0);
    await page.context().close();
  });

  it('keeps the keyboard focus on Try again while it reads the page again, and when that read fails too', async () => {
    const user = await server.createUser();
    const source = await deploy(user.apiKey, { component_code: HTTP_SOURCE, name: 'still-away' });
    const { page } = await openSignedIn(browser, server.url, user.apiKey);
    let reads = 0;
    const sourceUrl = `**/v1/sources/${source.id}`;
    await page.route(sourceUrl, (route) => {
      reads += 1;
      return route.abort('connectionrefused');
    });
    await page.goto(`${server.url}/#/sources/${source.id}`);
    const tryAgain = page.getByRole('alert').getByRole('button', { name: 'Try again' });
    await tryAgain.focus();
    await page.keyboard.press('Enter');
    await waitFor(
      async () => reads,
      (n) => n >= 2,
    );
    await tryAgain.waitFor();
    // The button was disabled while it read, which dropped the focus: the next Enter pressed nothing.
    await waitForFocus(page, '.error button', /^Try again$/);
    await page.unroute(sourceUrl);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'still-away' }).waitFor();
    await page.context().close();
  });

  it('after Run now, says what became of the run and links to the event it emitted or to its error', async () => {
    const { user, api } = await newAccount(server);
    const source = await deploy(user.apiKey, { component_code: HTTP_SOURCE, name: 'outcome' });
    // An event from before the run is not taken for the run's.
    expect((await request('POST', source.configured_props.http.endpoint_url, { body: { earlier: true } })).status).toBe(200);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.goto(`${server.url}/#/sources/${source.id}`);
    const table = page.getByRole('region', { name: 'Events of this source' });
    await table.getByRole('row').filter({ hasText: '"earlier":true' }).waitFor();
    const outcome = page.locator('output#run-event-outcome');
    expect(await outcome.getAttribute('aria-live')).toBe('polite');

    await page.getByText('Run now').click();
    await page.getByLabel('Event (JSON)').fill('{"method": "MANUAL", "body": {"by": "hand"}}');
    await page.getByRole('button', { name: 'Run with this event' }).click();
    await waitForText(outcome, /^Run inv_\w+ done: 1 new event since it was queued\. Show event \d+-\d+$/);
    const [emitted] = (await api.get(`/v1/sources/${source.id}/event_summaries`)).body.data;
    expect(emitted.event).toEqual({ by: 'hand' });
    await outcome.getByRole('link', { name: `Show event ${emitted.id}` }).click();
    await page.getByRole('heading', { name: `Event ${emitted.id}` }).waitFor();
    await waitForText(page.getByRole('figure', { name: 'Event JSON' }), '"by": "hand"');

    // A run that throws: its $errors event names the run, and the link opens it on the $errors tab.
    await page.getByLabel('Event (JSON)').fill('{"method": "MANUAL", "body": {"fail": "on purpose"}}');
    await page.getByRole('button', { name: 'Run with this event' }).click();
    await waitForText(outcome, /^Run inv_\w+ failed: Error: on purpose\. Show the error$/);
    const runId = (await outcome.textContent())!.match(/inv_\w+/)![0];
    const [error] = (await api.get(`/v1/sources/${source.id}/$errors/event_summaries`)).body.data;
    expect(error.event.original_context.id).toBe(runId);
    await outcome.getByRole('link', { name: 'Show the error' }).click();
    await page.getByRole('tab', { name: '$errors', selected: true }).waitFor();
    await page.getByRole('heading', { name: `Event ${error.id}` }).waitFor();
    await waitForText(page.getByRole('figure', { name: 'Event JSON' }), 'on purpose');
    await finish();
  });

  it('runs a source now with an event, deactivates it, and deletes it after confirmation', async () => {
    const { user, api } = await newAccount(server);
    const source = await deploy(user.apiKey, { component_code: HTTP_SOURCE, name: 'manual' });
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.goto(`${server.url}/#/sources/${source.id}`);
    await waitForText(page.locator('.live-state'), 'Live');

    await page.getByText('Run now').click();
    await page.getByLabel('Event (JSON)').fill('{ "body": not json');
    await page.getByRole('button', { name: 'Run with this event' }).click();
    await waitForText(page.locator('#run-event-error'), 'valid JSON');
    await page.getByLabel('Event (JSON)').fill('{"method": "MANUAL", "body": {"by": "hand"}}');
    await page.getByRole('button', { name: 'Run with this event' }).click();
    await waitForText(page.getByRole('status'), /Run queued \(inv_/);
    await page.getByRole('region', { name: 'Events of this source' }).getByRole('row').filter({ hasText: '"by":"hand"' }).waitFor();

    await page.getByRole('button', { name: 'Deactivate' }).click();
    await page.getByRole('button', { name: 'Activate', exact: true }).waitFor();
    expect((await api.get('/v1/users/me/sources')).body.data[0].active).toBe(false);
    expect(await page.getByRole('button', { name: 'Run with this event' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Activate', exact: true }).click();
    await page.getByRole('button', { name: 'Deactivate', exact: true }).waitFor();
    expect((await api.get('/v1/users/me/sources')).body.data[0].active).toBe(true);

    // The dialog opens with the focus on Cancel; Escape cancels too.
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await waitForFocus(page, '*', /^Cancel$/);
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByRole('dialog', { name: 'Delete manual?' }).getByRole('button', { name: 'Cancel' }).click();
    expect((await api.get('/v1/users/me/sources')).body.data).toHaveLength(1);
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByRole('dialog', { name: 'Delete manual?' }).getByRole('button', { name: 'Delete source' }).click();
    await page.getByRole('heading', { name: 'Sources', level: 1 }).waitFor();
    expect(page.url()).toMatch(/#\/sources$/);
    expect((await api.get('/v1/users/me/sources')).body.data).toEqual([]);
    await finish();
  });

  it('sends one PATCH for a double click of Deactivate, Activate or Save props, each button busy while its request runs', async () => {
    const { user, api } = await newAccount(server);
    const source = await deploy(user.apiKey, {
      component_code: `module.exports = { name: "Named", version: "0.1.0", props: { http: "$.interface.http", greeting: { type: "string", label: "Greeting" } }, async run() {} };`,
      name: 'pressed',
      configured_props: { greeting: 'hello' },
    });
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    // Each PATCH is held until the test lets it go: both presses of a double click come while the first is on its way.
    const held: Array<() => void> = [];
    const patches: string[] = [];
    await page.route(`**/v1/sources/${source.id}`, async (route) => {
      if (route.request().method() !== 'PATCH') return route.continue();
      patches.push(route.request().postData() ?? '');
      await new Promise<void>((release) => held.push(release));
      await route.continue();
    });
    await page.goto(`${server.url}/#/sources/${source.id}`);

    const pressTwice = async (name: string, busyLabel: string, after: string) => {
      const before = patches.length;
      await page.getByRole('button', { name, exact: true }).dblclick();
      const busy = page.getByRole('button', { name: busyLabel, exact: true });
      await busy.waitFor();
      expect(await busy.getAttribute('aria-disabled')).toBe('true');
      expect(patches.length - before).toBe(1);
      held.shift()!();
      await page.getByRole('button', { name: after, exact: true }).waitFor();
      expect(patches.length - before).toBe(1);
    };
    await pressTwice('Deactivate', 'Deactivating…', 'Activate');
    await pressTwice('Activate', 'Activating…', 'Deactivate');
    await page.getByText('Edit props').click();
    await page.getByLabel('Greeting').fill('bonjour');
    await pressTwice('Save props', 'Saving…', 'Save props');
    await waitForText(page.getByRole('status'), 'Saved the props of pressed');
    expect(patches).toHaveLength(3);
    expect(held).toEqual([]);
    const [saved] = (await api.get('/v1/users/me/sources')).body.data;
    expect(saved).toMatchObject({ active: true, configured_props: { greeting: 'bonjour' } });
    await finish();
  });

  it('deletes a range of events given by their ids, after confirmation', async () => {
    const { user, api } = await newAccount(server);
    const source = await deploy(user.apiKey, { component_code: HTTP_SOURCE, name: 'ranged' });
    for (const n of [1, 2, 3, 4]) expect((await request('POST', source.configured_props.http.endpoint_url, { body: { n } })).status).toBe(200);
    const events = () => api.get(`/v1/sources/${source.id}/event_summaries`);
    const all = (await waitFor(events, (r) => r.body.data.length === 4, { what: 'four events' })).body.data;
    const [fourth, third, second] = all;

    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.goto(`${server.url}/#/sources/${source.id}`);
    const table = page.getByRole('region', { name: 'Events of this source' });
    await table.getByRole('row').filter({ hasText: 'body {"n":4}' }).waitFor();
    await page.getByLabel('From id').fill(second.id);
    await page.getByLabel('To id').fill(third.id);
    await page.getByRole('button', { name: 'Delete range' }).click();
    await waitForText(page.getByRole('dialog', { name: 'Delete events?' }), `Events from ${second.id} to ${third.id} will be deleted`);
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await table.getByRole('row').filter({ hasText: 'body {"n":2}' }).waitFor({ state: 'detached' });
    expect(await table.getByRole('row').filter({ hasText: 'body {"n":3}' }).count()).toBe(0);
    expect((await events()).body.data.map((e: any) => e.id)).toEqual([fourth.id, all[3].id]);
    expect(await table.locator('tbody tr').count()).toBe(2);
    await finish();
  });

  it("edits a source's props through the generated form, checked before it is sent", async () => {
    const { user, api } = await newAccount(server);
    const code = `module.exports = {
      name: "Greeter", version: "0.1.0",
      props: { http: "$.interface.http", greeting: { type: "string", label: "Greeting" }, times: { type: "integer", label: "Times", max: 5 },
               token: { type: "string", secret: true, label: "Token" }, channel: { type: "string", label: "Channel", hidden: true } },
      async run() { this.$emit({ greeting: this.greeting, times: this.times, token: this.token, channel: this.channel }); },
    };`;
    const source = await deploy(user.apiKey, {
      component_code: code,
      name: 'greeter',
      configured_props: { greeting: 'hello', times: 2, token: 'first', channel: 'ops' },
    });
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.goto(`${server.url}/#/sources/${source.id}`);
    await page.getByText('Edit props').click();
    expect(await page.getByLabel('Greeting').inputValue()).toBe('hello');
    expect(await page.getByLabel('Token').inputValue()).toBe('********');
    // A hidden prop has no field, and its stored value is kept by the save.
    expect(await page.getByLabel('Channel').count()).toBe(0);
    await page.getByLabel('Greeting').fill('bonjour');
    await page.getByLabel('Times').fill('9');
    await page.getByRole('button', { name: 'Save props' }).click();
    await waitForText(page.locator('#edit-times-error'), 'Times must be at most 5');
    await page.getByLabel('Times').fill('3');
    await page.getByRole('button', { name: 'Save props' }).click();
    await waitForText(page.getByRole('status'), 'Saved the props of greeter');
    const [saved] = (await api.get('/v1/users/me/sources')).body.data;
    expect(saved.configured_props).toMatchObject({ greeting: 'bonjour', times: 3, token: '********', channel: 'ops' });
    // The masked secret was sent back as the placeholder, which keeps the stored value: a run still sees it.
    expect((await api.post(`/v1/sources/${source.id}/run`, {})).status).toBe(202);
    const events = await waitFor(
      () => api.get(`/v1/sources/${source.id}/event_summaries?expand=event`),
      (r) => r.body.data.length === 1,
      { what: 'the run' },
    );
    expect(events.body.data[0].event).toEqual({ greeting: 'bonjour', times: 3, token: 'first', channel: 'ops' });
    await finish();
  });

  it("keeps a cron timer's time zone through Edit props, and sets one in the form", async () => {
    const { user, api } = await newAccount(server);
    const source = await deploy(user.apiKey, {
      component_code: TIMER_SOURCE,
      name: 'weekdays',
      configured_props: { timer: { cron: '0 9 * * 1-5', timezone: 'Europe/Paris' } },
    });
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.goto(`${server.url}/#/sources/${source.id}`);
    await page.getByText('Edit props').click();
    expect(await page.getByLabel('Cron expression').inputValue()).toBe('0 9 * * 1-5');
    expect(await page.getByLabel('Time zone').inputValue()).toBe('Europe/Paris');
    // Saved unchanged, the schedule stays in its time zone (it was sent as UTC, moving the run by an hour or two).
    await page.getByRole('button', { name: 'Save props' }).click();
    await waitForText(page.getByRole('status'), 'Saved the props of weekdays');
    let [saved] = (await api.get('/v1/users/me/sources')).body.data;
    expect(saved.configured_props.timer).toMatchObject({ cron: '0 9 * * 1-5', timezone: 'Europe/Paris' });
    await waitForText(page.locator('dl.facts'), 'cron 0 9 * * 1-5 (Europe/Paris)');
    // Another time zone is saved; an empty one is UTC.
    await page.getByLabel('Time zone').fill('America/New_York');
    await page.getByRole('button', { name: 'Save props' }).click();
    await waitForText(page.locator('dl.facts'), 'cron 0 9 * * 1-5 (America/New_York)');
    await page.getByLabel('Time zone').fill('');
    await page.getByRole('button', { name: 'Save props' }).click();
    await waitForText(page.locator('dl.facts'), 'cron 0 9 * * 1-5 (UTC)');
    [saved] = (await api.get('/v1/users/me/sources')).body.data;
    expect(saved.configured_props.timer.timezone).toBeUndefined();
    await finish();
  });

  it('deploys a registry component by its key, and labels every control on every page', async () => {
    const user = await server.createUser();
    const { page, finish } = await openConsole(browser, server.url);
    // Controls no label names: an input, select or textarea without <label for> or aria-label, a button without text.
    const unlabelled = () =>
      evaluate<string[]>(
        page,
        `[...document.querySelectorAll('input, select, textarea, button')]
          .filter((e) => !(e.labels?.length || e.getAttribute('aria-label') || (e.tagName === 'BUTTON' && e.textContent.trim())))
          .map((e) => e.outerHTML)`,
      );
    expect(await unlabelled()).toEqual([]);
    await signIn(page, user.apiKey);
    await page.getByRole('link', { name: 'New source' }).click();
    await page.getByLabel('Registry component').check();
    // A refusal gives the keyboard to the field refused (a disabled button had lost it to the document, where the
    // next Tab started again from the top of the page).
    await page.getByLabel('Registry key').fill('no-such-component');
    await page.getByRole('button', { name: 'Load props' }).click();
    await waitForText(page.getByRole('alert'), 'registry component "no-such-component" not found (404 not_found)');
    await waitForFocus(page, '#registry-key[aria-invalid="true"]');
    await page.getByLabel('Registry key').fill('http-new-requests');
    await page.getByRole('button', { name: 'Load props' }).click();
    await page.getByRole('heading', { name: /Configure New Requests/ }).waitFor();
    expect(await unlabelled()).toEqual([]);
    await page.getByLabel('Source name').fill('x'.repeat(201));
    await page.getByRole('button', { name: 'Deploy' }).click();
    // The server's reason, once (its details repeat it), on the field it names, which gets the focus.
    await waitForText(page.locator('.field-error[role="alert"]'), /name must NOT have more than 200 characters/);
    expect(await page.locator('.field-error[role="alert"]').textContent()).toBe('Source name must NOT have more than 200 characters');
    await waitForFocus(page, '#source-name');
    await page.getByLabel('Source name').fill('from-registry');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await page.getByRole('heading', { name: 'from-registry', level: 1 }).waitFor();
    await page.getByText('Edit props').click();
    await page.getByRole('button', { name: 'Save props' }).waitFor();
    await page.getByText('Run now').click();
    expect(await unlabelled()).toEqual([]);
    const [source] = (await client(server.url, user.apiKey).get('/v1/users/me/sources')).body.data;
    expect(source.configured_props.http.endpoint_url).toMatch(/\/e\/en/);
    // Each page once its data has come (a control drawn from it, or the empty list's text).
    const loaded: Record<string, () => Promise<void>> = {
      Sources: () => page.getByRole('rowheader', { name: 'from-registry' }).waitFor(),
      Workflows: () => page.getByText('No workflows yet').waitFor(),
      Webhooks: () => page.getByText('No webhooks yet').waitFor(),
      Subscriptions: () => page.getByText('No subscriptions yet').waitFor(),
      'Connected accounts': () => page.getByText('No connected accounts yet').waitFor(),
      Account: () => page.getByRole('button', { name: 'Rotate API key' }).waitFor(),
    };
    for (const [section, ready] of Object.entries(loaded)) {
      // Exact: "Account" is also in "Connected accounts".
      await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: section, exact: true }).click();
      await ready();
      expect(await unlabelled(), section).toEqual([]);
    }
    await finish();
  });

  it('returns to sign-in with a message when the key stops working', async () => {
    const user = await server.createUser();
    const { page } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('heading', { name: 'Sources' }).waitFor();
    expect((await client(server.url, user.apiKey).post('/v1/users/me/api_key')).status).toBe(200);
    await page.getByRole('link', { name: 'Workflows' }).click();
    await waitForText(page.getByRole('alert'), 'Signed out: invalid API key');
    await page.getByLabel('API key').waitFor();
    expect(await evaluate(page, 'sessionStorage.length')).toBe(0);
    await page.context().close();
  });

  it("shows the current section in the phone's sideways strip of sections, also the last one, Account", async () => {
    const user = await server.createUser();
    const { page, finish } = await openConsole(browser, `${server.url}/#/account`, { width: 375 });
    await signIn(page, user.apiKey);
    await page.getByRole('heading', { name: 'Account', level: 1 }).waitFor();
    const strip = page.getByRole('navigation', { name: 'Sections' }).getByRole('list');
    // Is the link that says where the page is inside the strip's visible part?
    const inView = async (name: string) => {
      const box = (await strip.boundingBox())!;
      const link = (await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name, exact: true }).boundingBox())!;
      return link.x >= box.x && link.x + link.width <= box.x + box.width;
    };
    // Account lay past the strip's right edge: the page did not show which section it was.
    expect(await page.getByRole('link', { name: 'Account', exact: true }).getAttribute('aria-current')).toBe('page');
    await waitFor(
      () => inView('Account'),
      (shown) => shown,
      { what: 'Account in the strip' },
    );
    await page.goto(`${server.url}/#/sources`);
    await page.getByRole('heading', { name: 'Sources', level: 1 }).waitFor();
    await waitFor(
      () => inView('Sources'),
      (shown) => shown,
      { what: 'Sources in the strip, scrolled back' },
    );
    await finish();
  });

  it('keeps each id field of Delete events on the line of its label on a phone', async () => {
    const user = await server.createUser();
    const source = await deploy(user.apiKey, { component_code: HTTP_SOURCE, name: 'ranges' });
    const { page, finish } = await openConsole(browser, `${server.url}/#/sources/${source.id}`, { width: 375 });
    await signIn(page, user.apiKey);
    for (const label of ['From id', 'To id']) {
      const field = (await page.getByLabel(label).boundingBox())!;
      const name = (await page.locator('label', { hasText: label }).boundingBox())!;
      // "To id" ended the first line and its field began the next.
      const middle = name.y + name.height / 2;
      expect(middle, label).toBeGreaterThan(field.y);
      expect(middle, label).toBeLessThan(field.y + field.height);
    }
    await finish();
  });

  it('fits a phone-width screen (375 px) without sideways scrolling of the page', async () => {
    const user = await server.createUser();
    const source = await deploy(user.apiKey, { component_code: HTTP_SOURCE, name: 'a-source-with-a-rather-long-name-for-a-phone' });
    await request('POST', source.configured_props.http.endpoint_url, { body: { text: 'x'.repeat(500) } });
    const { page, finish } = await openConsole(browser, server.url, { width: 375 });
    const overflow = () => evaluate<number>(page, 'document.documentElement.scrollWidth - document.documentElement.clientWidth');
    expect(await overflow()).toBe(0);
    await signIn(page, user.apiKey);
    await page.getByRole('img', { name: /events? in the last 30 minutes/ }).waitFor();
    expect(await overflow()).toBe(0);
    await page.getByRole('link', { name: source.name }).click();
    await page.getByRole('region', { name: 'Events of this source' }).getByRole('row').filter({ hasText: 'xxxx' }).waitFor();
    expect(await overflow()).toBe(0);
    await screenshot(page, 'phone-source');
    for (const section of ['Workflows', 'Webhooks', 'Subscriptions', 'Connected accounts', 'Account']) {
      await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: section, exact: true }).click();
      await page.getByRole('heading', { name: section, level: 1 }).waitFor();
      expect(await overflow(), section).toBe(0);
    }
    await finish();
  });
});
