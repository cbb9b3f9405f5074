// The console in Chromium: creating a workflow (name, trigger, ordered steps) through the save's progress route,
// the refusals shown beside the form, and the new workflow running as created.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { BROWSER_SUITE, evaluate, newAccount, openSignedIn, screenshot, waitForFocus, waitForText, withServerAndBrowser } from './browser.js';

const DOUBLE_STEP = `export default defineComponent({
  async run({ steps }) {
    return { doubled: steps.trigger.event.body.n * 2 };
  },
});`;

const ADD_STEP = `export default defineComponent({
  props: { plus: { type: "integer" } },
  async run({ steps }) {
    return steps.double.$return_value.doubled + this.plus;
  },
});`;

describe.each(DIALECTS)('web console: creating a workflow (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  withServerAndBrowser(dialect, (started, launched) => {
    server = started;
    browser = launched;
  });

  it('says a shortest interval of one second in the singular (--min-timer-interval 1)', async () => {
    const quick = await startTestServer(dialect, { minTimerInterval: 1 });
    try {
      const { user } = await newAccount(quick);
      const { page } = await openSignedIn(browser, quick.url, user.apiKey);
      await page.goto(`${quick.url}/#/workflows/new`);
      await page.getByLabel('Workflow name').fill('every second');
      await page.getByLabel('Starts on').selectOption('interval');
      await waitForText(page.locator('#workflow-interval-min'), 'At least 1 second: the server refuses shorter intervals.');
      await page.getByLabel('Every (seconds)').fill('0');
      await page.getByRole('button', { name: 'Create workflow' }).click();
      await waitForText(page.locator('p.field-error[role="alert"]'), 'The timer needs an interval of at least 1 second.');
      await page.close();
    } finally {
      await quick.destroy();
    }
  });

  it('creates an HTTP workflow of two steps put in order, then runs it', async () => {
    const { user, api } = await newAccount(server);
    const { page, problems } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Workflows' }).click();
    await page.getByRole('link', { name: 'Create one' }).click();

    await page.getByLabel('Workflow name').fill('double then add');
    await page.getByLabel('Starts on').selectOption('http');
    // Written in the wrong order, then moved: the add step first, the double step second.
    const first = page.getByRole('listitem', { name: 'Step 1' });
    await first.getByLabel('Step name').fill('add');
    await first.getByLabel('Code').fill(ADD_STEP);
    await first.getByLabel('Configured props (JSON, optional)').fill('{ "plus": 1 }');
    await page.getByRole('button', { name: 'Add a step' }).click();
    const second = page.getByRole('listitem', { name: 'Step 2' });
    await second.getByLabel('Step name').fill('double');
    await second.getByLabel('Code').fill(DOUBLE_STEP);
    await second.getByRole('button', { name: 'Move up' }).click();
    await expect(page.getByRole('listitem', { name: 'Step 1' }).getByLabel('Step name').inputValue()).resolves.toBe('double');
    // The keyboard stays with the moved step: at the top its "Move up" is off, so its "Move down" has the focus.
    await waitForFocus(page, 'li[aria-label="Step 1"] button', /Move down/);
    await waitForText(page.locator('p.sr-only[aria-live="polite"]').first(), 'double is now step 1 of 2.');
    // A third step, added and removed: the focus lands in the new step, then on the step now last.
    await page.getByRole('button', { name: 'Add a step' }).click();
    await waitForFocus(page, 'li[aria-label="Step 3"] input');
    await page.getByRole('button', { name: 'Remove step 3' }).click();
    await waitForFocus(page, 'li[aria-label="Step 2"] input');
    await expect(page.getByRole('listitem', { name: 'Step 2' }).getByLabel('Step name').inputValue()).resolves.toBe('add');
    await evaluate(page, 'window.scrollTo(0, 0)');
    await screenshot(page, 'workflow-create');
    await page.getByRole('button', { name: 'Create workflow' }).click();

    await waitForText(page.getByRole('status'), 'Created double then add.');
    const workflows = (await api.get('/v1/users/me/workflows')).body.data;
    expect(workflows).toHaveLength(1);
    const workflow = workflows[0];
    expect(page.url()).toContain(`#/workflows/${workflow.id}`);
    expect(workflow.trigger).toMatchObject({ type: 'http', custom_response: false });
    expect(workflow.steps.map((s: { name: string }) => s.name)).toEqual(['double', 'add']);
    expect(workflow.steps[1].configured_props).toEqual({ plus: 1 });
    expect(workflow.timeout_seconds).toBe(30);

    const sent = await fetch(workflow.trigger.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":20}' });
    expect(sent.status).toBe(200);
    const runs = await waitFor(
      () => api.get(`/v1/workflows/${workflow.id}/runs`),
      (r) => r.body.data[0]?.status === 'succeeded',
      { what: 'the run to succeed' },
    );
    expect(runs.body.data[0].steps.map((s: any) => s.$return_value)).toEqual([{ doubled: 40 }, 41]);
    expect(problems).toEqual([]);
  });

  it("says what to fix, before sending and from the server's refusal, and creates nothing", async () => {
    const { user, api } = await newAccount(server);
    const { page, problems } = await openSignedIn(browser, server.url, user.apiKey);
    await page.goto(`${server.url}/#/workflows/new`);
    const alert = page.locator('p.field-error[role="alert"]');

    await page.getByRole('button', { name: 'Create workflow' }).click();
    await waitForText(alert, 'The workflow needs a name.');
    // The focus goes to the field to fix, marked invalid.
    await waitForFocus(page, '#workflow-name[aria-invalid="true"]');

    await page.getByLabel('Workflow name').fill('broken');
    await page.getByLabel('Starts on').selectOption('interval');
    await page.getByLabel('Every (seconds)').fill('5');
    await page.getByRole('button', { name: 'Create workflow' }).click();
    await waitForText(alert, 'The timer needs an interval of at least 15 seconds.');
    await waitForFocus(page, '#workflow-interval');
    await page.getByLabel('Starts on').selectOption('none');

    // The server's 400, said once: its details repeat its message.
    await page.getByLabel('Run timeout (seconds, at most 900)').fill('5000');
    await page.getByRole('button', { name: 'Create workflow' }).click();
    await waitForText(alert, '(400 invalid_request)');
    expect(await alert.textContent()).toBe('invalid body: timeout_seconds must be <= 900 (400 invalid_request)');
    await page.getByLabel('Run timeout (seconds, at most 900)').fill('30');

    await page.getByRole('listitem', { name: 'Step 1' }).getByLabel('Configured props (JSON, optional)').fill('{ plus: 1 }');
    await page.getByRole('button', { name: 'Create workflow' }).click();
    await waitForText(alert, 'The configured props of step step_1 are not valid JSON.');
    await waitForFocus(page, 'li[aria-label="Step 1"] textarea[aria-invalid="true"]');
    // JSON, but no object: the server's "invalid body: steps.0.configured_props must be object" named no step the form shows.
    await page.getByRole('listitem', { name: 'Step 1' }).getByLabel('Configured props (JSON, optional)').fill('[1, 2]');
    await page.getByRole('button', { name: 'Create workflow' }).click();
    await waitForText(alert, 'The configured props of step step_1 must be a JSON object: { "prop": value, … }.');
    await waitForFocus(page, 'li[aria-label="Step 1"] textarea[aria-invalid="true"]');

    await page.getByRole('listitem', { name: 'Step 1' }).getByLabel('Configured props (JSON, optional)').fill('');
    await page.getByRole('listitem', { name: 'Step 1' }).getByLabel('Code').fill('export default { async run() { this is not javascript } }');
    await page.getByRole('button', { name: 'Create workflow' }).click();
    // The reason names the step whose code does not load: of several steps, it alone does not say which to fix.
    await waitForText(alert, /^steps\[0\] \("step_1"\): .*\(422 component_invalid\)/);
    await waitForFocus(page, 'p.field-error');
    expect((await api.get('/v1/users/me/workflows')).body.data).toEqual([]);
    expect(page.url()).toContain('#/workflows/new');
    expect(problems).toEqual([]);
  });

  it('marks the field at fault, drops its error when it is edited, and puts a 400 naming a field on that field', async () => {
    const { user, api } = await newAccount(server);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.goto(`${server.url}/#/workflows/new`);
    const error = page.locator('#workflow-error');

    await page.getByRole('button', { name: 'Create workflow' }).click();
    await waitForText(error, 'The workflow needs a name.');
    await page.getByLabel('Workflow name').fill('fixed');
    // The message stayed, and the name stayed marked, until the next press.
    await page.locator('#workflow-error:empty').waitFor({ state: 'attached' });
    expect(await page.getByLabel('Workflow name').getAttribute('aria-invalid')).toBeNull();

    // A step without code: its field was focused but never marked.
    const code = page.getByRole('listitem', { name: 'Step 1' }).getByLabel('Code');
    await code.fill('');
    await page.getByRole('button', { name: 'Create workflow' }).click();
    await waitForText(error, 'Step step_1 needs its code.');
    expect(await code.getAttribute('aria-invalid')).toBe('true');
    expect(await code.getAttribute('aria-describedby')).toBe('workflow-error');
    await code.fill(DOUBLE_STEP);
    await page.locator('#workflow-error:empty').waitFor({ state: 'attached' });

    // The server's 400 names timeout_seconds: that field is marked and gets the focus.
    await page.getByLabel('Run timeout (seconds, at most 900)').fill('5000');
    await page.getByRole('button', { name: 'Create workflow' }).click();
    await waitForText(error, 'timeout_seconds must be <= 900');
    await waitForFocus(page, '#workflow-timeout[aria-invalid="true"]');
    await page.getByLabel('Run timeout (seconds, at most 900)').fill('30');
    await page.locator('#workflow-error:empty').waitFor({ state: 'attached' });
    expect((await api.get('/v1/users/me/workflows')).body.data).toEqual([]);
    await finish();
  });
});
