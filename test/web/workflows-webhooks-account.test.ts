// The console in Chromium: a workflow's runs with their steps and a replay, webhooks with their delivery log,
// subscriptions, and the account's quotas and key rotation.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, request } from '../helpers/client.js';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import {
  BROWSER_SUITE,
  evaluate,
  expectInTable,
  holdUntilReleased,
  newAccount,
  openSignedIn,
  rewriteUntilReleased,
  screenshot,
  waitForFocus,
  waitForText,
  withServerAndBrowser,
} from './browser.js';

const PARSE_STEP = `export default defineComponent({
  async run({ steps, $ }) {
    console.log("parsing " + steps.trigger.event.n);
    $.export("doubled", steps.trigger.event.n * 2);
    return { n: steps.trigger.event.n };
  },
});`;

const CHECK_STEP = `export default defineComponent({
  async run({ steps }) {
    if (steps.parse.$return_value.n > 100) throw new Error("n is too large: " + steps.parse.$return_value.n);
    return "ok";
  },
});`;

const HTTP_SOURCE = `module.exports = {
  name: "Hook", version: "0.1.0", props: { http: "$.interface.http" },
  async run(event) { this.$emit(event.body); },
};`;

describe.each(DIALECTS)('web console: workflows, webhooks, account (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  let receiver: http.Server;
  let receiverUrl: string;
  const received: string[] = [];

  beforeAll(async () => {
    // The webhooks' destination: /ok answers 200, anything else 500.
    receiver = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        received.push(req.url ?? '');
        res.statusCode = req.url === '/ok' ? 200 : 500;
        res.end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  });
  withServerAndBrowser(
    dialect,
    (started, launched) => {
      server = started;
      browser = launched;
    },
    {
      allowPrivateNetwork: true,
      // An hour before the first retry: the failed attempt stays the only one of its event while the test looks at it.
      webhookRetrySchedule: [3600],
    },
  );
  afterAll(async () => {
    await new Promise((resolve) => receiver?.close(resolve));
  });

  it("lists workflows, shows a run's steps with status, duration, exports, logs and error, and replays a run", async () => {
    const { user, api } = await newAccount(server);
    const created = await api.post('/v1/workflows', {
      name: 'double and check',
      trigger: null,
      steps: [
        { name: 'parse', component_code: PARSE_STEP },
        { name: 'check', component_code: CHECK_STEP },
      ],
    });
    expect(created.status, created.text).toBe(200);
    const workflow = created.body.data;
    expect((await api.post(`/v1/workflows/${workflow.id}/run`, { n: 21 })).status).toBe(202);
    expect((await api.post(`/v1/workflows/${workflow.id}/run`, { n: 500 })).status).toBe(202);
    const runs = await waitFor(
      () => api.get(`/v1/workflows/${workflow.id}/runs`),
      (r) => r.body.data.length === 2 && r.body.data.every((run: any) => run.status === 'succeeded' || run.status === 'failed'),
      { what: 'two finished runs' },
    );
    const failed = runs.body.data.find((run: any) => run.status === 'failed');
    const succeeded = runs.body.data.find((run: any) => run.status === 'succeeded');

    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Workflows' }).click();
    const row = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'double and check' }) });
    await row.waitFor();
    expect((await row.getByRole('cell').allTextContents()).slice(0, 3)).toEqual(['none', 'Active', 'parse → check']);
    await row.getByRole('link').click();

    await page.getByRole('link', { name: succeeded.id }).click();
    const parse = page.getByRole('listitem', { name: 'Step parse' });
    await waitForText(parse, 'succeeded');
    await waitForText(parse.getByRole('figure', { name: 'Exports of parse' }), '"doubled": 42');
    await waitForText(parse.locator('pre.logs'), 'parsing 21');
    expect(await parse.locator('h3').textContent()).toMatch(/^parse succeeded \d+(\.\d+)? (ms|s)$/);
    await waitForText(page.getByRole('listitem', { name: 'Step check' }).getByRole('figure', { name: 'Return value of check' }), '"ok"');

    await page.getByRole('link', { name: failed.id }).click();
    const check = page.getByRole('listitem', { name: 'Step check' });
    await waitForText(check, 'failed');
    await waitForText(check.getByRole('figure', { name: 'Error of check' }), 'n is too large: 500');
    await screenshot(page, 'workflow-run');

    // Replay: a new run of the same event, opened and followed until it finishes; a double click replays once.
    const replays: string[] = [];
    page.on('request', (sent) => {
      if (sent.method() === 'POST' && sent.url().endsWith('/replay')) replays.push(sent.url());
    });
    await page.getByRole('button', { name: 'Replay' }).dblclick();
    await waitForText(page.getByRole('status'), `Replaying ${failed.id} as wr_`);
    expect(replays).toHaveLength(1);
    await waitForText(page.locator('#run-title'), 'failed');
    const after = (await api.get(`/v1/workflows/${workflow.id}/runs`)).body.data;
    expect(after).toHaveLength(3);
    expect(after[0]).toMatchObject({ trigger: 'replay', replay_of: failed.id, status: 'failed', event: { n: 500 } });
    expect(page.url()).toContain(`#/workflows/${workflow.id}/${after[0].id}`);
    await waitForText(page.locator('.run .muted').first(), `replay of ${failed.id}`);

    await page.getByLabel('Status').selectOption('succeeded');
    await page.getByRole('link', { name: failed.id }).waitFor({ state: 'detached' });
    await page.getByRole('link', { name: succeeded.id }).waitFor();
    await finish();
  });

  it("shows a workflow's trigger and endpoint, runs it now with an event and opens the run, and deletes it after confirmation", async () => {
    const { user, api } = await newAccount(server);
    const created = await api.post('/v1/workflows', { name: 'on demand', trigger: { type: 'http' }, steps: [{ name: 'parse', component_code: PARSE_STEP }] });
    expect(created.status, created.text).toBe(200);
    const workflow = created.body.data;

    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.goto(`${server.url}/#/workflows/${workflow.id}`);
    const facts = page.locator('.facts');
    await waitForText(facts, workflow.trigger.endpoint_url);
    await waitForText(facts, 'parse');

    await page.getByText('Run now').click();
    await page.getByLabel('Event (JSON)').fill('{ "n": 21 ');
    await page.getByRole('button', { name: 'Run with this event' }).click();
    await waitForText(page.getByRole('alert'), 'The event must be valid JSON.');
    await page.getByLabel('Event (JSON)').fill('{ "n": 21 }');
    const starts: string[] = [];
    page.on('request', (sent) => {
      if (sent.method() === 'POST' && new URL(sent.url()).pathname.endsWith('/run')) starts.push(sent.url());
    });
    // A double click starts one run: the second press came before the first was queued, and started a second.
    await page.getByRole('button', { name: 'Run with this event' }).dblclick();
    await waitForText(page.getByRole('status'), 'Started run wr_');
    // The new run opens and is followed until it finishes.
    await waitForText(page.locator('#run-title'), 'succeeded');
    expect(starts).toHaveLength(1);
    const runs = (await api.get(`/v1/workflows/${workflow.id}/runs`)).body.data;
    expect(runs).toHaveLength(1);
    const [run] = runs;
    expect(run).toMatchObject({ trigger: 'manual', status: 'succeeded', event: { n: 21 } });
    expect(page.url()).toContain(`#/workflows/${workflow.id}/${run.id}`);

    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog', { name: 'Delete on demand?' }).getByRole('button', { name: 'Cancel' }).click();
    expect((await api.get(`/v1/workflows/${workflow.id}`)).status).toBe(200);
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog', { name: 'Delete on demand?' }).getByRole('button', { name: 'Delete workflow' }).click();
    await page.getByRole('heading', { name: 'Workflows' }).waitFor();
    expect((await api.get(`/v1/workflows/${workflow.id}`)).status).toBe(404);
    await finish();
  });

  it('follows a run opened by its address while it is unfinished, though the runs listed do not hold it', async () => {
    const { user, api } = await newAccount(server);
    const workflow = (await api.post('/v1/workflows', { name: 'linked', trigger: null, steps: [{ name: 'parse', component_code: PARSE_STEP }] })).body.data;
    const runId = (await api.post(`/v1/workflows/${workflow.id}/run`, { n: 1 })).body.data.id;
    await waitFor(
      () => api.get(`/v1/workflows/${workflow.id}/runs/${runId}`),
      (res) => res.body.data.status === 'succeeded',
      { what: 'the run finished' },
    );
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/workflows/${workflow.id}`, user.apiKey);
    // The run is read as running until the test lets its real state through: only a read made after that can show it.
    const held = await rewriteUntilReleased(page, `**/v1/workflows/${workflow.id}/runs/${runId}`, (body) => {
      body.data.status = 'running';
    });
    // Filtered to failed runs, the list does not hold it: the run opened by its address is read on its own.
    await page.getByLabel('Status').selectOption('failed');
    await waitForText(page.locator('table.runs'), 'No runs with status failed.');
    await evaluate(page, `location.hash = '#/workflows/${workflow.id}/${runId}'`);
    const badge = page.locator('#run-title .badge');
    await waitForText(badge, 'running');
    await waitFor(
      async () => held.reads(),
      (n) => n >= 2,
      { what: 'the unfinished run read again' },
    );
    held.release();
    await waitForText(badge, 'succeeded');
    expect(await page.locator('table.runs tbody th a').count()).toBe(0);
    await finish();
  });

  it('names the webhook and the source it subscribed or unsubscribed, not only their ids', async () => {
    const { user, api } = await newAccount(server);
    const hook = (await api.post(`/v1/webhooks?url=${encodeURIComponent(`${receiverUrl}/ok`)}&name=orders%20hook`)).body.data;
    const source = (await api.post('/v1/sources', { name: 'orders', component_code: HTTP_SOURCE })).body.data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/subscriptions`, user.apiKey);
    // The pickers' names are read: the notice names what they name.
    await page.locator(`#sub-listeners option[value="${hook.id}"]`).waitFor({ state: 'attached' });
    await page.getByLabel('Emitter').fill(source.id);
    await page.getByLabel('Listener').fill(hook.id);
    await page.getByRole('button', { name: 'Subscribe' }).click();
    // It said "Subscribed wh_… to dc_…".
    await waitForText(page.locator('.notice'), `Subscribed orders hook (${hook.id}) to orders (${source.id}).`);
    await page.getByRole('button', { name: `Delete subscription of ${hook.id} to ${source.id}, stream default` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete subscription' }).click();
    // It said "Subscription deleted.", of whichever of several.
    await waitForText(page.locator('.notice'), `Unsubscribed orders hook (${hook.id}) from orders (${source.id}).`);
    await finish();
  });

  it("says how a workflow's first run comes about while it has none, by its trigger", async () => {
    const { user, api } = await newAccount(server);
    const hooked = (await api.post('/v1/workflows', { name: 'hooked', trigger: { type: 'http' }, steps: [{ name: 'parse', component_code: PARSE_STEP }] })).body
      .data;
    const manual = (await api.post('/v1/workflows', { name: 'manual', trigger: null, steps: [{ name: 'parse', component_code: PARSE_STEP }] })).body.data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/workflows/${hooked.id}`, user.apiKey);
    // Both said only "No runs.".
    await waitForText(page.locator('table.runs'), 'No runs yet: a request to its endpoint starts one, or start one by hand above.');
    await page.goto(`${server.url}/#/workflows/${manual.id}`);
    await waitForText(page.locator('table.runs'), 'No runs yet: start one by hand above, or subscribe it to a source.');
    await finish();
  });

  it("sets a workflow's Status label on the line of its select, centred with it", async () => {
    const { user, api } = await newAccount(server);
    const workflow = (await api.post('/v1/workflows', { name: 'aligned', trigger: null, steps: [{ name: 'parse', component_code: PARSE_STEP }] })).body.data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/workflows/${workflow.id}`, user.apiKey);
    const select = (await page.getByLabel('Status').boundingBox())!;
    const label = (await page.locator('label[for="run-status"]').boundingBox())!;
    // The label's bottom margin (0.2rem), there to space it from a field under it, set it above the select's middle.
    expect(Math.round(label.y + label.height / 2 - (select.y + select.height / 2))).toBe(0);
    await finish();
  });

  it('says a workflow or a webhook opened by an address it no longer has is not found, with no runs or deliveries under it', async () => {
    const { user, api } = await newAccount(server);
    const workflow = (await api.post('/v1/workflows', { name: 'gone', trigger: null, steps: [{ name: 'parse', component_code: PARSE_STEP }] })).body.data;
    const hook = (await api.post(`/v1/webhooks?url=${encodeURIComponent(`${receiverUrl}/ok`)}&name=gone`)).body.data;
    expect((await api.delete(`/v1/workflows/${workflow.id}`)).status).toBe(204);
    expect((await api.delete(`/v1/webhooks/${hook.id}`)).status).toBe(204);
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/workflows/${workflow.id}`, user.apiKey);
    await waitForText(page.getByRole('alert'), `workflow "${workflow.id}" not found (404 not_found)`);
    // A Delete button, a status filter, Refresh and an empty runs table stood under the 404, as if the workflow were there.
    await page.getByRole('link', { name: 'Workflows' }).last().waitFor();
    expect(await page.locator('main button, main select, main table').count()).toBe(0);

    await page.goto(`${server.url}/#/webhooks/${hook.id}`);
    await waitForText(page.getByRole('alert'), `webhook "${hook.id}" not found (404 not_found)`);
    await page.getByRole('heading', { name: `Deliveries of ${hook.id}` }).waitFor();
    expect(await page.locator('main button, main select, main table').count()).toBe(0);
    await finish();
  });

  it("reads a webhook's delivery log again while an attempt shown is pending, and shows its outcome", async () => {
    const { user, api } = await newAccount(server);
    const source = (await api.post('/v1/sources', { component_code: HTTP_SOURCE, name: 'feed' })).body.data;
    const hook = (await api.post(`/v1/webhooks?url=${encodeURIComponent(`${receiverUrl}/ok`)}&name=sink`)).body.data;
    expect((await api.post(`/v1/subscriptions?emitter_id=${source.id}&listener_id=${hook.id}`)).status).toBe(200);
    expect((await request('POST', source.configured_props.http.endpoint_url, { body: { n: 1 } })).status).toBe(200);
    await waitFor(
      () => api.get(`/v1/webhooks/${hook.id}/deliveries`),
      (res) => res.body.data.length === 1 && res.body.data[0].state === 'succeeded',
      { what: 'the delivery' },
    );
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    // The attempt is read as pending and due until the test lets its real state through: only a read made after that
    // can show it.
    const held = await rewriteUntilReleased(page, `**/v1/webhooks/${hook.id}/deliveries?*`, (body) => {
      for (const d of body.data) Object.assign(d, { state: 'pending', status_code: null, next_attempt_at_ms: Date.now() });
    });
    await evaluate(page, `location.hash = '#/webhooks/${hook.id}'`);
    const state = page.locator('table.deliveries tbody tr .badge');
    await waitForText(state, 'pending');
    await waitFor(
      async () => held.reads(),
      (n) => n >= 2,
      { what: 'the pending attempt read again' },
    );
    held.release();
    await waitForText(state, 'succeeded');
    expect(await page.locator('table.deliveries tbody tr').count()).toBe(1);
    await finish();
  });

  it('creates one webhook on a double click of Create webhook, and shows that one its secret', async () => {
    const { user, api } = await newAccount(server);
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    const creates: string[] = [];
    page.on('request', (sent) => {
      if (sent.method() === 'POST' && new URL(sent.url()).pathname === '/v1/webhooks') creates.push(sent.url());
    });
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('URL').fill(`${receiverUrl}/ok`);
    // Both presses come before the first answer: the second made a second webhook, whose secret replaced the first's.
    await page.getByRole('button', { name: 'Create webhook' }).dblclick();
    await waitForText(page.locator('#webhook-secret'), /^whsec_/);
    await page.getByRole('button', { name: 'Create webhook' }).waitFor();
    expect(creates).toHaveLength(1);
    const hooks = (await api.get('/v1/users/me/webhooks')).body.data;
    expect(hooks).toHaveLength(1);
    expect(await page.locator('.secret code').first().textContent()).toBe(hooks[0].id);
    await finish();
  });

  it("keeps a webhook's Delete button in view on a desktop screen, however long its name and URL", async () => {
    const { user, api } = await newAccount(server);
    const long = 'hook'.repeat(50);
    await api.post(`/v1/webhooks?url=${encodeURIComponent(`${receiverUrl}/${long}`)}&name=${long}`);
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/webhooks`, user.apiKey);
    const remove = page.getByRole('button', { name: /^Delete webhook / });
    await remove.waitFor();
    // The name and URL, each cut short, still pushed the Delete button past the table's edge, to be scrolled to.
    await expectInTable(page, remove);
    expect(await page.getByRole('cell', { name: `${receiverUrl}/${long}` }).getAttribute('title')).toBe(`${receiverUrl}/${long}`);
    await finish();
  });

  it("wraps a webhook's long URL on its delivery log rather than widening the page", async () => {
    const { user, api } = await newAccount(server);
    const long = 'hook'.repeat(100);
    const hook = (await api.post(`/v1/webhooks?url=${encodeURIComponent(`${receiverUrl}/${long}`)}&name=wide`)).body.data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/webhooks/${hook.id}`, user.apiKey);
    await page.getByText(`${receiverUrl}/${long}`).waitFor();
    // The URL ran on one line past the screen's edge, and the whole page scrolled sideways.
    expect(await evaluate<number>(page, 'document.documentElement.scrollWidth')).toBeLessThanOrEqual(
      await evaluate<number>(page, 'document.documentElement.clientWidth'),
    );
    await finish();
  });

  it("keeps a subscription's Delete button in view on a desktop screen, however long its emitter's and listener's names and its stream", async () => {
    const { user, api } = await newAccount(server);
    const long = 'hook'.repeat(50);
    const hook = (await api.post(`/v1/webhooks?url=${encodeURIComponent(`${receiverUrl}/ok`)}&name=${long}`)).body.data;
    const source = (
      await api.post('/v1/sources', {
        name: 'source'.repeat(33),
        component_code: `module.exports = { name: "Hook", version: "0.1.0", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body); } };`,
      })
    ).body.data;
    await api.post(`/v1/subscriptions?emitter_id=${source.id}&listener_id=${hook.id}&event_name=${'s'.repeat(200)}`);
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/subscriptions`, user.apiKey);
    const remove = page.getByRole('button', { name: /^Delete subscription / });
    await page
      .getByRole('cell', { name: new RegExp(hook.id) })
      .getByText(long)
      .waitFor();
    // The names ran at full length, pushing the Delete button past the table's edge, to be scrolled to.
    await expectInTable(page, remove);
    await finish();
  });

  it('sends one subscription request on a double click of Subscribe, and says so once', async () => {
    const { user, api } = await newAccount(server);
    const hook = (await api.post(`/v1/webhooks?url=${encodeURIComponent(`${receiverUrl}/ok`)}&name=once`)).body.data;
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/subscriptions`, user.apiKey);
    const creates: string[] = [];
    page.on('request', (sent) => {
      if (sent.method() === 'POST' && new URL(sent.url()).pathname === '/v1/subscriptions') creates.push(sent.url());
    });
    await page.getByLabel('Emitter').fill('dc_*');
    await page.getByLabel('Listener').fill(hook.id);
    // Both presses come before the first answer: each sent its POST, and each said "Subscribed".
    await page.getByRole('button', { name: 'Subscribe' }).dblclick();
    await page.getByRole('row').filter({ hasText: hook.id }).waitFor();
    await page.getByRole('button', { name: 'Subscribe', exact: true }).waitFor();
    expect(creates).toHaveLength(1);
    expect(await page.locator('.notice').filter({ hasText: 'Subscribed' }).count()).toBe(1);
    await finish();
  });

  it('creates webhooks and a subscription, shows each delivery with its status code and next retry, and deletes a webhook', async () => {
    const { user, api } = await newAccount(server);
    const source = (await api.post('/v1/sources', { component_code: HTTP_SOURCE, name: 'feed' })).body.data;
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    const nav = page.getByRole('navigation', { name: 'Sections' });
    await nav.getByRole('link', { name: 'Webhooks' }).click();

    await page.getByLabel('URL').fill('ftp://example.com/hook');
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await waitForText(page.locator('#webhook-url-error'), 'must start with http:// or https://');
    for (const [name, path] of [
      ['good', '/ok'],
      ['bad', '/fail'],
    ]) {
      await page.getByLabel('URL').fill(`${receiverUrl}${path}`);
      await page.getByLabel('Name').fill(name!);
      await page.getByRole('button', { name: 'Create webhook' }).click();
      await waitForText(page.locator('#webhook-secret'), /^whsec_/);
      await page.getByRole('button', { name: 'Done' }).click();
      await page.getByRole('rowheader', { name: name! }).waitFor();
    }
    const hooks = (await api.get('/v1/users/me/webhooks')).body.data;
    const good = hooks.find((h: any) => h.name === 'good');
    const bad = hooks.find((h: any) => h.name === 'bad');

    await nav.getByRole('link', { name: 'Subscriptions' }).click();
    for (const hook of [good, bad]) {
      await page.getByLabel('Emitter').fill(source.id);
      await page.getByLabel('Listener').fill(hook.id);
      await page.getByRole('button', { name: 'Subscribe' }).click();
      await page.getByRole('row').filter({ hasText: hook.id }).waitFor();
    }
    expect((await api.get('/v1/users/me/subscriptions')).body.data).toHaveLength(2);
    // Rows name what the ids are; the fields offer the account's sources, workflows and webhooks by name.
    const subscribed = page.getByRole('row').filter({ hasText: good.id });
    expect((await subscribed.getByRole('cell').allTextContents()).slice(0, 3)).toEqual([`feed ${source.id}`, 'default', `good ${good.id}`]);
    expect(await evaluate(page, `[...document.querySelectorAll('#sub-emitters option')].map((o) => o.label)`)).toEqual([
      'feed',
      'every source',
      'every workflow',
    ]);
    expect(await evaluate(page, `[...document.querySelectorAll('#sub-listeners option')].map((o) => o.label).sort()`)).toEqual(['bad', 'feed', 'good']);

    expect((await request('POST', source.configured_props.http.endpoint_url, { body: { order: 7 } })).status).toBe(200);
    await waitFor(
      async () => [(await api.get(`/v1/webhooks/${good.id}/deliveries`)).body.data, (await api.get(`/v1/webhooks/${bad.id}/deliveries`)).body.data],
      ([a, b]) => a.some((d: any) => d.state === 'succeeded') && b.some((d: any) => d.status_code === 500),
      { what: 'both deliveries attempted' },
    );

    await nav.getByRole('link', { name: 'Webhooks' }).click();
    // The last subscription's message stayed with its page.
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
    expect(await page.locator('.notice').textContent()).toBe('');
    await page.getByRole('link', { name: 'good' }).click();
    const goodRow = page.locator('table.deliveries tbody tr').first();
    await waitForText(goodRow, 'succeeded');
    expect(await goodRow.locator('td.status-code').textContent()).toBe('200');
    await nav.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('link', { name: 'bad' }).click();
    // The failed attempt, with the retry the schedule set for it (a pending row for that retry may be listed above it).
    const badRow = page.locator('table.deliveries tbody tr').filter({ has: page.locator('td.status-code', { hasText: '500' }) });
    await waitForText(badRow, 'failed');
    const badDelivery = (await api.get(`/v1/webhooks/${bad.id}/deliveries`)).body.data.find((d: any) => d.status_code === 500);
    expect(badDelivery).toMatchObject({ state: 'failed', attempt: 1, next_attempt_at_ms: expect.any(Number) });
    // An answer outside 2xx has no recorded error; the Error cell names the answer instead of staying empty.
    expect(await badRow.locator('td.summary').textContent()).toBe('answered HTTP 500');
    const retryCell = (await badRow.locator('td').last().textContent()) ?? '';
    expect(retryCell).not.toMatch(/^(none|—)$/);
    await screenshot(page, 'webhook-deliveries');
    expect(retryCell).toBe(
      await evaluate(page, `new Date(${badDelivery.next_attempt_at_ms}).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'long' })`),
    );

    // Delete, after confirmation: the webhook and the subscription naming it go.
    await nav.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('button', { name: 'Delete webhook bad' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete webhook' }).click();
    await page.getByRole('rowheader', { name: 'bad' }).waitFor({ state: 'detached' });
    // The focus went back to the Delete button that opened the dialog, which then left with its row: the page's content
    // has it now, not the document (where the next Tab started again from the top).
    await waitForFocus(page, 'main#main');
    expect((await api.get('/v1/users/me/webhooks')).body.data.map((h: any) => h.name)).toEqual(['good']);
    await nav.getByRole('link', { name: 'Subscriptions' }).click();
    await page.getByRole('button', { name: `Delete subscription of ${good.id} to ${source.id}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete subscription' }).click();
    await waitForText(page.getByRole('cell'), 'No subscriptions yet.');
    await waitForFocus(page, 'main#main');
    expect((await api.get('/v1/users/me/subscriptions')).body.data).toEqual([]);
    await finish();
  });

  it('offers every source of an account of more than 100 in the subscription and new-workflow pickers', async () => {
    const { user, api } = await newAccount(server);
    const component = (await api.post('/v1/components', { component_code: `module.exports = { name: "Quiet", version: "0.1.0", async run() {} };` })).body.data;
    const names = Array.from({ length: 105 }, (_, i) => `quiet-${String(i).padStart(3, '0')}`);
    for (let i = 0; i < names.length; i += 15) {
      const created = await Promise.all(names.slice(i, i + 15).map((name) => api.post('/v1/sources', { component_id: component.id, name })));
      expect(created.map((res) => res.status)).toEqual(created.map(() => 200));
    }
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    const optionLabels = (list: string) => evaluate<string[]>(page, `[...document.querySelectorAll('#${list} option')].map((o) => o.label).sort()`);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Subscriptions' }).click();
    await page.locator('#sub-emitters option[label="quiet-104"]').waitFor({ state: 'attached' });
    expect(await optionLabels('sub-emitters')).toEqual([...names, 'every source', 'every workflow'].sort());
    await page.goto(`${server.url}/#/workflows/new`);
    await page.getByLabel('Starts on').selectOption('source');
    await page.locator('#workflow-sources option').nth(104).waitFor({ state: 'attached' });
    expect(await optionLabels('workflow-sources')).toEqual(names);
    await finish();
  });

  it('lists every workflow of an account of more than 100, the rest a Load more away', async () => {
    const { user, api } = await newAccount(server);
    const names = Array.from({ length: 105 }, (_, i) => `flow-${String(i).padStart(3, '0')}`);
    const step = `export default defineComponent({ async run() { return 1; } });`;
    for (let i = 0; i < names.length; i += 15) {
      const created = await Promise.all(
        names.slice(i, i + 15).map((name) => api.post('/v1/workflows', { name, steps: [{ name: 'one', component_code: step }] })),
      );
      expect(created.map((res) => res.status)).toEqual(created.map(() => 200));
    }
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Workflows' }).click();
    const rows = page.locator('tbody th a');
    await rows.first().waitFor();
    // The page stopped at 100, saying nothing of the other 5.
    for (;;) {
      const shown = await rows.count();
      if (shown >= names.length) break;
      await page.getByRole('button', { name: 'Load more' }).click();
      await rows.nth(shown).waitFor();
    }
    expect((await rows.allTextContents()).sort()).toEqual(names);
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
    await finish();
  });

  it("names each subscription's Delete button with its stream, so that two on the same pair are told apart", async () => {
    const { user, api } = await newAccount(server);
    const source = (await api.post('/v1/sources', { component_code: HTTP_SOURCE, name: 'pair' })).body.data;
    const hook = (await api.post(`/v1/webhooks?url=${encodeURIComponent(`${receiverUrl}/ok`)}&name=pairhook`)).body.data;
    for (const stream of ['', '$errors']) {
      const made = await api.post(`/v1/subscriptions?emitter_id=${source.id}&listener_id=${hook.id}${stream ? `&event_name=${stream}` : ''}`);
      expect(made.status, made.text).toBe(200);
    }
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Subscriptions' }).click();
    const buttons = page.getByRole('button', { name: /^Delete subscription of / });
    await buttons.nth(1).waitFor();
    const labels = await buttons.evaluateAll((all) => all.map((button) => button.getAttribute('aria-label')));
    // Both were "Delete subscription of wh_… to dc_…": a screen reader could not tell which one a button deletes.
    expect(labels.sort()).toEqual([
      `Delete subscription of ${hook.id} to ${source.id}, stream $errors`,
      `Delete subscription of ${hook.id} to ${source.id}, stream default`,
    ]);
    await page.getByRole('button', { name: `Delete subscription of ${hook.id} to ${source.id}, stream $errors` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete subscription' }).click();
    await buttons.nth(1).waitFor({ state: 'detached' });
    expect((await api.get('/v1/users/me/subscriptions')).body.data.map((s: any) => s.event_name)).toEqual(['']);
    await finish();
  });

  it('lists every webhook of an account of more than 100', async () => {
    const { user, api } = await newAccount(server);
    const names = Array.from({ length: 105 }, (_, i) => `hook-${String(i).padStart(3, '0')}`);
    for (let i = 0; i < names.length; i += 15) {
      const created = await Promise.all(
        names.slice(i, i + 15).map((name) => api.post(`/v1/webhooks?url=${encodeURIComponent(`${receiverUrl}/ok`)}&name=${name}`)),
      );
      expect(created.map((res) => res.status)).toEqual(created.map(() => 200));
    }
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Webhooks' }).click();
    // The page read its first 100 and showed them as the whole list.
    await page.getByRole('rowheader', { name: 'hook-000' }).waitFor();
    expect((await page.locator('tbody th a').allTextContents()).sort()).toEqual(names);
    await finish();
  });

  it("links each delivered event to the event on its source's page, in the stream that holds it", async () => {
    const { user, api } = await newAccount(server);
    const failing = `module.exports = {
      name: "Picky", version: "0.1.0", props: { http: "$.interface.http" },
      async run(event) { if (event.body.fail) throw new Error("refused " + event.body.fail); this.$emit(event.body, { summary: "kept " + event.body.n }); },
    };`;
    const source = (await api.post('/v1/sources', { component_code: failing, name: 'picky' })).body.data;
    const emitting = `export default defineComponent({ async run({ $ }) { $.send.emit({ raw_event: { from: "workflow" } }); } });`;
    const workflow = (await api.post('/v1/workflows', { name: 'emitter', trigger: null, steps: [{ name: 'emit', component_code: emitting }] })).body.data;
    const hook = (await api.post(`/v1/webhooks?url=${encodeURIComponent(`${receiverUrl}/ok`)}&name=links`)).body.data;
    for (const [emitter, name] of [
      [source.id, ''],
      [source.id, '$errors'],
      [workflow.id, ''],
    ]) {
      const res = await api.post(`/v1/subscriptions?emitter_id=${emitter}&listener_id=${hook.id}${name ? `&event_name=${encodeURIComponent(name)}` : ''}`);
      expect(res.status, res.text).toBe(200);
    }
    for (const body of [{ n: 1 }, { n: 2 }, { fail: 'three' }]) {
      expect((await request('POST', source.configured_props.http.endpoint_url, { body })).status).toBe(200);
    }
    expect((await api.post(`/v1/workflows/${workflow.id}/run`, {})).status).toBe(202);
    const deliveries = (
      await waitFor(
        () => api.get(`/v1/webhooks/${hook.id}/deliveries`),
        (r) => r.body.data.filter((d: any) => d.state === 'succeeded').length === 4,
        { what: 'four deliveries' },
      )
    ).body.data;
    const emitted = (await api.get(`/v1/sources/${source.id}/event_summaries`)).body.data;
    const kept1 = emitted.find((e: any) => e.metadata.summary === 'kept 1');
    const [error] = (await api.get(`/v1/sources/${source.id}/$errors/event_summaries`)).body.data;
    const fromWorkflow = deliveries.find((d: any) => d.emitter_id === workflow.id);

    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.goto(`${server.url}/#/webhooks/${hook.id}`);
    const log = page.locator('table.deliveries');
    // A source's event is a link; a workflow's emit stays text (the console has no page for a workflow's events).
    await log.getByRole('link', { name: `Event ${kept1.id} of source ${source.id}` }).waitFor();
    expect(await log.getByRole('link').count()).toBe(3);
    expect(await log.locator('tr').filter({ hasText: fromWorkflow.event_id }).getByRole('link').count()).toBe(0);

    await log.getByRole('link', { name: `Event ${kept1.id} of source ${source.id}` }).click();
    expect(page.url()).toContain(`#/sources/${source.id}/events/${kept1.id}`);
    await page.getByRole('heading', { name: 'picky', level: 1 }).waitFor();
    await page.getByRole('heading', { name: `Event ${kept1.id}` }).waitFor();
    await waitForText(page.getByRole('figure', { name: 'Event JSON' }), '"n": 1');
    await page.getByRole('tab', { name: 'Events', selected: true }).waitFor();

    // An $errors event opens on the $errors tab.
    await page.goBack();
    await log.getByRole('link', { name: `Event ${error.id} of source ${source.id}` }).click();
    await page.getByRole('tab', { name: '$errors', selected: true }).waitFor();
    await page.getByRole('heading', { name: `Event ${error.id}` }).waitFor();
    await waitForText(page.getByRole('figure', { name: 'Event JSON' }), 'refused three');

    // Deleted since: the page says so instead of opening nothing.
    expect((await api.delete(`/v1/sources/${source.id}/events?start_id=${kept1.id}&end_id=${kept1.id}`)).status).toBe(202);
    await page.goto(`${server.url}/#/sources/${source.id}/events/${kept1.id}`);
    await waitForText(page.getByRole('alert'), `Event ${kept1.id} is not among the events this source keeps`);
    await finish();
  });

  it("shows the free plan's quotas as bars and rotates the key: the old key stops working, the tab goes on with the new one", async () => {
    const { user, api } = await newAccount(server);
    const source = (await api.post('/v1/sources', { component_code: HTTP_SOURCE, name: 'counted' })).body.data;
    for (const n of [1, 2, 3]) await request('POST', source.configured_props.http.endpoint_url, { body: { n } });
    const me = await waitFor(
      () => api.get('/v1/users/me'),
      (r) => r.body.data.daily_invocations_used === 3,
      { what: 'three invocations counted' },
    );

    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Account', exact: true }).click();
    expect(await page.locator('#plan').textContent()).toBe('Free');
    const invocations = page.getByRole('meter', { name: /Invocations/ });
    await invocations.waitFor();
    expect(await invocations.getAttribute('value')).toBe('3');
    expect(await invocations.getAttribute('max')).toBe(String(me.body.data.daily_invocations_quota));
    expect(await page.locator('#quota-invocations-text').textContent()).toBe(`3 of ${me.body.data.daily_invocations_quota.toLocaleString('en-US')}`);
    const compute = page.getByRole('meter', { name: /Compute time/ });
    expect(await compute.getAttribute('max')).toBe(String(me.body.data.daily_compute_time_quota));
    expect(Number(await compute.getAttribute('value'))).toBeGreaterThanOrEqual(0);
    // The quota in minutes, not in milliseconds.
    expect(await page.locator('#quota-compute-text').textContent()).toMatch(
      new RegExp(`^\\d+(\\.\\d+)? (ms|s) of ${me.body.data.daily_compute_time_quota / 60_000} min$`),
    );
    await screenshot(page, 'account');

    // The rotation is held on its way to the server, so that the page shows what it shows while one runs.
    const { held: rotations, release } = await holdUntilReleased(page, '**/v1/users/me/api_key');
    await page.getByRole('button', { name: 'Rotate API key' }).click();
    await page.getByRole('dialog', { name: 'Rotate the API key?' }).getByRole('button', { name: 'Rotate key' }).click();
    const busy = page.getByRole('button', { name: 'Rotating…' });
    await busy.waitFor();
    expect(await busy.getAttribute('aria-disabled')).toBe('true');
    // A press while it runs asks nothing and rotates nothing more.
    await busy.click({ force: true });
    expect(await page.getByRole('dialog').count()).toBe(0);
    release();
    await waitForText(page.getByRole('status'), 'Rotated the API key: the old key no longer works.');
    await page.getByRole('button', { name: 'Rotate API key' }).waitFor();
    expect(rotations).toHaveLength(1);
    const newKey = (await page.locator('#new-api-key').textContent()) ?? '';
    expect(newKey).toMatch(/^trb_/);
    expect(newKey).not.toBe(user.apiKey);
    expect((await api.get('/v1/users/me')).status).toBe(401);
    expect((await client(server.url, newKey).get('/v1/users/me')).body.data.id).toBe(user.id);
    expect(await evaluate(page, 'sessionStorage.getItem("tributary.apiKey")')).toBe(newKey);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Sources' }).click();
    await page.getByRole('rowheader', { name: 'counted' }).waitFor();
    await finish();
  });

  it("shows a paid plan's billing period instead of quota bars", async () => {
    const user = await server.createUser({ plan: 'paid' });
    const { page, finish } = await openSignedIn(browser, server.url, user.apiKey);
    await page.goto(`${server.url}/#/account`);
    await waitForText(page.locator('#plan'), 'Paid');
    expect(await page.locator('#billing-invocations').textContent()).toBe('0');
    expect(await page.getByRole('meter').count()).toBe(0);
    await finish();
  });
});
