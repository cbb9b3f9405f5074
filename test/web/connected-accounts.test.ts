// The console in Chromium: the Connected accounts section, connecting an account (the form's checks and the server's 400s
// on their fields, no credential value left in the page once saved), one account's page (rename, replace credentials,
// delete, also while a source uses it), an unhealthy account, a Load more past the first 50, and one that is not there.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { account } from '../helpers/account.js';
import { APP_SOURCE, OAUTH_SOURCE, secret, startTokenEndpoint } from '../helpers/connected-accounts.js';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { BROWSER_SUITE, evaluate, openSignedIn, screenshot, waitForFocus, waitForText, withServerAndBrowser } from './browser.js';

describe.each(DIALECTS)('web console: connected accounts (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  // The OAuth test's token endpoint is on 127.0.0.1.
  withServerAndBrowser(
    dialect,
    (started, launched) => {
      server = started;
      browser = launched;
    },
    { allowPrivateNetwork: true },
  );

  it('connects an account: checks the form, shows the server’s 400s on their fields, and keeps no value in the page once saved', async () => {
    const user = await account(server);
    const key = secret('console-key');
    const { page, finish } = await openSignedIn(browser, server.url, user.key);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Connected accounts' }).click();
    await page.getByRole('heading', { name: 'Connected accounts', level: 1 }).waitFor();
    await waitForText(page.locator('main p'), "No connected accounts yet. Connect one below with the app's name and its credentials.");
    expect(await page.locator('main table').count()).toBe(0);

    // Nothing filled in: each field says what it needs, and the keyboard goes to the first.
    const connect = page.getByRole('button', { name: 'Connect account' });
    await connect.click();
    await waitForText(page.locator('#account-app-error'), 'The app is its name slug, as app props declare it');
    expect(await page.locator('#account-name-error').textContent()).toBe('Name the account, to tell it apart from the same app’s others.');
    expect(await page.locator('#new-account-credentials-error').textContent()).toBe('Add at least one field: its name and its value.');
    expect(await page.getByLabel('Field 1 name').getAttribute('aria-invalid')).toBe('true');
    await waitForFocus(page, '#account-app');

    // A value is typed hidden; a name of 201 characters is the server's 400, on Name.
    await page.getByLabel('App').fill('acme');
    expect(await page.locator('#account-app-error').textContent()).toBe('');
    await page.getByLabel('Name', { exact: true }).fill('n'.repeat(201));
    await page.getByLabel('Field 1 name').fill('api_key');
    await page.getByLabel('Field 1 value').fill(key);
    expect(await page.getByLabel('Field 1 value').getAttribute('type')).toBe('password');
    expect(await page.locator('#new-account-credentials-error').textContent()).toBe('');
    await connect.click();
    await waitForText(page.locator('#account-name-error'), 'name must NOT have more than 200 characters');
    expect(await page.getByLabel('App').getAttribute('aria-invalid')).toBeNull();
    await waitForFocus(page, '#account-name');

    // A second field, without a value, then with one the server refuses: its reason on that field's value.
    await page.getByLabel('Name', { exact: true }).fill('Acme prod');
    expect(await page.locator('#account-name-error').textContent()).toBe('');
    await page.getByRole('button', { name: 'Add field' }).click();
    // The keyboard is on the new row's name.
    await waitForFocus(page, `#${await page.getByLabel('Field 2 name').getAttribute('id')}`);
    await page.getByLabel('Field 2 name').fill('expires_at');
    await connect.click();
    await waitForText(page.getByRole('alert').filter({ hasText: 'Type the value of expires_at.' }), 'Type the value of expires_at.');
    await page.getByLabel('Field 2 value').fill('soon');
    await connect.click();
    await waitForText(
      page.getByRole('alert').filter({ hasText: 'credentials.expires_at' }),
      'credentials.expires_at must be epoch seconds or an ISO 8601 date',
    );
    expect(await page.getByLabel('Field 2 value').getAttribute('aria-invalid')).toBe('true');
    expect((await user.api.get('/v1/users/me/accounts')).body.data).toEqual([]);

    // Field 2 removed, it connects: the notice names it, the table lists it, and every input is empty again.
    await page.getByRole('button', { name: 'Remove field 2 (expires_at)' }).click();
    await waitForFocus(page, 'button', /^Add field$/);
    expect(await page.getByLabel('Field 2 name').count()).toBe(0);
    await connect.click();
    const listed = await waitFor(
      () => user.api.get('/v1/users/me/accounts'),
      (res) => res.body.data.length === 1,
      { what: 'the account to be connected' },
    );
    const created = listed.body.data[0];
    expect(created).toMatchObject({ app: 'acme', name: 'Acme prod', fields: ['api_key'], healthy: true });
    await waitForText(page.getByRole('status'), `Connected Acme prod (acme, ${created.id}).`);
    const row = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'Acme prod' }) });
    await row.waitFor();
    const time = (seconds: number) =>
      evaluate<string>(page, `new Date(${seconds * 1000}).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'long' })`);
    expect(await row.getByRole('cell').allTextContents()).toEqual([
      'acme',
      'api_key',
      'Healthy',
      await time(created.created_at),
      await time(created.updated_at),
    ]);
    for (const label of ['App', 'Field 1 name', 'Field 1 value']) expect(await page.getByLabel(label).inputValue()).toBe('');
    expect(await page.getByLabel('Name', { exact: true }).inputValue()).toBe('');
    expect(await page.content()).not.toContain(key);
    expect(await evaluate<string>(page, "[...document.querySelectorAll('input')].map((input) => input.value).join(' ')")).not.toContain(key);
    await screenshot(page, 'connected-accounts');

    // What was typed is what a run gets.
    const source = await user.api.post('/v1/sources', { component_code: APP_SOURCE, configured_props: { acme: { authProvisionId: created.id } } });
    expect(source.status, source.text).toBe(200);
    await user.runAndWait(source.body.data.id, {});
    expect((await user.eventsOf(source.body.data.id, 1))[0].event.run).toBe(key);
    await finish();
  });

  it('renames an account, replaces its credentials (every value typed again) and deletes it, also while a source uses it', async () => {
    const user = await account(server);
    const first = secret('first-key');
    const second = secret('second-key');
    const made = await user.api.post('/v1/accounts', { app: 'acme', name: 'Acme', credentials: { api_key: first, site: 'acme.example' } });
    expect(made.status, made.text).toBe(200);
    const id = made.body.data.id;
    const deployed = await user.api.post('/v1/sources', { component_code: APP_SOURCE, name: 'Reader', configured_props: { acme: { authProvisionId: id } } });
    expect(deployed.status, deployed.text).toBe(200);
    const sourceId = deployed.body.data.id;

    const { page, finish } = await openSignedIn(browser, `${server.url}/#/connected-accounts`, user.key);
    await page.getByRole('link', { name: 'Acme', exact: true }).click();
    await page.getByRole('heading', { name: 'Acme', level: 1 }).waitFor();
    expect(await evaluate(page, 'location.hash')).toBe(`#/connected-accounts/${id}`);
    const facts = await page.locator('.facts').textContent();
    expect(facts).toContain(`Id${id}AppacmeFieldsapi_key, siteHealthHealthy`);

    // Rename: an empty name is refused before sending; a new one is saved and shown.
    const name = page.locator('#rename-name');
    await name.fill(' ');
    await page.getByRole('button', { name: 'Rename' }).click();
    await waitForText(page.locator('#rename-name-error'), 'Name the account');
    await waitForFocus(page, '#rename-name');
    await name.fill('Acme staging');
    await page.getByRole('button', { name: 'Rename' }).click();
    await waitForText(page.getByRole('status'), 'Renamed to Acme staging.');
    await page.getByRole('heading', { name: 'Acme staging', level: 1 }).waitFor();
    expect((await user.api.get(`/v1/accounts/${id}`)).body.data.name).toBe('Acme staging');

    // Replace: the rows hold the saved fields' names, never their values, which are asked for again.
    const replace = page.getByRole('form', { name: 'Replace credentials' });
    expect(await replace.getByLabel('Field 1 name').inputValue()).toBe('api_key');
    expect(await replace.getByLabel('Field 2 name').inputValue()).toBe('site');
    expect(await replace.getByLabel('Field 1 value').inputValue()).toBe('');
    expect(await page.content()).not.toContain(first);
    await replace.getByRole('button', { name: 'Replace credentials' }).click();
    await waitForText(replace.getByRole('alert').first(), 'Type the value of api_key.');
    await waitForText(replace.locator('.field-error'), 'Type the value of site.');
    await replace.getByLabel('Field 1 value').fill(second);
    // A value the server refuses: the field its 400's details name is marked, with the reason, and nothing is replaced.
    await replace.getByLabel('Field 2 name').fill('oauth_token_url');
    await replace.getByLabel('Field 2 value').fill('ftp://files.example');
    await replace.getByRole('button', { name: 'Replace credentials' }).click();
    await waitForText(
      replace.getByRole('alert').filter({ hasText: 'credentials.oauth_token_url' }),
      'credentials.oauth_token_url must be an http or https URL',
    );
    expect(await replace.getByLabel('Field 2 value').getAttribute('aria-invalid')).toBe('true');
    expect((await user.api.get(`/v1/accounts/${id}`)).body.data.fields).toEqual(['api_key', 'site']);
    await replace.getByRole('button', { name: 'Remove field 2 (oauth_token_url)' }).click();
    await replace.getByRole('button', { name: 'Replace credentials' }).click();
    await waitForText(page.getByRole('status'), 'Replaced the credentials of Acme staging: api_key.');
    await waitForText(page.locator('.facts'), 'Fieldsapi_keyHealth');
    expect((await user.api.get(`/v1/accounts/${id}`)).body.data.fields).toEqual(['api_key']);
    expect(await replace.getByLabel('Field 1 value').inputValue()).toBe('');
    expect(await page.content()).not.toContain(second);
    await user.runAndWait(sourceId, {});
    expect((await user.eventsOf(sourceId, 1))[0].event.run).toBe(second);

    // Delete asks first; Cancel keeps it. In use, the server's 409 names the source, and the question comes again.
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete connected account Acme staging?' });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(await dialog.count()).toBe(0);
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await dialog.getByRole('button', { name: 'Delete connected account' }).click();
    await waitForText(dialog, `is used by source "Reader" (${sourceId}). Deleting it anyway deactivates them first`);
    expect((await user.api.get(`/v1/accounts/${id}`)).status).toBe(200);
    await dialog.getByRole('button', { name: 'Deactivate them and delete' }).click();
    await waitForText(page.getByRole('status'), 'Deleted connected account Acme staging.');
    await waitForText(page.locator('main p'), 'No connected accounts yet.');
    expect(await evaluate(page, 'location.hash')).toBe('#/connected-accounts');
    expect((await user.api.get(`/v1/accounts/${id}`)).status).toBe(404);
    expect((await user.api.get(`/v1/sources/${sourceId}`)).body.data.active).toBe(false);
    await finish();
  });

  it('says an account whose OAuth token refresh failed is unhealthy, in the list and on its page', async () => {
    const tokens = await startTokenEndpoint();
    try {
      const user = await account(server);
      const now = Math.floor(Date.now() / 1000);
      const credentials = {
        oauth_access_token: secret('access'),
        oauth_refresh_token: secret('revoked'),
        expires_at: now - 60,
        oauth_token_url: `${tokens.url}/fail`,
      };
      const made = await user.api.post('/v1/accounts', { app: 'acme', name: 'Revoked', credentials });
      const source = await user.api.post('/v1/sources', { component_code: OAUTH_SOURCE, configured_props: { acme: { authProvisionId: made.body.data.id } } });
      await user.runAndWait(source.body.data.id, {});
      expect((await user.api.get(`/v1/accounts/${made.body.data.id}`)).body.data.healthy).toBe(false);
      const { page, finish } = await openSignedIn(browser, `${server.url}/#/connected-accounts`, user.key);
      const row = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'Revoked' }) });
      await waitForText(row, 'Unhealthy: a token refresh failed');
      expect(await row.getByRole('cell').nth(1).textContent()).toBe('oauth_access_token, oauth_refresh_token, expires_at, oauth_token_url');
      await page.getByRole('link', { name: 'Revoked' }).click();
      await waitForText(page.locator('.facts'), 'HealthUnhealthy: a token refresh failed');
      await finish();
    } finally {
      await tokens.close();
    }
  });

  it('lists the first 50 accounts and the rest a Load more away', async () => {
    const user = await account(server);
    for (let i = 0; i < 51; i++) {
      const made = await user.api.post('/v1/accounts', { app: 'acme', name: `a${String(i).padStart(2, '0')}`, credentials: { api_key: 'k' } });
      expect(made.status).toBe(200);
    }
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/connected-accounts`, user.key);
    const names = page.locator('main tbody th a');
    await names.nth(49).waitFor();
    expect(await names.count()).toBe(50);
    expect(await names.first().textContent()).toBe('a50');
    await page.getByRole('button', { name: 'Load more' }).click();
    await names.nth(50).waitFor();
    expect(await names.last().textContent()).toBe('a00');
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
    await waitForFocus(page, 'main tbody th a', /^a00$/);
    await finish();
  });

  it('connects one account on a double click of Connect account', async () => {
    const user = await account(server);
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/connected-accounts`, user.key);
    await page.getByLabel('App').fill('acme');
    await page.getByLabel('Name', { exact: true }).fill('Once');
    await page.getByLabel('Field 1 name').fill('api_key');
    await page.getByLabel('Field 1 value').fill(secret('once'));
    await page.getByRole('button', { name: 'Connect account' }).dblclick();
    await page.getByRole('rowheader', { name: 'Once' }).waitFor();
    await waitForText(page.getByRole('status'), 'Connected Once (acme, ');
    expect((await user.api.get('/v1/users/me/accounts')).body.data.map((a: any) => a.name)).toEqual(['Once']);
    await finish();
  });

  it('fits a 390 px screen with a long name, the form and the account page, without sideways scrolling of the page', async () => {
    const user = await account(server);
    const name = `An account ${'with-a-long-name-'.repeat(8)}`;
    const made = await user.api.post('/v1/accounts', {
      app: 'acme',
      name,
      credentials: { oauth_access_token: 'a', oauth_refresh_token: 'r', expires_at: 4_000_000_000 },
    });
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/connected-accounts`, user.key, { width: 390 });
    const overflow = () => evaluate<number>(page, 'document.documentElement.scrollWidth - document.documentElement.clientWidth');
    await page.getByRole('rowheader', { name }).waitFor();
    expect(await overflow()).toBe(0);
    // The section's link, the strip's seventh of eight, is scrolled into the strip's view.
    const strip = (await page.getByRole('navigation', { name: 'Sections' }).locator('ul').boundingBox())!;
    const current = (await page.locator('header nav a[aria-current="page"]').boundingBox())!;
    expect(current.x + current.width).toBeLessThanOrEqual(strip.x + strip.width);
    // Two words, one line: as tall as the others.
    const tall = (section: string) =>
      page.locator('header nav a', { hasText: new RegExp(`^${section}$`) }).evaluate((link) => link.getBoundingClientRect().height);
    expect(await tall('Connected accounts')).toBe(await tall('Sources'));
    await page.getByRole('link', { name }).click();
    await page.getByRole('heading', { name, level: 1 }).waitFor();
    expect(await evaluate(page, 'location.hash')).toBe(`#/connected-accounts/${made.body.data.id}`);
    expect(await page.getByRole('form', { name: 'Replace credentials' }).getByLabel('Field 3 name').inputValue()).toBe('expires_at');
    expect(await overflow()).toBe(0);
    await screenshot(page, 'phone-connected-account');
    await finish();
  });

  it("says an account that is not there (a mistyped address, another account's) is not found, with no forms", async () => {
    const user = await account(server);
    const other = await account(server);
    const theirs = await other.api.post('/v1/accounts', { app: 'acme', name: 'Theirs', credentials: { api_key: 'k' } });
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/connected-accounts/apn_nothere`, user.key);
    await page.getByRole('heading', { name: 'Connected account apn_nothere', level: 1 }).waitFor();
    await waitForText(page.getByRole('alert'), 'connected account "apn_nothere" not found (404 not_found)');
    expect(await page.locator('main button, main form, main table').count()).toBe(0);
    await page.goto(`${server.url}/#/connected-accounts/${theirs.body.data.id}`);
    await waitForText(page.getByRole('alert'), `connected account "${theirs.body.data.id}" not found (404 not_found)`);
    expect(await page.locator('main button, main form, main table').count()).toBe(0);
    await finish();
  });
});
