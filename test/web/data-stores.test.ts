// The console in Chromium: the account's data stores (a Load more past the first 50, what makes one when there are
// none) and a store's keys, each key's value and its delete, a store that is not there, and both pages at a phone's width.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { type client, request } from '../helpers/client.js';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { BROWSER_SUITE, evaluate, newAccount, openSignedIn, screenshot, waitForFocus, waitForText, withServerAndBrowser } from './browser.js';

/** An HTTP source whose run writes each field of the request's body to its store as a key. */
const WRITER = `module.exports = {
  name: "Writer", version: "0.1.0",
  props: { http: "$.interface.http", store: { type: "data_store" } },
  async run(event) {
    for (const [key, value] of Object.entries(event.body)) await this.store.set(key, value);
    this.$emit({ wrote: Object.keys(event.body) });
  },
};`;

/** A source whose deploy hook makes 51 stores, s00 to s50, the first holding 250 keys and each other one. */
const MANY = `const names = Array.from({ length: 51 }, (_, i) => "s" + String(i).padStart(2, "0"));
module.exports = {
  name: "Many", version: "0.1.0",
  props: Object.fromEntries(names.map((name) => [name, { type: "data_store" }])),
  hooks: {
    async deploy() {
      for (let k = 0; k < 250; k++) await this.s00.set("k" + String(k).padStart(3, "0"), k);
      for (const name of names.slice(1)) await this[name].set("only", name);
    },
  },
  async run() {},
};`;

/** Deploys WRITER on `store` and has one run write `body`'s fields; resolves once the store holds `keys` keys. */
async function writeThroughARun(api: ReturnType<typeof client>, store: string, body: Record<string, unknown>, keys: number) {
  const deployed = await api.post('/v1/sources', { component_code: WRITER, name: `writes ${store.slice(0, 20)}`, configured_props: { store } });
  expect(deployed.status, deployed.text).toBe(200);
  const sent = await request('POST', deployed.body.data.configured_props.http.endpoint_url, { body });
  expect(sent.status).toBe(200);
  return (
    await waitFor(
      () => api.get(`/v1/data_stores/${encodeURIComponent(store)}/keys`),
      (res) => res.status === 200 && res.body.data.keys.length === keys,
      { what: `the run's writes to ${store}` },
    )
  ).body.data as { id: string; name: string; keys: string[] };
}

describe.each(DIALECTS)('web console: data stores (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  it('says, with no store yet, that a data_store prop writing to a name makes one, as does a record written by hand', async () => {
    const { user } = await newAccount(server);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Data stores' }).click();
    await page.getByRole('heading', { name: 'Data stores', level: 1 }).waitFor();
    await waitForText(page.locator('main p'), 'No data stores yet. A store is made by the first write to its name');
    expect(await page.locator('main').textContent()).toContain('data_store');
    expect(await page.locator('main p').last().textContent()).toContain(
      `or by a record written to it by hand, with tributary data-stores set orders key '"value"' or PUT /v1/data_stores/orders/records?key=….`,
    );
    expect(await page.locator('main table, main button').count()).toBe(0);
    await finish();
  });

  it('lists the stores a run wrote to and opens one, from the keyboard, on its keys in key order', async () => {
    const { user, api } = await newAccount(server);
    const orders = await writeThroughARun(api, 'orders', { b: 2, a: { n: 1 }, _c: [3] }, 3);
    expect(orders.keys).toEqual(['_c', 'a', 'b']);
    const listed = (await api.get('/v1/data_stores')).body.data[0];
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/data-stores`, user.apiKey);
    const row = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'orders' }) });
    await row.waitFor();
    const updated = await evaluate<string>(page, `new Date(${listed.updated_at * 1000}).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'long' })`);
    expect(await row.getByRole('cell').allTextContents()).toEqual([orders.id, '3', updated]);
    await screenshot(page, 'data-stores');

    // Tab from the section's link reaches the store's link, and Enter opens it.
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Data stores' }).focus();
    const focused = () => evaluate<string>(page, "document.activeElement.closest('main') ? document.activeElement.textContent : ''");
    for (let tabs = 0; tabs < 10 && (await focused()) !== 'orders'; tabs++) await page.keyboard.press('Tab');
    await waitForFocus(page, 'main a', /^orders$/);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'orders', level: 1 }).waitFor();
    expect(await evaluate(page, 'location.hash')).toBe(`#/data-stores/${orders.id}`);
    const keys = page.getByRole('table', { name: 'Keys, in key order' }).getByRole('rowheader');
    await keys.first().waitFor();
    expect(await keys.allTextContents()).toEqual(['_c', 'a', 'b']);
    expect(await page.locator('.facts').textContent()).toBe(`Id${orders.id}Keys3`);
    await waitForText(page.locator('main .hint'), 'Select a key to see its value');

    // A later run's key shows after Refresh; the store opens by its name as well.
    await writeThroughARun(api, 'orders', { d: 4 }, 4);
    await page.getByRole('button', { name: 'Refresh' }).click();
    await waitForText(keys.last(), 'd');
    await page.goto(`${server.url}/#/data-stores/orders`);
    await page.getByRole('heading', { name: 'orders', level: 1 }).waitFor();
    await keys.nth(3).waitFor();
    expect(await keys.allTextContents()).toEqual(['_c', 'a', 'b', 'd']);
    await finish();
  });

  it('lists the first 50 stores and the rest a Load more away, and a store of 250 keys 200 at a time', async () => {
    const { user, api } = await newAccount(server);
    const deployed = await api.post('/v1/sources', {
      component_code: MANY,
      name: 'many',
      configured_props: Object.fromEntries(Array.from({ length: 51 }, (_, i) => `s${String(i).padStart(2, '0')}`).map((name) => [name, name])),
    });
    expect(deployed.status, deployed.text).toBe(200);
    expect((await api.get('/v1/data_stores?limit=1')).body.page_info.total_count).toBe(51);
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/data-stores`, user.apiKey);
    const names = page.locator('main tbody th a');
    await names.nth(49).waitFor();
    expect(await names.count()).toBe(50);
    await page.getByRole('button', { name: 'Load more' }).click();
    await names.nth(50).waitFor();
    expect(await names.count()).toBe(51);
    expect(new Set(await names.allTextContents()).size).toBe(51);
    // The button left with the last page; the keyboard is on the first row it brought.
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
    await waitForFocus(page, 'main tbody th a', new RegExp(`^${await names.nth(50).textContent()}$`));

    await page.getByRole('link', { name: 's00', exact: true }).click();
    const keys = page.locator('table.keys tbody th');
    await keys.nth(199).waitFor();
    expect(await keys.count()).toBe(200);
    expect(await page.locator('.facts').textContent()).toContain('Keys250');
    await page.getByRole('button', { name: 'Load more' }).click();
    await keys.nth(249).waitFor();
    expect(await keys.count()).toBe(250);
    expect(await keys.last().textContent()).toBe('k249');
    await waitForFocus(page, 'table.keys tbody th button', /^k200$/);
    await finish();
  });

  it('opens a key to its value as JSON, and deletes a key after a confirm, saying so', async () => {
    const { user, api } = await newAccount(server);
    const profile = await writeThroughARun(api, 'profile', { 'a/b%': { deep: [1, 'two'] }, '..': 'dots', keep: 1 }, 3);
    expect(profile.keys).toEqual(['..', 'a/b%', 'keep']);
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/data-stores/profile`, user.apiKey);
    const keys = page.getByRole('table', { name: 'Keys, in key order' }).getByRole('rowheader');
    await keys.nth(2).waitFor();
    const row = (key: string) => page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: key, exact: true }) });

    // A key whose characters a path would mangle opens on its value, folded and unfolded by the JSON view.
    const toggle = row('a/b%').getByRole('button', { name: 'a/b%', exact: true });
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    await toggle.click();
    const value = page.getByRole('figure', { name: 'Value of a/b%' });
    await waitForText(value, '"two"');
    expect((await value.textContent())?.replace(/\s+/g, '')).toBe('{1key"deep":[2items1"two"]}');
    expect(await toggle.getAttribute('aria-expanded')).toBe('true');
    await waitForText(page.locator('tr.row-detail'), 'No expiry.');
    await screenshot(page, 'data-store-value');
    await toggle.click();
    expect(await page.locator('tr.row-detail').count()).toBe(0);

    // Delete asks first; Cancel keeps the key.
    await row('..').getByRole('button', { name: 'Delete' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete this key?' });
    await waitForText(dialog, 'are removed from data store profile');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(await keys.allTextContents()).toEqual(['..', 'a/b%', 'keep']);
    await row('..').getByRole('button', { name: 'Delete' }).click();
    await dialog.getByRole('button', { name: 'Delete key' }).click();
    await waitForText(page.getByRole('status'), 'Deleted key ".." from data store profile.');
    await waitFor(
      () => keys.allTextContents(),
      (shown) => shown.length === 2,
      { what: 'the deleted key to leave the table' },
    );
    expect(await keys.allTextContents()).toEqual(['a/b%', 'keep']);
    expect((await api.get('/v1/data_stores/profile/records?key=..')).status).toBe(404);
    // The keyboard is on the key that took the deleted one's place.
    await waitForFocus(page, 'table.keys tbody th button', /^a\/b%$/);

    // A key deleted meanwhile (by a component, the API, another tab) says so, and leaves the table.
    expect((await api.delete('/v1/data_stores/profile/records?key=keep')).status).toBe(204);
    await row('keep').getByRole('button', { name: 'Delete' }).click();
    await dialog.getByRole('button', { name: 'Delete key' }).click();
    await waitForText(page.getByRole('alert'), 'Key "keep" was not deleted: key "keep" of data store "profile" not found (404 not_found)');
    await waitFor(
      () => keys.allTextContents(),
      (shown) => shown.length === 1,
      { what: 'the key deleted meanwhile to leave the table' },
    );
    await finish();
  });

  it('deletes a whole store after a confirm, saying so, and lists the stores without it', async () => {
    const { user, api } = await newAccount(server);
    await writeThroughARun(api, 'kept', { a: 1 }, 1);
    const doomed = await writeThroughARun(api, 'doomed', { a: 1, b: 2 }, 2);
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/data-stores/${doomed.id}`, user.apiKey);
    await page.getByRole('heading', { name: 'doomed', level: 1 }).waitFor();

    // Asked first; Cancel keeps the store and gives the keyboard back to the button.
    await page.getByRole('button', { name: 'Delete store' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete data store doomed?' });
    await waitForText(dialog, 'The store and its 2 keys are removed.');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await waitForFocus(page, 'button.danger', /^Delete store$/);
    expect((await api.get('/v1/data_stores/doomed')).status).toBe(200);

    await page.getByRole('button', { name: 'Delete store' }).click();
    await dialog.getByRole('button', { name: 'Delete store' }).click();
    await waitForText(page.getByRole('status'), 'Deleted data store doomed and its keys.');
    await page.getByRole('heading', { name: 'Data stores', level: 1 }).waitFor();
    const names = page.getByRole('table').getByRole('rowheader');
    await waitFor(
      () => names.allTextContents(),
      (shown) => shown.length === 1,
      { what: 'the list without the deleted store' },
    );
    expect(await names.allTextContents()).toEqual(['kept']);
    expect((await api.get('/v1/data_stores/doomed')).status).toBe(404);
    await finish();
  });

  it("says a store that is not there (never written, another account's) is not found, with no keys table", async () => {
    const { user } = await newAccount(server);
    const other = await newAccount(server);
    const theirs = await writeThroughARun(other.api, 'theirs', { x: 1 }, 1);
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/data-stores/never-written`, user.apiKey);
    await waitForText(page.getByRole('alert'), 'data store "never-written" not found (404 not_found)');
    await page.getByRole('heading', { name: 'Data store never-written', level: 1 }).waitFor();
    await page.getByRole('link', { name: 'Data stores' }).last().waitFor();
    expect(await page.locator('main button, main table').count()).toBe(0);

    await page.goto(`${server.url}/#/data-stores/${theirs.id}`);
    await waitForText(page.getByRole('alert'), `data store "${theirs.id}" not found (404 not_found)`);
    expect(await page.locator('main button, main table').count()).toBe(0);
    await finish();
  });

  it('fits a 390 px screen with a long store name and a long key, without sideways scrolling of the page', async () => {
    const { user, api } = await newAccount(server);
    const name = `a-store-${'with-a-long-name-'.repeat(11)}`.slice(0, 200);
    const key = `key-${'x'.repeat(1000)}`;
    const written = await writeThroughARun(api, name, { [key]: 1, short: 2 }, 2);
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/data-stores`, user.apiKey, { width: 390 });
    const overflow = () => evaluate<number>(page, 'document.documentElement.scrollWidth - document.documentElement.clientWidth');
    await page.getByRole('rowheader', { name }).waitFor();
    expect(await overflow()).toBe(0);
    // The strip's two-word section, current and so scrolled into view, is one line, as tall as the others.
    const sections = page.getByRole('navigation', { name: 'Sections' });
    const tall = (section: string) => sections.getByRole('link', { name: section }).evaluate((link) => link.getBoundingClientRect().height);
    expect(await tall('Data stores')).toBe(await tall('Sources'));
    await page.getByRole('link', { name }).click();
    await page.getByRole('heading', { name, level: 1 }).waitFor();
    const keys = page.locator('table.keys tbody th');
    await keys.nth(1).waitFor();
    expect(await keys.allTextContents()).toEqual(written.keys);
    expect(await overflow()).toBe(0);
    // The long key is shown whole, wrapped inside the table's frame, not cut short or scrolled to.
    const [scrollWidth, clientWidth] = await page.locator('.table-wrap').evaluate((element) => [element.scrollWidth, element.clientWidth]);
    expect(scrollWidth).toBeLessThanOrEqual(clientWidth!);
    const cell = keys.filter({ hasText: key });
    const [keyWidth, keyShown] = await cell.evaluate((element) => [element.scrollWidth, element.clientWidth]);
    expect(keyWidth).toBeLessThanOrEqual(keyShown!);
    await screenshot(page, 'phone-data-store');
    await finish();
  });
});
