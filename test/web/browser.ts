// Drives Debian's Chromium with playwright-core for the console's tests: one server and browser per file, a fresh
// context per test, signed in with a new account's key.
import fs from 'node:fs';
import path from 'node:path';
import { type Browser, chromium, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { client } from '../helpers/client.js';
import { type Dialect, startTestServer, type TestServer } from '../helpers/server.js';

export const CHROMIUM = process.env.TRIBUTARY_TEST_CHROMIUM ?? '/usr/bin/chromium';

/**
 * The browser suites' describe options. Headless Chromium now and then stops drawing frames under load (a CI run's click
 * waited 20 s on a visible, still element: Playwright's "stable" check counts animation frames, and none came); a test
 * is tried once more so that such a stall does not fail the run. A console fault fails both tries.
 */
export const BROWSER_SUITE = { retry: 1 } as const;

export async function launchBrowser(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does it)`);
  // Root (CI) cannot use Chromium's sandbox; /dev/shm is small in containers.
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/**
 * A test server on `dialect` and a browser, started before the suite's tests (together) and stopped after them;
 * `ready` receives both, for the suite's own variables. `config` and `options` go to startTestServer.
 */
export function withServerAndBrowser(
  dialect: Dialect,
  ready: (server: TestServer, browser: Browser) => void,
  config: Parameters<typeof startTestServer>[1] = {},
  options: Parameters<typeof startTestServer>[2] = {},
): void {
  let server: TestServer | undefined;
  let browser: Browser | undefined;
  beforeAll(async () => {
    [server, browser] = await Promise.all([startTestServer(dialect, config, options), launchBrowser()]);
    ready(server, browser);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.destroy();
  });
}

export interface ConsolePage {
  page: Page;
  /** What the page reported as errors: failed scripts, CSP refusals, uncaught exceptions. */
  problems: string[];
  /** The end of a test: the page reported no problem, and its context is closed. */
  finish: () => Promise<void>;
}

/** A new account on `server`, and an API client with its key. */
export async function newAccount(server: TestServer, options?: Parameters<TestServer['createUser']>[0]) {
  const user = await server.createUser(options);
  return { user, api: client(server.url, user.apiKey) };
}

/** `openConsole` at `url`, signed in with `key`. */
export async function openSignedIn(browser: Browser, url: string, key: string, options: OpenOptions = {}): Promise<ConsolePage> {
  const opened = await openConsole(browser, url, options);
  await signIn(opened.page, key);
  return opened;
}

export interface OpenOptions {
  /** Narrows the viewport (375 for a phone). */
  width?: number;
  /** Installs Playwright's clock before the page loads (time still runs), so that a test can move it on (`page.clock.runFor`). */
  clock?: boolean;
}

/** A new context (its own session storage) at the console's page. */
export async function openConsole(browser: Browser, url: string, options: OpenOptions = {}): Promise<ConsolePage> {
  const context = await browser.newContext({ viewport: { width: options.width ?? 1200, height: 900 } });
  const page = await context.newPage();
  if (options.clock) await page.clock.install();
  page.setDefaultTimeout(20_000);
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    // Chromium logs every 4xx answer as a failed resource, also those the console shows on purpose (a 401, a 422 on its
    // field); everything else is a problem.
    if (message.type() === 'error' && !/^Failed to load resource: the server responded with a status of 4\d\d/.test(message.text())) {
      problems.push(`console: ${message.text()}`);
    }
  });
  await page.goto(url);
  const finish = async () => {
    expect(problems).toEqual([]);
    await context.close();
  };
  return { page, problems, finish };
}

export async function signIn(page: Page, key: string): Promise<void> {
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Sections' }).waitFor();
}

/**
 * Answers the page's reads of `url` (a route pattern) with the server's answer changed by `rewrite` until `release()`,
 * then as the server gave it: the page shows an unfinished state, which only a read made after the release can end.
 * `reads()`: how many reads were answered so far.
 */
export async function rewriteUntilReleased(page: Page, url: string, rewrite: (body: any) => void): Promise<{ reads: () => number; release: () => void }> {
  let holding = true;
  let reads = 0;
  await page.route(url, async (route) => {
    const response = await route.fetch();
    const body = await response.json();
    reads += 1;
    if (holding) rewrite(body);
    await route.fulfill({ response, json: body });
  });
  return { reads: () => reads, release: () => void (holding = false) };
}

/**
 * Holds the page's requests to `url` (a route pattern; with `method`, only those of that method: the others go on)
 * until `release()`, so that a test sees what the page shows while one is on its way. `held`: the path of each, in order.
 */
export async function holdUntilReleased(page: Page, url: string, method?: string): Promise<{ held: string[]; release: () => void }> {
  const held: string[] = [];
  let release = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  await page.route(url, async (route) => {
    if (method !== undefined && route.request().method() !== method) return route.continue();
    held.push(new URL(route.request().url()).pathname);
    await released;
    await route.continue();
  });
  return { held, release };
}

/** Waits until the locator's element shows this text. */
export async function waitForText(locator: Locator, text: string | RegExp): Promise<void> {
  await locator.filter({ hasText: text }).first().waitFor();
}

/**
 * Waits until the element `selector` names (and whose text matches `text`, if given) has the keyboard focus. A CSS
 * wait, not waitForFunction: a string predicate is polled through eval, which the console's CSP refuses.
 */
export async function waitForFocus(page: Page, selector: string, text?: RegExp): Promise<void> {
  await page
    .locator(`${selector}:focus`, text ? { hasText: text } : {})
    .first()
    .waitFor();
}

/** The page's table fits its frame (nothing to scroll sideways to) and `control` is inside it, in view. */
export async function expectInTable(page: Page, control: Locator): Promise<void> {
  const wrap = page.locator('.table-wrap');
  const [scrollWidth, clientWidth] = await wrap.evaluate((element) => [element.scrollWidth, element.clientWidth]);
  expect(scrollWidth).toBeLessThanOrEqual(clientWidth!);
  const button = (await control.boundingBox())!;
  const box = (await wrap.boundingBox())!;
  expect(button.x + button.width).toBeLessThanOrEqual(box.x + box.width);
}

/** An expression evaluated in the page (a string, so that the tests need no DOM types). */
export function evaluate<T>(page: Page, expression: string): Promise<T> {
  return page.evaluate(expression) as Promise<T>;
}

/**
 * With TRIBUTARY_SCREENSHOTS=<dir> set, saves what the page shows as <dir>/<name>.png (the README's pictures are taken
 * so: `TRIBUTARY_SCREENSHOTS=docs/console npx vitest run test/web`); otherwise does nothing.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dir = process.env.TRIBUTARY_SCREENSHOTS;
  if (!dir) return;
  fs.mkdirSync(dir, { recursive: true });
  // The live state's dot and the caret blink: hidden, so that two runs of the same page give the same picture.
  await page.screenshot({ path: path.join(dir, `${name}.png`), animations: 'disabled', caret: 'hide' });
}
