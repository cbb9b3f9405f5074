// The console in Chromium: a webhook's delivery log says what became of a failed attempt's retry, never a retry time
// already past.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Locator } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from '../helpers/client.js';
import { DIALECTS, type TestServer } from '../helpers/server.js';
import { BROWSER_SUITE, newAccount, openSignedIn, waitForText, withServerAndBrowser } from './browser.js';

const HTTP_SOURCE = `module.exports = {
  name: "Hook", version: "0.1.0", props: { http: "$.interface.http" },
  async run(event) { this.$emit(event.body); },
};`;

/** Each row's Next retry cell (the last), newest attempt first. */
const retryCells = (table: Locator) => table.locator('tbody td:last-child').allTextContents();

describe.each(DIALECTS)('web console: retries in the delivery log (%s)', BROWSER_SUITE, (dialect) => {
  let server: TestServer;
  let browser: Browser;
  let receiver: http.Server;
  let origin: string;
  // /flaky/… answers its first request 500 and holds the second until `answerRetry`, then answers 200 (each path on
  // its own: a test tried again has a new one); any other path always 500.
  const flakyRequests = new Map<string, number>();
  let flakyPaths = 0;
  let retryArrived: () => void = () => {};
  let answerRetry: () => void = () => {};

  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (!req.url?.startsWith('/flaky/')) return res.writeHead(500).end();
        const count = (flakyRequests.get(req.url) ?? 0) + 1;
        flakyRequests.set(req.url, count);
        if (count === 1) return res.writeHead(500).end();
        answerRetry = () => res.end();
        retryArrived();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  });
  withServerAndBrowser(
    dialect,
    (started, launched) => {
      server = started;
      browser = launched;
    },
    { allowPrivateNetwork: true, webhookRetrySchedule: [1] },
  );
  afterAll(async () => {
    answerRetry();
    receiver?.closeAllConnections();
    await new Promise((resolve) => receiver?.close(resolve));
  });

  async function subscribedHook(path: string) {
    const { user, api } = await newAccount(server);
    const source = (await api.post('/v1/sources', { component_code: HTTP_SOURCE, name: 'feed' })).body.data;
    const hook = (await api.post(`/v1/webhooks?url=${encodeURIComponent(origin + path)}&name=sink`)).body.data;
    expect((await api.post(`/v1/subscriptions?emitter_id=${source.id}&listener_id=${hook.id}`)).status).toBe(200);
    return { user, api, source, hook };
  }

  it('says a retry is on its way once its time has passed, then what the retry gave', async () => {
    const { user, api, source, hook } = await subscribedHook(`/flaky/${++flakyPaths}`);
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/webhooks/${hook.id}`, user.apiKey);
    const table = page.locator('table.deliveries');
    await waitForText(table, 'Nothing delivered yet.');
    const arrived = new Promise<void>((resolve) => {
      retryArrived = resolve;
    });
    expect((await request('POST', source.configured_props.http.endpoint_url, { body: { n: 1 } })).status).toBe(200);
    await arrived;
    // The retry is at the receiver, unanswered: the failed attempt's retry time is past, and the retry itself pending.
    const log = (await api.get(`/v1/webhooks/${hook.id}/deliveries`)).body.data;
    expect(log.map((d: any) => [d.attempt, d.state])).toEqual([
      [2, 'pending'],
      [1, 'failed'],
    ]);
    expect(log[1].next_attempt_at_ms).toBeLessThanOrEqual(Date.now());
    await waitForText(table.locator('tbody td:last-child'), 'retrying…');
    expect(await retryCells(table)).toEqual(['sending…', 'retrying…']);

    answerRetry();
    const rows = table.locator('tbody tr');
    await waitForText(rows.first().locator('.badge'), 'succeeded');
    expect(await table.locator('tbody .badge').allTextContents()).toEqual(['succeeded', 'failed']);
    expect(await retryCells(table)).toEqual(['—', 'retried: attempt 2 succeeded']);
    await finish();
  });

  it('says a failed retry and the end of the schedule, with no retry time left on either attempt', async () => {
    const { user, api, source, hook } = await subscribedHook('/broken');
    const { page, finish } = await openSignedIn(browser, `${server.url}/#/webhooks/${hook.id}`, user.apiKey);
    const table = page.locator('table.deliveries');
    await waitForText(table, 'Nothing delivered yet.');
    expect((await request('POST', source.configured_props.http.endpoint_url, { body: { n: 1 } })).status).toBe(200);
    await waitForText(table.locator('tbody td:last-child'), 'retried: attempt 2 failed');
    const log = (await api.get(`/v1/webhooks/${hook.id}/deliveries`)).body.data;
    expect(log.map((d: any) => [d.attempt, d.state, d.status_code, d.next_attempt_at_ms === null])).toEqual([
      [2, 'failed', 500, true],
      [1, 'failed', 500, false],
    ]);
    expect(await table.locator('tbody .badge').allTextContents()).toEqual(['failed', 'failed']);
    expect(await retryCells(table)).toEqual(['none', 'retried: attempt 2 failed']);
    await finish();
  });
});
