// The console in Chromium: a field's error, from the form's own check or from the server, goes as soon as the field is
// edited, with the line above the button that pointed at it; the errors of other fields stay.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { BROWSER_SUITE, holdUntilReleased, newAccount, openConsole, openSignedIn, waitForFocus, waitForText, withServerAndBrowser } from './browser.js';

const SOURCE = `
export default {
  name: "Checked",
  version: "1.0.0",
  props: {
    timer: { type: "$.interface.timer", default: { intervalSeconds: 60 } },
    count: { type: "integer", label: "Count", min: 1, max: 10 },
    size: { type: "integer", label: "Size", min: 1, max: 10 },
  },
  async run() { this.$emit({ tick: true }); },
};
`;

const APP_SOURCE = `export default {
  name: "Acme reader", version: "1.0.0",
  props: { acme: { type: "app", app: "acme", label: "Acme account" } },
  async run() {},
};`;

/** An app prop, and a prop whose value the list of props depends on: choosing it asks the server for the list again. */
const RELOADING_SOURCE = `export default {
  name: "Reloading", version: "1.0.0",
  props: {
    acme: { type: "app", app: "acme", label: "Acme account" },
    mode: { type: "string", label: "Mode", options: ["plain", "extra"], reloadProps: true, optional: true },
  },
  async run() {},
};`;

describe.each(DIALECTS)('web console: field errors (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  it("drops a prop's error, the form's check or the server's 422, when that field is edited", async () => {
    const { user, api } = await newAccount(server);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('link', { name: 'New source' }).click();
    await page.getByLabel('Component code').fill(SOURCE);
    await page.getByRole('button', { name: 'Load props' }).click();
    await page.getByRole('heading', { name: /Configure Checked/ }).waitFor();
    const summary = page.locator('form[aria-labelledby="configure-title"] > p.field-error');

    // Two fields refused by the form's own check: editing one drops its error only.
    await page.getByLabel('Count').fill('11');
    await page.getByLabel('Size').fill('12');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await waitForText(page.locator('#prop-count-error'), 'Count must be at most 10');
    await waitForText(page.locator('#prop-size-error'), 'Size must be at most 10');
    await page.getByLabel('Count').fill('5');
    await page.locator('#prop-count-error:empty').waitFor({ state: 'attached' });
    expect(await page.getByLabel('Count').getAttribute('aria-invalid')).toBeNull();
    expect(await page.locator('#prop-size-error').textContent()).toBe('Size must be at most 10');
    expect(await summary.textContent()).toBe('Some values need fixing: see the marked fields.');
    // The last marked field fixed, the line that pointed at the marked fields goes too.
    await page.getByLabel('Size').fill('5');
    await page.locator('#prop-size-error:empty').waitFor({ state: 'attached' });
    expect(await summary.textContent()).toBe('');

    // The server's 422 on the timer goes when the cron expression is edited.
    await page.getByLabel('Schedule').selectOption('cron');
    await page.getByLabel('Cron expression').fill('61 * * * *');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await waitForText(page.locator('#prop-timer-error'), /^timer /);
    expect(await summary.textContent()).not.toBe('');
    await page.getByLabel('Cron expression').fill('5 * * * *');
    await page.locator('#prop-timer-error:empty').waitFor({ state: 'attached' });
    expect(await page.locator('#prop-timer').getAttribute('aria-invalid')).toBeNull();
    expect(await summary.textContent()).toBe('');
    expect((await api.get('/v1/users/me/sources')).body.data).toEqual([]);
    await page.getByRole('button', { name: 'Deploy' }).click();
    await page.getByRole('heading', { name: 'Checked', level: 1 }).waitFor();
    await finish();
  });

  it('refuses on its field a whole number too large to be sent as typed, rather than the server saying it is no integer', async () => {
    const { user } = await newAccount(server);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('link', { name: 'New source' }).click();
    await page.getByLabel('Component code').fill(`export default {
      name: "Big", version: "1.0.0",
      props: { count: { type: "integer", label: "Count" }, ids: { type: "integer[]", label: "Ids" } },
      async run() {},
    };`);
    await page.getByRole('button', { name: 'Load props' }).click();
    await page.getByRole('heading', { name: /Configure Big/ }).waitFor();
    const posts: string[] = [];
    page.on('request', (sent) => sent.method() === 'POST' && sent.url().endsWith('/v1/sources') && posts.push(sent.url()));
    // Before: sent as 100000000000000000000, which the server's 422 said "must be an integer, got 100000000000000000000".
    await page.getByLabel('Count').fill('99999999999999999999');
    await page.getByLabel('Ids').fill('1\n-99999999999999999999');
    await page.getByRole('button', { name: 'Deploy' }).click();
    const range = `must be a whole number from -9007199254740991 to 9007199254740991`;
    await waitForText(page.locator('#prop-count-error'), `Count ${range}`);
    await waitForText(page.locator('#prop-ids-error'), range);
    await waitForFocus(page, '#prop-count');
    expect(posts).toEqual([]);
    await page.getByLabel('Count').fill('9007199254740991');
    await page.getByLabel('Ids').fill('1');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await page.getByRole('heading', { name: 'Big' }).waitFor();
    expect(posts).toHaveLength(1);
    await finish();
  });

  it('marks and focuses an app prop naming a connected account the server does not find (404), as one of another app (422)', async () => {
    const { user, api } = await newAccount(server);
    const acme = (await api.post('/v1/accounts', { app: 'acme', name: 'acme one', credentials: { api_key: 'k' } })).body.data;
    const other = (await api.post('/v1/accounts', { app: 'other', name: 'other one', credentials: { api_key: 'k' } })).body.data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/sources/new`, user.apiKey);
    await page.getByLabel('Component code').fill(APP_SOURCE);
    await page.getByRole('button', { name: 'Load props' }).click();
    await page.getByRole('heading', { name: /Configure Acme reader/ }).waitFor();
    const summary = page.locator('form[aria-labelledby="configure-title"] > p.field-error');
    const field = page.getByLabel('Acme account');

    // The 404 was said above the button only, the field neither marked nor focused.
    await field.fill('apn_nope');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await waitForText(page.locator('#prop-acme-error'), 'Acme account: connected account "apn_nope" not found');
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    await waitForFocus(page, '#prop-acme');
    expect(await summary.textContent()).toBe('The server refused some values: see the marked fields.');
    // As the 422 of another app's account is.
    await field.fill(other.id);
    await page.locator('#prop-acme-error:empty').waitFor({ state: 'attached' });
    await page.getByRole('button', { name: 'Deploy' }).click();
    await waitForText(page.locator('#prop-acme-error'), `Acme account names connected account ${other.id} of app "other"`);
    await waitForFocus(page, '#prop-acme');
    expect((await api.get('/v1/users/me/sources')).body.data).toEqual([]);

    // Edit props too.
    await field.fill(acme.id);
    await page.getByLabel('Source name').fill('reader');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await page.getByRole('heading', { name: 'reader', level: 1 }).waitFor();
    await page.getByText('Edit props').click();
    await page.getByLabel('Acme account').fill('apn_gone');
    await page.getByRole('button', { name: 'Save props' }).click();
    await waitForText(page.locator('#edit-acme-error'), 'Acme account: connected account "apn_gone" not found');
    await waitForFocus(page, '#edit-acme');
    const [source] = (await api.get('/v1/users/me/sources')).body.data;
    expect(source.configured_props.acme).toEqual({ authProvisionId: acme.id });
    await finish();
  });

  it('shows the values a props reload says a deploy would refuse on their fields, not as props that could not be listed', async () => {
    const { user, api } = await newAccount(server);
    const acme = (await api.post('/v1/accounts', { app: 'acme', name: 'acme one', credentials: { api_key: 'k' } })).body.data;
    const other = (await api.post('/v1/accounts', { app: 'other', name: 'other one', credentials: { api_key: 'k' } })).body.data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/sources/new`, user.apiKey);
    await page.getByLabel('Component code').fill(RELOADING_SOURCE);
    await page.getByRole('button', { name: 'Load props' }).click();
    await page.getByRole('heading', { name: /Configure Reloading/ }).waitFor();
    const status = page.locator('form[aria-labelledby="configure-title"] > p[aria-live="polite"]');
    const field = page.getByLabel('Acme account');

    // Another app's account, then a Mode chosen: the list is asked for again with both, and its answer's
    // "invalid configured_props: …" was said as "The props this component adds could not be listed: …".
    await field.fill(other.id);
    await page.getByLabel('Mode').selectOption('extra');
    await waitForText(
      page.locator('#prop-acme-error'),
      `Acme account names connected account ${other.id} of app "other"; the prop needs an account of app "acme"`,
    );
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    expect(await status.textContent()).toBe('A deploy would refuse the values marked.');
    // Edited, it is another value: the mark goes, and the line with it.
    await field.fill(acme.id);
    await page.locator('#prop-acme-error:empty').waitFor({ state: 'attached' });
    expect(await field.getAttribute('aria-invalid')).toBeNull();
    expect(await status.textContent()).toBe('');
    await page.getByLabel('Source name').fill('reloading');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await page.getByRole('heading', { name: 'reloading', level: 1 }).waitFor();

    // The account deleted since (its sources deactivated): Edit props says so on the field, from its first list.
    expect((await api.delete(`/v1/accounts/${acme.id}?force=true`)).status).toBe(204);
    await page.reload();
    await page.getByText('Edit props').click();
    await waitForText(page.locator('#edit-acme-error'), `Acme account: connected account "${acme.id}" not found`);
    expect(await page.locator('details p[aria-live="polite"]').textContent()).toBe('A deploy would refuse the values marked.');
    await finish();
  });

  it("drops a webhook URL's, an event's and an API key's error when that field is edited", async () => {
    const { user, api } = await newAccount(server);
    const workflow = (
      await api.post('/v1/workflows', { name: 'w', steps: [{ name: 'one', component_code: 'export default defineComponent({ async run() {} });' }] })
    ).body.data;
    const { page, finish } = await openConsole(browser, server.url);
    await page.getByLabel('API key').fill('trb_wrong');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await waitForText(page.locator('#api-key-error'), 'That key was not accepted');
    await page.getByLabel('API key').fill(user.apiKey);
    await page.locator('#api-key-error:empty').waitFor({ state: 'attached' });
    expect(await page.getByLabel('API key').getAttribute('aria-invalid')).toBeNull();
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();

    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('URL').fill('ftp://example.com/hook');
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await waitForText(page.locator('#webhook-url-error'), 'must start with http:// or https://');
    await page.getByLabel('URL').fill('https://example.com/hook');
    await page.locator('#webhook-url-error:empty').waitFor({ state: 'attached' });
    expect(await page.getByLabel('URL').getAttribute('aria-invalid')).toBeNull();

    await page.goto(`${server.url}/#/workflows/${workflow.id}`);
    await page.getByText('Run now').click();
    await page.getByLabel('Event (JSON)').fill('{');
    await page.getByRole('button', { name: 'Run with this event' }).click();
    await waitForText(page.locator('#workflow-run-event-error'), 'The event must be valid JSON.');
    await page.getByLabel('Event (JSON)').fill('{}');
    await page.locator('#workflow-run-event-error:empty').waitFor({ state: 'attached' });
    expect(await page.getByLabel('Event (JSON)').getAttribute('aria-invalid')).toBeNull();
    await finish();
  });

  it("shows a webhook's 400 on the field it names, not on the URL, and drops it when that field is edited", async () => {
    const { user, api } = await newAccount(server);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('URL').fill('https://example.com/hook');
    await page.getByLabel('Name').fill('n'.repeat(201));
    await page.getByRole('button', { name: 'Create webhook' }).click();
    // It was shown under the URL, which was marked invalid, while the name was at fault.
    await waitForText(page.locator('#webhook-name-error'), 'name must NOT have more than 200 characters');
    // It said "invalid querystring: name must …", the API's words.
    expect(await page.locator('#webhook-name-error').innerText()).toBe('Name must NOT have more than 200 characters');
    expect(await page.locator('#webhook-url-error').textContent()).toBe('');
    expect(await page.getByLabel('URL').getAttribute('aria-invalid')).toBeNull();
    expect(await page.getByLabel('Name').getAttribute('aria-invalid')).toBe('true');
    await waitForFocus(page, '#webhook-name');
    await page.getByLabel('Name').fill('short');
    await page.locator('#webhook-name-error:empty').waitFor({ state: 'attached' });
    await page.getByLabel('Description').fill('d'.repeat(2001));
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await waitForText(page.locator('#webhook-description-error'), 'description must NOT have more than 2000 characters');
    expect(await page.locator('#webhook-description-error').innerText()).toBe('Description must NOT have more than 2000 characters');
    await waitForFocus(page, '#webhook-description');
    expect((await api.get('/v1/users/me/webhooks')).body.data).toEqual([]);
    await page.getByLabel('Description').fill('');
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await waitForText(page.locator('#webhook-secret'), /^whsec_/);
    expect((await api.get('/v1/users/me/webhooks')).body.data.map((h: any) => h.name)).toEqual(['short']);
    await finish();
  });

  it("shows the server's 400 on a source's name on the Source name field, keeps what was typed, and drops it when the name is edited", async () => {
    const { user, api } = await newAccount(server);
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/sources/new`, user.apiKey);
    await page.getByLabel('Component code').fill(SOURCE);
    await page.getByRole('button', { name: 'Load props' }).click();
    await page.getByRole('heading', { name: /Configure Checked/ }).waitFor();
    const name = page.getByLabel('Source name');
    await name.fill('n'.repeat(201));
    await page.getByLabel('Count').fill('3');
    await page.getByLabel('Size').fill('4');
    await page.getByRole('button', { name: 'Deploy' }).click();
    // It was said above Deploy only, the name not marked and the focus left on the button.
    await waitForText(page.locator('#source-name-error'), 'Source name must NOT have more than 200 characters');
    expect(await name.getAttribute('aria-invalid')).toBe('true');
    await waitForFocus(page, '#source-name');
    expect(await page.locator('form[aria-labelledby="configure-title"] > p.field-error').textContent()).toBe('');
    expect(await page.getByLabel('Count').inputValue()).toBe('3');
    await name.fill('short name');
    await page.locator('#source-name-error:empty').waitFor({ state: 'attached' });
    expect(await name.getAttribute('aria-invalid')).toBeNull();
    await page.getByRole('button', { name: 'Deploy' }).click();
    await page.getByRole('heading', { name: 'short name' }).waitFor();
    expect((await api.get('/v1/users/me/sources')).body.data.map((s: any) => s.name)).toEqual(['short name']);
    await finish();
  });

  it('says Deploying… on Deploy alone while a source is deployed, not Loading props… on Load props', async () => {
    const user = await server.createUser();
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/sources/new`, user.apiKey);
    await page.getByLabel('Component code').fill(SOURCE);
    await page.getByRole('button', { name: 'Load props' }).click();
    await page.getByRole('heading', { name: /Configure Checked/ }).waitFor();
    await page.getByLabel('Count').fill('3');
    await page.getByLabel('Size').fill('4');
    // The deploy is held on its way to the server, so that the page shows what it shows while one runs.
    const { release } = await holdUntilReleased(page, '**/v1/sources');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await page.getByRole('button', { name: 'Deploying…' }).waitFor();
    // Load props said "Loading props…" though no props were being loaded.
    expect(await page.locator('form.panel').first().getByRole('button').textContent()).toBe('Load props');
    release();
    await page.getByRole('heading', { name: 'Checked' }).waitFor();
    await finish();
  });

  it('checks the ids of a range of events to delete before asking to confirm, on their fields', async () => {
    const { user, api } = await newAccount(server);
    const source = (
      await api.post('/v1/sources', {
        name: 'ranged',
        component_code: `module.exports = { name: "Hook", version: "0.1.0", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body); } };`,
      })
    ).body.data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/sources/${source.id}`, user.apiKey);
    const from = page.getByLabel('From id');
    const to = page.getByLabel('To id');
    await from.fill('yesterday');
    await page.getByRole('button', { name: 'Delete range' }).click();
    // The dialog asked to confirm deleting "events from yesterday"; the server refused it only after.
    await waitForText(page.locator(`#range-start-${source.id}-error`), 'From id must be an event id');
    await waitForFocus(page, `#range-start-${source.id}`);
    expect(await page.getByRole('dialog').count()).toBe(0);
    await from.fill('1700000000002-0');
    await page.locator(`#range-start-${source.id}-error`).waitFor({ state: 'detached' });
    await to.fill('1700000000001-0');
    await page.getByRole('button', { name: 'Delete range' }).click();
    await waitForText(page.locator(`#range-end-${source.id}-error`), 'To id is older than From id');
    expect(await to.getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByRole('dialog').count()).toBe(0);
    await to.fill('1700000000003-0');
    await page.getByRole('button', { name: 'Delete range' }).click();
    await waitForText(page.getByRole('dialog'), 'Events from 1700000000002-0 to 1700000000003-0 will be deleted.');
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await waitForText(page.locator('.notice'), 'Deleted the events.');
    await finish();
  });

  it("shows a subscription's missing or unknown emitter and listener on their fields, and drops each when it is edited", async () => {
    const { user, api } = await newAccount(server);
    const hook = (await api.post(`/v1/webhooks?url=${encodeURIComponent('https://example.com/hook')}&name=sink`)).body.data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/subscriptions`, user.apiKey);
    await page.getByRole('button', { name: 'Subscribe' }).click();
    // It said "Both an emitter and a listener are needed." above the button, marking neither, and kept saying it.
    await waitForText(page.locator('#sub-emitter-error'), 'An emitter is needed');
    await waitForText(page.locator('#sub-listener-error'), 'A listener is needed');
    await waitForFocus(page, '#sub-emitter');
    await page.getByLabel('Emitter').fill('dc_nothing');
    await page.locator('#sub-emitter-error:empty').waitFor({ state: 'attached' });
    expect(await page.locator('#sub-listener-error').textContent()).toBe('A listener is needed: a webhook, source or workflow id.');
    await page.getByLabel('Listener').fill(hook.id);
    await page.getByRole('button', { name: 'Subscribe' }).click();
    // The server's 404 names the emitter: it is shown there, and the field gets the focus.
    await waitForText(page.locator('#sub-emitter-error'), 'emitter "dc_nothing" not found');
    expect(await page.getByLabel('Emitter').getAttribute('aria-invalid')).toBe('true');
    await waitForFocus(page, '#sub-emitter');
    await page.getByLabel('Emitter').fill('dc_*');
    await page.locator('#sub-emitter-error:empty').waitFor({ state: 'attached' });
    await page.getByRole('button', { name: 'Subscribe' }).click();
    await page.getByRole('row').filter({ hasText: hook.id }).waitFor();
    expect((await api.get('/v1/users/me/subscriptions')).body.data).toHaveLength(1);
    await finish();
  });

  it("shows a subscription's 400 on its stream on the Stream field, and drops it when the stream is edited", async () => {
    const { user, api } = await newAccount(server);
    const hook = (await api.post(`/v1/webhooks?url=${encodeURIComponent('https://example.com/hook')}&name=sink`)).body.data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/subscriptions`, user.apiKey);
    await page.getByLabel('Emitter').fill('dc_*');
    await page.getByLabel('Listener').fill(hook.id);
    const stream = page.getByLabel('Stream');
    await stream.fill('s'.repeat(201));
    await page.getByRole('button', { name: 'Subscribe' }).click();
    // It was said above Subscribe only, with no field marked and the focus left on the button.
    await waitForText(page.locator('#sub-event-error'), 'must NOT have more than 200 characters');
    // It said "invalid querystring: event_name must …", the API's words for a field labelled Stream.
    expect(await page.locator('#sub-event-error').innerText()).toBe('Stream must NOT have more than 200 characters');
    expect(await stream.getAttribute('aria-invalid')).toBe('true');
    await waitForFocus(page, '#sub-event');
    expect(await page.getByLabel('Emitter').inputValue()).toBe('dc_*');
    await stream.fill('orders');
    await page.locator('#sub-event-error:empty').waitFor({ state: 'attached' });
    expect(await stream.getAttribute('aria-invalid')).toBeNull();
    await page.getByRole('button', { name: 'Subscribe' }).click();
    await page.getByRole('row').filter({ hasText: 'orders' }).waitFor();
    expect((await api.get('/v1/users/me/subscriptions')).body.data.map((s: any) => s.event_name)).toEqual(['orders']);
    await finish();
  });

  it('marks the pasted code or registry key the server refused, and drops the reason when that field is edited', async () => {
    const user = await server.createUser();
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/sources/new`, user.apiKey);
    const code = page.getByLabel('Component code');
    await code.fill('module.exports = { this is not javascript');
    await page.getByRole('button', { name: 'Load props' }).click();
    await waitForText(page.locator('#component-error'), '(422 component_invalid)');
    expect(await code.getAttribute('aria-invalid')).toBe('true');
    await code.fill(SOURCE);
    // The syntax error stayed under the corrected code.
    await page.locator('#component-error:empty').waitFor({ state: 'attached' });
    expect(await code.getAttribute('aria-invalid')).toBeNull();

    await page.getByLabel('Registry component').check();
    const key = page.getByLabel('Registry key');
    await key.fill('no-such-component');
    await page.getByRole('button', { name: 'Load props' }).click();
    await waitForText(page.locator('#component-error'), 'not found (404 not_found)');
    expect(await key.getAttribute('aria-invalid')).toBe('true');
    await key.fill('http-new-requests');
    await page.locator('#component-error:empty').waitFor({ state: 'attached' });
    await page.getByRole('button', { name: 'Load props' }).click();
    await page.getByRole('heading', { name: /^Configure / }).waitFor();
    await finish();
  });
  it('shows the console lines of a hook that refused the deploy beside its error, as nothing else keeps them', async () => {
    const { user, api } = await newAccount(server);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('link', { name: 'New source' }).click();
    await page.getByLabel('Component code').fill(`export default { name: "Hook fails", version: "1.0.0",
      hooks: { async activate() { console.log("registering"); console.warn("no token"); throw new Error("cannot register"); } },
      async run() {} };`);
    await page.getByRole('button', { name: 'Load props' }).click();
    await page.getByRole('heading', { name: /Configure Hook fails/ }).waitFor();
    await page.getByRole('button', { name: 'Deploy' }).click();
    const summary = page.locator('form[aria-labelledby="configure-title"] > p.field-error');
    await waitForText(summary, /hook failed/);
    // Worded as every refusal: the message, its status and code, then the lines the hook logged.
    expect(await summary.textContent()).toBe('activate() hook failed: Error: cannot register (422 hook_failed) — activate() logged: registering · no token');
    expect((await api.get('/v1/users/me/sources')).body.data).toEqual([]);
    await finish();
  });
});
