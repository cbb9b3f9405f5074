// The console in Chromium: the account's saved components (a Load more past the first 50, what saves one when there are
// none) and a component's facts, props and code, one that is not there, and both pages at a phone's width.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { client } from '../helpers/client.js';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { BROWSER_SUITE, evaluate, newAccount, openSignedIn, screenshot, waitForFocus, waitForText, withServerAndBrowser } from './browser.js';

/** A source with a key, a required prop with a label and description, an optional one with a default and a secret. */
const GREETER = `module.exports = {
  key: "greeter", name: "Greeter", version: "1.2.0",
  props: {
    who: { type: "string", label: "Who", description: "The name the greeting is for" },
    times: { type: "integer", optional: true, default: 2 },
    token: { type: "string", secret: true, optional: true },
  },
  async run(event) { this.$emit({ hello: this.who, event }); },
};`;

/** Saves `code` through the API and gives the component it answers. */
async function save(api: ReturnType<typeof client>, code: string) {
  const saved = await api.post('/v1/components', { component_code: code });
  expect(saved.status, saved.text).toBe(200);
  return saved.body.data as { id: string; name: string; version: string; code: string; code_hash: string; created_at: number; updated_at: number };
}

/** A component without props, `name` and `version` its own. */
const plain = (name: string, version = '0.1.0') => `module.exports = { name: ${JSON.stringify(name)}, version: "${version}", async run() {} };`;

describe.each(DIALECTS)('web console: components (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  it('says, with no component yet, how one is saved', async () => {
    const { user } = await newAccount(server);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Components' }).click();
    await page.getByRole('heading', { name: 'Components', level: 1 }).waitFor();
    await waitForText(page.locator('main p'), 'No components yet. A component is saved from its code with POST /v1/components or tributary deploy');
    expect(await page.getByRole('main').getByRole('link', { name: 'New source' }).getAttribute('href')).toBe('#/sources/new');
    expect(await page.locator('main table, main button').count()).toBe(0);
    await finish();
  });

  it('lists the saved components newest first and opens one, from the keyboard, on its facts, props and code', async () => {
    const { user, api } = await newAccount(server);
    const older = await save(api, plain('Older'));
    const greeter = await save(api, GREETER);
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/components`, user.apiKey);
    const names = page.locator('main tbody th a');
    await names.nth(1).waitFor();
    expect(await names.allTextContents()).toEqual(['Greeter', 'Older']);
    const time = (seconds: number) =>
      evaluate<string>(page, `new Date(${seconds * 1000}).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'long' })`);
    const row = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'Greeter' }) });
    expect(await row.getByRole('cell').allTextContents()).toEqual(['1.2.0', greeter.id, await time(greeter.created_at), await time(greeter.updated_at)]);
    const olderRow = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'Older' }) });
    expect(await olderRow.getByRole('cell').nth(1).textContent()).toBe(older.id);
    await screenshot(page, 'components');

    // Tab from the section's link reaches the first component's link, and Enter opens it.
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Components' }).focus();
    const focused = () => evaluate<string>(page, "document.activeElement.closest('main') ? document.activeElement.textContent : ''");
    for (let tabs = 0; tabs < 10 && (await focused()) !== 'Greeter'; tabs++) await page.keyboard.press('Tab');
    await waitForFocus(page, 'main a', /^Greeter$/);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Greeter', level: 1 }).waitFor();
    expect(await evaluate(page, 'location.hash')).toBe(`#/components/${greeter.id}`);
    expect(await page.locator('.facts').textContent()).toBe(
      `Id${greeter.id}Version1.2.0Code hash${greeter.code_hash}Created${await time(greeter.created_at)}Updated${await time(greeter.updated_at)}`,
    );
    const props = page.getByRole('table', { name: 'Props' });
    const propRows = props.locator('tbody tr');
    expect(await propRows.count()).toBe(3);
    const cells = async (index: number) => [
      await propRows.nth(index).locator('th').textContent(),
      ...(await propRows.nth(index).locator('td').allTextContents()),
    ];
    expect(await cells(0)).toEqual(['who', 'string', 'required', '', 'Who: The name the greeting is for']);
    expect(await cells(1)).toEqual(['times', 'integer', 'optional', '2', '']);
    expect(await cells(2)).toEqual(['token', 'string (secret)', 'optional', '', '']);
    expect(await page.getByRole('main').locator('pre').textContent()).toBe(GREETER);
    expect(await page.getByRole('button', { name: 'Copy the code' }).count()).toBe(1);
    await screenshot(page, 'component');

    // The key in its code opens it too, as the API's GET /v1/components/{key} does; the crumb leads back to the list.
    await page.goto(`${server.url}/#/components/greeter`);
    await waitForText(page.locator('.facts'), greeter.id);
    await page.getByRole('main').getByRole('link', { name: 'Components' }).click();
    await names.nth(1).waitFor();
    await finish();
  });

  it('deploys a component as a source from its page: the new-source form opens with it chosen and its props loaded', async () => {
    const { user, api } = await newAccount(server);
    const greeter = await save(api, GREETER);
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/components/greeter`, user.apiKey);
    await page.getByRole('heading', { name: 'Greeter', level: 1 }).waitFor();
    await page.getByRole('link', { name: 'Deploy as source' }).click();
    // The form is for this component (by its id, though the page was opened by its key), its props given the focus.
    await waitForFocus(page, '#configure-title', /^Configure Greeter/);
    expect(await evaluate(page, 'location.hash')).toBe(`#/sources/new/${greeter.id}`);
    expect(await page.getByLabel('Saved component').isChecked()).toBe(true);
    expect(await page.getByLabel('Component id or key').inputValue()).toBe(greeter.id);
    await page.getByLabel('Who').fill('Ada');
    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    await page.getByRole('heading', { name: 'Greeter', level: 1 }).waitFor();
    const sources = (await api.get('/v1/users/me/sources')).body.data;
    expect(sources.map((source: any) => [source.component_id, source.configured_props.who])).toEqual([[greeter.id, 'Ada']]);
    expect(await evaluate(page, 'location.hash')).toBe(`#/sources/${sources[0].id}`);
    // Nothing was saved again: the source runs the saved component.
    expect((await api.get('/v1/users/me/components')).body.page_info.total_count).toBe(1);

    // A saved component can be chosen by hand too, and one that is not there is said on its field.
    await page.goto(`${server.url}/#/sources/new`);
    await page.getByLabel('Saved component').check();
    await page.getByLabel('Component id or key').fill('sc_nothere');
    await page.getByRole('button', { name: 'Load props' }).click();
    await waitForText(page.locator('#component-error'), 'not found (404 not_found)');
    expect(await page.getByLabel('Component id or key').getAttribute('aria-invalid')).toBe('true');
    await page.getByLabel('Component id or key').fill('greeter');
    await page.getByRole('button', { name: 'Load props' }).click();
    await waitForFocus(page, '#configure-title', /^Configure Greeter/);
    await finish();
  });

  it('lists the first 50 components and the rest a Load more away, reading their code only on their own page', async () => {
    const { user, api } = await newAccount(server);
    for (let i = 0; i < 51; i++) await save(api, plain(`c${String(i).padStart(2, '0')}`));
    expect((await api.get('/v1/users/me/components?limit=1')).body.page_info.total_count).toBe(51);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    const listed = page.waitForResponse((response) => response.url().includes('/v1/users/me/components'));
    await page.goto(`${server.url}/#/components`);
    const first = await (await listed).json();
    expect(first.data).toHaveLength(50);
    expect(first.data.every((component: Record<string, unknown>) => !('code' in component))).toBe(true);
    const names = page.locator('main tbody th a');
    await names.nth(49).waitFor();
    expect(await names.count()).toBe(50);
    await page.getByRole('button', { name: 'Load more' }).click();
    await names.nth(50).waitFor();
    expect(await names.count()).toBe(51);
    expect(await names.last().textContent()).toBe('c00');
    // The button left with the last page; the keyboard is on the first row it brought.
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
    await waitForFocus(page, 'main tbody th a', /^c00$/);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'c00', level: 1 }).waitFor();
    expect(await page.getByRole('main').locator('pre').textContent()).toBe(plain('c00'));
    await waitForText(page.getByRole('main'), 'This component declares no props.');
    await finish();
  });

  it("says a component that is not there (a mistyped address, another account's) is not found, with no props or code", async () => {
    const { user } = await newAccount(server);
    const other = await newAccount(server);
    const theirs = await save(other.api, plain('Theirs'));
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/components/sc_nothere`, user.apiKey);
    await page.getByRole('heading', { name: 'Component sc_nothere', level: 1 }).waitFor();
    await waitForText(page.getByRole('alert'), 'not found (404 not_found)');
    const alert = await page.getByRole('alert').textContent();
    expect(alert).toContain('sc_nothere');
    await page.getByRole('main').getByRole('link', { name: 'Components' }).waitFor();
    expect(await page.locator('main button, main table, main pre').count()).toBe(0);

    await page.goto(`${server.url}/#/components/${theirs.id}`);
    await page.getByRole('heading', { name: `Component ${theirs.id}`, level: 1 }).waitFor();
    await waitForText(page.getByRole('alert'), theirs.id);
    expect(await page.getByRole('alert').textContent()).toContain('not found (404 not_found)');
    expect(await page.locator('main button, main table, main pre').count()).toBe(0);
    await finish();
  });

  it('fits a 390 px screen with a long name and a long line of code, without sideways scrolling of the page', async () => {
    const { user, api } = await newAccount(server);
    const name = `A component ${'with-a-long-name-'.repeat(8)}`;
    const code = `// ${'a-long-unbroken-comment-'.repeat(40)}\n${plain(name)}`;
    const saved = await save(api, code);
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/components`, user.apiKey, { width: 390 });
    const overflow = () => evaluate<number>(page, 'document.documentElement.scrollWidth - document.documentElement.clientWidth');
    await page.getByRole('rowheader', { name }).waitFor();
    expect(await overflow()).toBe(0);
    await page.getByRole('link', { name }).click();
    await page.getByRole('heading', { name, level: 1 }).waitFor();
    expect(await evaluate(page, 'location.hash')).toBe(`#/components/${saved.id}`);
    const pre = page.getByRole('main').locator('pre');
    expect(await pre.textContent()).toBe(code);
    expect(await overflow()).toBe(0);
    // The long line is wrapped inside the code's frame, shown whole rather than cut or scrolled to.
    const [scrollWidth, clientWidth] = await pre.evaluate((element) => [element.scrollWidth, element.clientWidth]);
    expect(scrollWidth).toBeLessThanOrEqual(clientWidth!);
    await screenshot(page, 'phone-component');
    await finish();
  });
});
