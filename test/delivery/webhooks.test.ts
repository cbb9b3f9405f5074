// Webhooks: the API, signed deliveries as a Standard Webhooks receiver checks them, retries, 410, restarts, the network guard.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { TEST_DATABASE_URL } from '../helpers/databases.js';
import { waitFor } from '../helpers/wait.js';
import { client, request } from '../helpers/client.js';
import { retryAfterMs } from '../../src/delivery/webhooks/attempt.js';
import { signPayload } from '../../src/delivery/webhooks/signing.js';
import {
  claimDue,
  insertDeliveries,
  pendingDelivery,
  pruneLog,
  renewDeliveryLeases,
  type ClaimedDelivery,
  type DeliveryRow,
} from '../../src/store/deliveries.js';
import { earliestDue, nextFutureDueMs } from '../../src/store/account-queues.js';
import type { Store } from '../../src/store/database.js';
import { newId } from '../../src/model/ids.js';
import { account, emitsOf, startReceiver, withPausedNode, type Receiver } from './helpers.js';

describe('webhook signing and Retry-After parsing', () => {
  it('signs as the Standard Webhooks library does', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const body = '{"id":"1-0"}';
    const signed = signPayload(secret, 'msg_1', 1_700_000_000, body);
    expect(signed).toBe(new Webhook(secret).sign('msg_1', new Date(1_700_000_000 * 1000), body));
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2030-01-01T00:00:00Z');
    expect(retryAfterMs('7', now)).toBe(7000);
    expect(retryAfterMs('Tue, 01 Jan 2030 00:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('Mon, 31 Dec 2029 00:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs('Sunday, 01-Jan-30 00:00:30 GMT', now)).toBe(30_000);
    // No seconds (which are digits only) and no date: the schedule applies, not an immediate retry (Date.parse reads
    // them as days of 2001).
    expect(retryAfterMs('1.5', now)).toBeUndefined();
    expect(retryAfterMs('-5', now)).toBeUndefined();
    expect(retryAfterMs(undefined, now)).toBeUndefined();
    expect(retryAfterMs('999999999', now)).toBe(24 * 3600 * 1000);
  });
});

/** What another node's claim takes at `nowMs`, with room for everything due of every account. */
async function claimEverythingDue(db: Store['db'], owner: string, nowMs: number): Promise<ClaimedDelivery[]> {
  const due = await earliestDue(db, 'webhook_deliveries', nowMs, 1000);
  return claimDue(
    db,
    owner,
    nowMs,
    60_000,
    due.map((row) => row.id),
  );
}

/** A delivery row as the store keeps it: a first attempt, pending and unleased unless `fields` say otherwise. */
function deliveryRow(webhookId: string, fields: Partial<DeliveryRow> = {}): DeliveryRow {
  const id = newId('dl');
  const pending = pendingDelivery({
    id,
    message_id: id,
    webhook_id: webhookId,
    user_id: 'u',
    emitter_id: 'dc',
    event_id: '1-0',
    payload: '{}',
    attempt: 1,
    next_attempt_ms: Date.now(),
    created_ms: Date.now(),
  });
  return { ...pending, ...fields };
}

describe.each(DIALECTS)('webhooks on %s', (dialect) => {
  let server: TestServer;
  let receiver: Receiver;
  let path = 0;
  /** A fresh path per test, so each test sees only its own requests. */
  const nextPath = () => `/hook-${dialect}-${++path}`;

  beforeAll(async () => {
    receiver = await startReceiver();
    server = await startTestServer(dialect, { allowPrivateNetwork: true, webhookRetrySchedule: [1, 1] });
  });
  afterAll(async () => {
    await server?.destroy();
    await receiver?.close();
  });

  it('creates a webhook with a whsec_ secret shown once, lists, reads and deletes it', async () => {
    const a = await account(server);
    const created = await a.api.post(`/v1/webhooks?url=${encodeURIComponent('https://example.com:8443/hooks/in?x=1')}&name=orders&description=all%20orders`);
    expect(created.status).toBe(200);
    const webhook = created.body.data;
    expect(webhook).toEqual({
      id: expect.stringMatching(/^wh_[0-9a-z]{26}$/),
      user_id: expect.stringMatching(/^u_/),
      name: 'orders',
      description: 'all orders',
      url: 'https://example.com:8443/hooks/in?x=1',
      active: true,
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{32}$/),
    });
    expect(Buffer.from(webhook.secret.slice(6), 'base64')).toHaveLength(24);
    const { secret: _secret, user_id: _user, ...shown } = webhook;
    expect((await a.api.get(`/v1/webhooks/${webhook.id}`)).body).toEqual({ data: shown });
    const second = await a.createWebhook('http://example.org/');
    const list = await a.api.get('/v1/users/me/webhooks?limit=1');
    expect(list.status).toBe(200);
    expect(list.body.page_info).toMatchObject({ total_count: 2, count: 1 });
    expect(list.body.data).toEqual([
      {
        id: second.id,
        name: 'hook',
        description: 'test',
        url: 'http://example.org/',
        active: true,
        created_at: expect.any(Number),
        updated_at: expect.any(Number),
      },
    ]);
    const older = await a.api.get(`/v1/users/me/webhooks?limit=1&after=${list.body.page_info.end_cursor}`);
    expect(older.body.data).toEqual([shown]);

    const other = await account(server);
    expect((await other.api.get(`/v1/webhooks/${webhook.id}`)).status).toBe(404);
    expect((await other.api.delete(`/v1/webhooks/${webhook.id}`)).status).toBe(404);
    expect((await other.api.get(`/v1/webhooks/${webhook.id}/deliveries`)).status).toBe(404);
    expect((await a.api.delete(`/v1/webhooks/${webhook.id}`)).status).toBe(204);
    expect((await a.api.get(`/v1/webhooks/${webhook.id}`)).status).toBe(404);
    expect((await a.api.get('/v1/users/me/webhooks')).body.page_info.total_count).toBe(1);
  });

  it('refuses URLs without http or https and a host', async () => {
    const a = await account(server);
    for (const url of ['example.com/hook', 'ftp://example.com/x', 'http://', 'javascript:alert(1)', 'not a url', '']) {
      const res = await a.api.post(`/v1/webhooks?url=${encodeURIComponent(url)}&name=x&description=y`);
      expect(res.status, url).toBe(400);
      expect(res.body.code).toBe('invalid_request');
    }
    expect((await a.api.post('/v1/webhooks?name=x')).status).toBe(400);
    // Credentials in the URL would never be sent, and would be shown in every list.
    for (const url of ['https://user:pa55@example.com/hook', 'https://user@example.com/hook']) {
      const res = await a.api.post(`/v1/webhooks?url=${encodeURIComponent(url)}&name=x&description=y`);
      expect([res.status, res.body]).toEqual([
        400,
        {
          error: 'url must not hold a user name or password (user:password@host): they are not sent; receivers check the webhook-signature header instead',
          code: 'invalid_request',
        },
      ]);
    }
    // URL parsing would drop these, or percent-encode a C1 control (U+0085 NEL, U+009B CSI), so the URL stored would
    // not be the one called.
    const controls = [
      'http://example.com/\r\nX-Injected: 1',
      'http://exam\tple.com/',
      ' http://example.com/',
      'https://example.com/a\u0085b',
      'https://example.com/\u009b2J',
    ];
    for (const url of controls) {
      const res = await a.api.post(`/v1/webhooks?url=${encodeURIComponent(url)}&name=x&description=y`);
      expect(res.status, JSON.stringify(url)).toBe(400);
      expect(res.body).toEqual({
        error: `url ${JSON.stringify(url)} holds control characters or surrounding spaces; send the URL alone`,
        code: 'invalid_request',
      });
    }
    const portZero = await a.api.post(`/v1/webhooks?url=${encodeURIComponent('http://example.com:0/hook')}&name=x`);
    expect([portZero.status, portZero.body]).toEqual([
      400,
      { error: 'url "http://example.com:0/hook" names port 0, which nothing can be sent to', code: 'invalid_request' },
    ]);
    // A port past 65535 was "not an absolute URL"; a #fragment was kept and shown, though deliveries never carry it.
    const bigPort = await a.api.post(`/v1/webhooks?url=${encodeURIComponent('http://example.com:99999/')}&name=x`);
    expect([bigPort.status, bigPort.body]).toEqual([
      400,
      { error: 'url "http://example.com:99999/" names port 99999; ports go from 1 to 65535', code: 'invalid_request' },
    ]);
    const fragment = await a.api.post(`/v1/webhooks?url=${encodeURIComponent('https://example.com/ok#frag')}&name=x`);
    expect([fragment.status, fragment.body]).toEqual([
      400,
      { error: 'url "https://example.com/ok#frag" holds a #fragment, which a request never sends; leave it out', code: 'invalid_request' },
    ]);
    expect((await a.api.get('/v1/users/me/webhooks')).body.page_info.total_count).toBe(0);
    // The same byte percent-encoded is the URL as it is sent, and stays accepted as given.
    const encoded = await a.api.post(`/v1/webhooks?url=${encodeURIComponent('https://example.com/a%C2%85b')}&name=x`);
    expect([encoded.status, encoded.body.data?.url]).toEqual([200, 'https://example.com/a%C2%85b']);
  });

  it("refuses this server's own HTTP endpoints, where each delivery would run a source again with no hop limit", async () => {
    const a = await account(server);
    const endpoint = `${server.url}/e/en0123456789abcdef`;
    for (const url of [endpoint, `${endpoint}/deeper?x=1`, `${server.url}/%65/en0123456789abcdef`, `${server.url.replace('127.0.0.1', '127.0.0.1.')}/e/x`]) {
      const res = await a.api.post(`/v1/webhooks?url=${encodeURIComponent(url)}&name=loop`);
      expect([res.status, res.body], url).toEqual([
        400,
        {
          error: `url ${JSON.stringify(url)} is one of this server's own HTTP endpoints: each event delivered there would run its source again, a loop no hop limit stops; subscribe the source to the emitter instead (POST /v1/subscriptions)`,
          code: 'invalid_request',
        },
      ]);
    }
    expect((await a.api.get('/v1/users/me/webhooks')).body.page_info.total_count).toBe(0);
  });

  it('delivers the event summary with a signature that a Standard Webhooks receiver accepts', async () => {
    const a = await account(server);
    const at = nextPath();
    const hook = await a.createWebhook(`${receiver.url}${at}`);
    const source = await a.deploy();
    await a.subscribe(source, hook.id);
    await a.runAndWait(source, emitsOf([{ event: { order: 42 }, meta: { id: 'o-42', summary: 'order 42' } }]));
    const [request] = await waitFor(
      async () => receiver.on(at),
      (r) => r.length === 1,
      { what: 'the delivery' },
    );
    const [summary] = await a.eventsOf(source, 1);
    expect(request!.method).toBe('POST');
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers['webhook-id']).toMatch(/^dl_/);
    expect(Number(request!.headers['webhook-timestamp'])).toBeCloseTo(Date.now() / 1000, -2);
    const verified = new Webhook(hook.secret).verify(request!.body, request!.headers as Record<string, string>);
    expect(verified).toEqual(summary);
    expect(() => new Webhook(hook.secret).verify(request!.body.replace('42', '43'), request!.headers as Record<string, string>)).toThrow();
    const log = await a.deliveriesOf(hook.id, (rows) => rows.length === 1 && rows[0].state === 'succeeded');
    expect(log).toEqual([
      {
        id: request!.headers['webhook-id'],
        event_id: summary.id,
        emitter_id: source,
        attempt: 1,
        state: 'succeeded',
        status_code: 200,
        error: null,
        duration_ms: expect.any(Number),
        attempted_at_ms: expect.any(Number),
        next_attempt_at_ms: null,
        created_at: expect.any(Number),
      },
    ]);
  });

  it('retries a failed delivery on the schedule with the same webhook-id, and gives up after the last retry', async () => {
    const a = await account(server);
    const okAt = nextPath();
    const failAt = nextPath();
    receiver.answerAt(failAt, () => ({ status: 500 }));
    receiver.answerAt(okAt, (_, nth) => (nth === 1 ? { status: 500 } : { status: 200 }));
    const flaky = await a.createWebhook(`${receiver.url}${okAt}`);
    const broken = await a.createWebhook(`${receiver.url}${failAt}`);
    const source = await a.deploy();
    await a.subscribe(source, flaky.id);
    await a.subscribe(source, broken.id);
    await a.runAndWait(source, emitsOf([{ event: 'retry me' }]));

    const flakyLog = await a.deliveriesOf(flaky.id, (rows) => rows[0]?.state === 'succeeded', 'the retry to succeed');
    expect(flakyLog.map((d) => [d.attempt, d.state, d.status_code])).toEqual([
      [2, 'succeeded', 200],
      [1, 'failed', 500],
    ]);
    expect(flakyLog[1].next_attempt_at_ms).toBeGreaterThanOrEqual(flakyLog[1].attempted_at_ms + 1000);
    const sent = receiver.on(okAt);
    expect(sent).toHaveLength(2);
    expect(sent[0]!.headers['webhook-id']).toBe(sent[1]!.headers['webhook-id']);
    expect(sent[0]!.body).toBe(sent[1]!.body);

    // Schedule [1, 1]: the first attempt and two retries, then no more.
    const brokenLog = await a.deliveriesOf(broken.id, (rows) => rows.length === 3 && rows.every((d) => d.state === 'failed'), 'three failed attempts');
    expect(brokenLog.map((d) => [d.attempt, d.status_code, d.next_attempt_at_ms === null])).toEqual([
      [3, 500, true],
      [2, 500, false],
      [1, 500, false],
    ]);
  });

  it('honours Retry-After instead of the schedule', async () => {
    const slow = await startTestServer(dialect, { allowPrivateNetwork: true, webhookRetrySchedule: [3600] });
    try {
      const a = await account(slow);
      const at = nextPath();
      receiver.answerAt(at, (_, nth) => (nth === 1 ? { status: 503, headers: { 'retry-after': '1' } } : { status: 200 }));
      const hook = await a.createWebhook(`${receiver.url}${at}`);
      const source = await a.deploy();
      await a.subscribe(source, hook.id);
      await a.runAndWait(source, emitsOf([{ event: 'later' }]));
      const log = await a.deliveriesOf(hook.id, (rows) => rows[0]?.state === 'succeeded', 'the retry Retry-After asked for');
      expect(log.map((d) => [d.attempt, d.state, d.status_code])).toEqual([
        [2, 'succeeded', 200],
        [1, 'failed', 503],
      ]);
      expect(log[1].next_attempt_at_ms - log[1].attempted_at_ms).toBeLessThan(3_600_000);
    } finally {
      await slow.destroy();
    }
  });

  it('records a 2xx whose body is too large to read as a success, and keeps delivering', async () => {
    const a = await account(server);
    const at = nextPath();
    receiver.answerAt(at, (r) => (JSON.parse(r.body).event === 'large answer' ? { status: 202, body: 'x'.repeat(200 * 1024) } : { status: 200 }));
    const hook = await a.createWebhook(`${receiver.url}${at}`);
    const source = await a.deploy();
    await a.subscribe(source, hook.id);
    await a.runAndWait(source, emitsOf([{ event: 'large answer' }]));
    await a.runAndWait(source, emitsOf([{ event: 'next' }]));
    const log = await a.deliveriesOf(hook.id, (rows) => rows.length === 2 && rows.every((d) => d.state === 'succeeded'), 'both deliveries');
    expect(log.map((d) => d.status_code).sort()).toEqual([200, 202]);
    expect(
      receiver
        .on(at)
        .map((r) => JSON.parse(r.body).event)
        .sort(),
    ).toEqual(['large answer', 'next']);
  });

  it('deactivates a webhook whose URL answers 410 and sends it nothing more', async () => {
    const a = await account(server);
    const at = nextPath();
    receiver.answerAt(at, () => ({ status: 410 }));
    const hook = await a.createWebhook(`${receiver.url}${at}`);
    const source = await a.deploy();
    await a.subscribe(source, hook.id);
    await a.runAndWait(source, emitsOf([{ event: 'one' }]));
    const log = await a.deliveriesOf(hook.id, (rows) => rows[0]?.state === 'failed', 'the 410 to be recorded');
    expect(log.map((d) => [d.attempt, d.status_code, d.next_attempt_at_ms])).toEqual([[1, 410, null]]);
    const shown = await a.api.get(`/v1/webhooks/${hook.id}`);
    expect(shown.body.data.active).toBe(false);
    expect(shown.body.data.updated_at).toBeGreaterThanOrEqual(shown.body.data.created_at);
    // Deliveries are queued in the commit that stores the events: once the events are visible, none was queued.
    await a.runAndWait(source, emitsOf([{ event: 'two' }]));
    await a.eventsOf(source, 2);
    expect((await a.api.get(`/v1/webhooks/${hook.id}/deliveries`)).body.page_info.total_count).toBe(1);
    expect(receiver.on(at)).toHaveLength(1);
  });

  // A 410 answered by mistake (a receiver's deploy gone wrong) left the webhook off for good: a new one meant a new
  // secret for the receiver and new subscriptions.
  it('turns a retired webhook back on with PATCH, and renames one; events committed from then on are delivered', async () => {
    const a = await account(server);
    const at = nextPath();
    let gone = true;
    receiver.answerAt(at, () => ({ status: gone ? 410 : 200 }));
    const hook = await a.createWebhook(`${receiver.url}${at}`);
    const source = await a.deploy();
    await a.subscribe(source, hook.id);
    await a.runAndWait(source, emitsOf([{ event: 'one' }]));
    await a.deliveriesOf(hook.id, (rows) => rows[0]?.state === 'failed', 'the 410 to be recorded');
    expect((await a.api.get(`/v1/webhooks/${hook.id}`)).body.data.active).toBe(false);
    gone = false;

    const on = await a.api.patch(`/v1/webhooks/${hook.id}`, { active: true, name: 'orders again' });
    expect(on.status).toBe(200);
    expect(on.body.data).toEqual({ ...hook, user_id: undefined, secret: undefined, name: 'orders again', active: true, updated_at: expect.any(Number) });
    expect(on.body.data).not.toHaveProperty('secret');
    expect((await a.api.get(`/v1/webhooks/${hook.id}`)).body.data).toEqual(on.body.data);
    await a.runAndWait(source, emitsOf([{ event: 'two' }]));
    const log = await a.deliveriesOf(hook.id, (rows) => rows.some((d) => d.state === 'succeeded'), 'the delivery after it was turned on');
    expect(log.map((d) => [d.state, d.status_code])).toEqual([
      ['succeeded', 200],
      ['failed', 410],
    ]);
    // Signed with the secret it always had.
    const delivered = receiver.on(at).at(-1)!;
    expect(JSON.parse(delivered.body).event).toBe('two');
    expect(() => new Webhook(hook.secret).verify(delivered.body, delivered.headers as Record<string, string>)).not.toThrow();

    const renamed = await a.api.patch(`/v1/webhooks/${hook.id}`, { description: null });
    expect([renamed.status, renamed.body.data.description, renamed.body.data.name]).toEqual([200, null, 'orders again']);
    for (const [body, error, details] of [
      [{}, 'give at least one of active (true, to turn it back on), name and description', undefined],
      [{ active: false }, 'invalid body: active must be true', [{ in: 'body', field: 'active', message: 'must be true' }]],
      // Of another type: the one value it may be says it all, not also "must be boolean".
      [{ active: 'yes' }, 'invalid body: active must be true', [{ in: 'body', field: 'active', message: 'must be true' }]],
      [{ url: 'https://example.com' }, 'invalid body: must not have the field "url"', [{ in: 'body', field: 'url', message: 'must not have the field "url"' }]],
    ] as const) {
      const refused = await a.api.patch(`/v1/webhooks/${hook.id}`, body);
      expect([refused.status, refused.body], JSON.stringify(body)).toEqual([400, { error, code: 'invalid_request', ...(details && { details }) }]);
    }
    expect((await a.api.get(`/v1/webhooks/${hook.id}`)).body.data).toEqual(renamed.body.data);
    const other = await account(server);
    expect((await other.api.patch(`/v1/webhooks/${hook.id}`, { active: true })).body).toEqual({ error: `webhook "${hook.id}" not found`, code: 'not_found' });
  });

  it('shows no retry time on earlier failed attempts once a 410 has ended the retries', async () => {
    const a = await account(server);
    const at = nextPath();
    receiver.answerAt(at, (r) => (JSON.parse(r.body).event === 'first' ? { status: 500, headers: { 'retry-after': '30' } } : { status: 410 }));
    const hook = await a.createWebhook(`${receiver.url}${at}`);
    const source = await a.deploy();
    await a.subscribe(source, hook.id);
    await a.runAndWait(source, emitsOf([{ event: 'first' }]));
    await a.deliveriesOf(hook.id, (rows) => rows.some((d) => d.status_code === 500), 'the 500 to be recorded');
    await a.runAndWait(source, emitsOf([{ event: 'second' }]));
    const log = await a.deliveriesOf(hook.id, (rows) => rows.some((d) => d.status_code === 410), 'the 410 to be recorded');
    expect(log.map((d) => [d.attempt, d.state, d.status_code ?? null, d.next_attempt_at_ms]).sort()).toEqual([
      [1, 'failed', 410, null],
      [1, 'failed', 500, null],
      [2, 'failed', null, null],
    ]);
  });

  // The 410 fails the webhook's pending attempts, but those already on their way reach the receiver: each is logged
  // with the answer it got, not as "not sent" (a delivered event was shown failed), and a failure is not retried.
  it('logs the attempts already on their way when a 410 came with their own answers, and retries none', async () => {
    const a = await account(server);
    const at = nextPath();
    let answerGone!: () => void;
    let answerOthers!: () => void;
    const gone = new Promise<void>((resolve) => {
      answerGone = resolve;
    });
    const others = new Promise<void>((resolve) => {
      answerOthers = resolve;
    });
    const answers: Record<string, { status: number; after: Promise<void> }> = {
      first: { status: 410, after: gone },
      second: { status: 200, after: others },
      third: { status: 500, after: others },
    };
    receiver.answerAt(at, (r) => answers[JSON.parse(r.body).event as string]!);
    const hook = await a.createWebhook(`${receiver.url}${at}`);
    const source = await a.deploy();
    await a.subscribe(source, hook.id);
    await a.runAndWait(source, emitsOf([{ event: 'first' }, { event: 'second' }, { event: 'third' }]));
    await waitFor(
      async () => receiver.on(at).length,
      (n) => n === 3,
      { what: 'the three attempts to reach the receiver' },
    );
    answerGone();
    await waitFor(
      () => a.api.get(`/v1/webhooks/${hook.id}`),
      (r) => r.body.data.active === false,
      { what: 'the 410 to deactivate the webhook' },
    );
    answerOthers();
    const log = await a.deliveriesOf(
      hook.id,
      (rows) => rows.some((d) => d.status_code === 200) && rows.some((d) => d.status_code === 500),
      'the answers of the attempts on their way to be recorded',
    );
    expect(log.map((d) => [d.attempt, d.state, d.status_code ?? null, d.error ?? null, d.next_attempt_at_ms]).sort()).toEqual([
      [1, 'failed', 410, null, null],
      [1, 'failed', 500, null, null],
      [1, 'succeeded', 200, null, null],
    ]);
    expect(receiver.on(at)).toHaveLength(3);
  });

  it('pages the delivery log newest first', async () => {
    const a = await account(server);
    const hook = await a.createWebhook(`${receiver.url}${nextPath()}`);
    const source = await a.deploy();
    await a.subscribe(source, hook.id);
    await a.runAndWait(source, emitsOf([1, 2, 3].map((n) => ({ event: n }))));
    const all = await a.deliveriesOf(hook.id, (rows) => rows.length === 3 && rows.every((d) => d.state === 'succeeded'));
    const events = await a.eventsOf(source, 3);
    expect(all.map((d) => d.event_id)).toEqual(events.map((e) => e.id));
    const first = await a.api.get(`/v1/webhooks/${hook.id}/deliveries?limit=2`);
    expect(first.body.page_info).toMatchObject({ total_count: 3, count: 2 });
    const rest = await a.api.get(`/v1/webhooks/${hook.id}/deliveries?limit=2&after=${first.body.page_info.end_cursor}`);
    expect(rest.body.data.map((d: { id: string }) => d.id)).toEqual([all[2].id]);
  });

  /**
   * Runs the source and returns the deliveries of `webhookId` that another node's sender (or this one's poll)
   * can claim the instant the run's events are committed.
   */
  async function claimedAtCommit(a: { runAndWait(id: string, event: unknown): Promise<void> }, source: string, webhookId: string, event: unknown) {
    const { store, bus } = server.running.services;
    let claims: Promise<ClaimedDelivery[]> | undefined;
    const unsubscribe = bus.subscribe((emitterId) => {
      if (emitterId === source) claims ??= claimEverythingDue(store.db, 'another-node', Date.now());
    });
    await a.runAndWait(source, event);
    unsubscribe();
    expect(claims).toBeDefined();
    return (await claims!).filter((d) => d.webhook_id === webhookId);
  }

  it('leases a delivery to the sender in the commit that queues it, so that no other claimer takes it', async () => {
    const a = await account(server);
    const at = nextPath();
    const hook = await a.createWebhook(`${receiver.url}${at}`);
    const source = await a.deploy();
    await a.subscribe(source, hook.id);
    expect(await claimedAtCommit(a, source, hook.id, emitsOf([1, 2, 3].map((n) => ({ event: n }))))).toEqual([]);
    await waitFor(
      async () => receiver.on(at).length,
      (n) => n === 3,
      { what: 'three deliveries' },
    );
    const rows = await a.deliveriesOf(hook.id, (found) => found.length === 3 && found.every((d) => d.state === 'succeeded'));
    expect(rows.map((d) => d.attempt)).toEqual([1, 1, 1]);
  });

  it("leases to the sender at most one account's 28 slots from one commit; the rest are left for claims", async () => {
    const a = await account(server);
    // Answers that take their time: no slot frees (and takes another row from the table) before the count is made.
    const at = nextPath();
    receiver.answerAt(at, () => ({ status: 200, delayMs: 3000 }));
    const hook = await a.createWebhook(`${receiver.url}${at}`);
    const source = await a.deploy();
    await a.subscribe(source, hook.id);
    // 28 at most were leased to the sender (fewer if it still held attempts of earlier tests).
    const claimable = await claimedAtCommit(a, source, hook.id, emitsOf(Array.from({ length: 100 }, (_, i) => ({ event: i }))));
    expect(claimable.length).toBeGreaterThanOrEqual(72);
    expect(claimable.length).toBeLessThanOrEqual(100);
  });

  it('renews only leases that are still valid past the margin; an expired one may have been claimed already', async () => {
    const a = await account(server);
    const hook = await a.createWebhook('https://example.com/renewals');
    const { db, dialect: name } = server.running.services.store;
    const now = Date.now();
    const valid = deliveryRow(hook.id, { next_attempt_ms: now + 3_600_000, lease_owner: 'sender', lease_until_ms: now + 10_000 });
    const expired = deliveryRow(hook.id, { next_attempt_ms: now + 3_600_000, lease_owner: 'sender', lease_until_ms: now - 1000 });
    const foreign = deliveryRow(hook.id, { next_attempt_ms: now + 3_600_000, lease_owner: 'other', lease_until_ms: now + 10_000 });
    await insertDeliveries(db, name, [valid, expired, foreign]);
    const renewed = await renewDeliveryLeases(db, [valid.id, expired.id, foreign.id], 'sender', now + 60_000, now + 5000);
    expect(renewed).toEqual([valid.id]);
    await db.deleteFrom('webhook_deliveries').where('webhook_id', '=', hook.id).execute();
  });

  it('sends each delivery exactly once when more are due than the sender holds in memory', async () => {
    // The sender takes up to an account's 28 slots in memory; the second run's deliveries arrive while the
    // first run's still fill memory, so they wait in the table and are claimed from there.
    const a = await account(server);
    const at = nextPath();
    receiver.answerAt(at, () => ({ status: 200, delayMs: 50 }));
    const hook = await a.createWebhook(`${receiver.url}${at}`);
    const source = await a.deploy();
    await a.subscribe(source, hook.id);
    const many = (from: number) => emitsOf(Array.from({ length: 100 }, (_, i) => ({ event: { n: from + i } })));
    await a.runAndWait(source, many(0));
    await a.runAndWait(source, many(100));
    const db = server.running.services.store.db;
    const rows = await waitFor(
      () => db.selectFrom('webhook_deliveries').select(['state', 'attempt']).where('webhook_id', '=', hook.id).execute(),
      (found) => found.length === 200 && found.every((d) => d.state === 'succeeded'),
      { what: '200 succeeded deliveries' },
    );
    expect(rows.every((d) => d.attempt === 1)).toBe(true);
    const sent = receiver.on(at);
    expect(sent).toHaveLength(200);
    expect(new Set(sent.map((r) => r.headers['webhook-id'])).size).toBe(200);
    expect(new Set(sent.map((r) => JSON.parse(r.body).event.n)).size).toBe(200);
  });

  it('prunes the log to the newest finished attempts, keeping pending ones', async () => {
    const a = await account(server);
    const hook = await a.createWebhook('https://example.com/pruned');
    const db = server.running.services.store.db;
    const row = (state: DeliveryRow['state'], attempt: number) =>
      deliveryRow(hook.id, { state, attempt, event_id: `1-${attempt}`, next_attempt_ms: state === 'pending' ? Date.now() + 3_600_000 : null });
    await insertDeliveries(db, server.running.services.store.dialect, [
      row('failed', 1),
      row('succeeded', 2),
      row('failed', 3),
      row('succeeded', 4),
      row('pending', 5),
    ]);
    await pruneLog(db, hook.id, 2);
    const left = (await a.api.get(`/v1/webhooks/${hook.id}/deliveries`)).body.data;
    expect(left.map((d: { event_id: string; state: string }) => [d.event_id, d.state])).toEqual([
      ['1-5', 'pending'],
      ['1-4', 'succeeded'],
      ['1-3', 'failed'],
    ]);
  });

  it('sleeps until the earliest attempt nobody holds is due, not until the past due time of one in flight', async () => {
    // A sender that woke for attempts it is already sending would poll without pause. A server of its own: the
    // other tests leave attempts behind.
    const own = await startTestServer(dialect);
    try {
      const hook = await (await account(own)).createWebhook('https://example.com/in-flight');
      const { db, dialect: name } = own.running.services.store;
      const now = Date.now();
      await insertDeliveries(db, name, [deliveryRow(hook.id, { next_attempt_ms: now - 1000, lease_owner: 'sender', lease_until_ms: now + 3_600_000 })]);
      expect(await nextFutureDueMs(db, 'webhook_deliveries', now)).toBeUndefined();
      await insertDeliveries(db, name, [
        deliveryRow(hook.id, { next_attempt_ms: now + 1_800_000 }),
        deliveryRow(hook.id, { next_attempt_ms: now + 2_400_000 }),
      ]);
      expect(await nextFutureDueMs(db, 'webhook_deliveries', now)).toBe(now + 1_800_000);
    } finally {
      await own.destroy();
    }
  });

  it('ends an attempt that gets no answer within --webhook-timeout and retries it', async () => {
    const own = await startTestServer(dialect, { allowPrivateNetwork: true, webhookTimeout: 1, webhookRetrySchedule: [1] });
    try {
      const a = await account(own);
      const at = nextPath();
      receiver.answerAt(at, () => 'hang');
      const hook = await a.createWebhook(`${receiver.url}${at}`);
      const source = await a.deploy();
      await a.subscribe(source, hook.id);
      await a.runAndWait(source, emitsOf([{ event: 'slow' }]));
      const log = await a.deliveriesOf(hook.id, (rows) => rows.length === 2 && rows.every((d) => d.state === 'failed'), 'two timed-out attempts');
      expect(log.map((d) => [d.attempt, d.status_code, d.error])).toEqual([
        [2, null, 'no response within 1 s'],
        [1, null, 'no response within 1 s'],
      ]);
      // Cut at the timeout, not left to hang (the receiver never answers); the upper bound is wide for busy machines.
      expect(log.every((d) => d.duration_ms >= 1000 && d.duration_ms < 10_000)).toBe(true);
      expect(receiver.on(at)).toHaveLength(2);
    } finally {
      await own.destroy();
    }
  });

  it('says an attempt whose answer began but whose body never ended timed out after that answer', async () => {
    const own = await startTestServer(dialect, { allowPrivateNetwork: true, webhookTimeout: 1, webhookRetrySchedule: [] });
    try {
      const a = await account(own);
      const at = nextPath();
      receiver.answerAt(at, () => 'stall');
      const hook = await a.createWebhook(`${receiver.url}${at}`);
      const source = await a.deploy();
      await a.subscribe(source, hook.id);
      await a.runAndWait(source, emitsOf([{ event: 'slow body' }]));
      const log = await a.deliveriesOf(hook.id, (rows) => rows.length === 1 && rows[0]!.state === 'failed', 'the timed-out attempt');
      expect(log.map((d) => [d.attempt, d.status_code, d.error])).toEqual([
        [1, null, 'no complete response within 1 s: it answered 200, and its body did not end'],
      ]);
    } finally {
      await own.destroy();
    }
  });

  it('keeps a delivery that was in flight at shutdown and sends it after a restart', async () => {
    const a = await account(server);
    const at = nextPath();
    receiver.answerAt(at, (_, nth) => (nth === 1 ? 'hang' : { status: 200 }));
    const hook = await a.createWebhook(`${receiver.url}${at}`);
    const source = await a.deploy();
    await a.subscribe(source, hook.id);
    await a.runAndWait(source, emitsOf([{ event: 'survives' }]));
    await waitFor(
      async () => receiver.on(at).length,
      (n) => n === 1,
      { what: 'the first attempt to reach the receiver' },
    );
    await server.restart();
    const api = client(server.url, a.key);
    const log = await waitFor(
      () => api.get(`/v1/webhooks/${hook.id}/deliveries`),
      (r) => r.body.data?.[0]?.state === 'succeeded',
      { what: 'the delivery after the restart' },
    );
    // The interrupted attempt did not count: one attempt in the log, two requests with one webhook-id.
    expect(log.body.data.map((d: { attempt: number; status_code: number }) => [d.attempt, d.status_code])).toEqual([[1, 200]]);
    const sent = receiver.on(at);
    expect(sent).toHaveLength(2);
    expect(sent[1]!.headers['webhook-id']).toBe(sent[0]!.headers['webhook-id']);
    expect(new Webhook(hook.secret).verify(sent[1]!.body, sent[1]!.headers as Record<string, string>)).toMatchObject({ event: 'survives' });
  });
});

describe.each(DIALECTS)('webhook network guard on %s', (dialect) => {
  let server: TestServer;
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = await startReceiver();
    server = await startTestServer(dialect, { allowPrivateNetwork: false, webhookRetrySchedule: [] });
  });
  afterAll(async () => {
    await server?.destroy();
    await receiver?.close();
  });

  it('refuses a literal private address and records a name that resolves to one as a failed attempt', async () => {
    const a = await account(server);
    const literal = await a.api.post(`/v1/webhooks?url=${encodeURIComponent(`${receiver.url}/x`)}&name=n&description=d`);
    expect(literal.status).toBe(400);
    expect(literal.body.error).toContain('private address');
    const port = new URL(receiver.url).port;
    const hook = await a.createWebhook(`http://localhost:${port}/guarded`);
    const source = await a.deploy();
    await a.subscribe(source, hook.id);
    await a.runAndWait(source, emitsOf([{ event: 'blocked' }]));
    const [attempt] = await a.deliveriesOf(hook.id, (rows) => rows[0]?.state === 'failed', 'the refused attempt');
    expect(attempt).toMatchObject({ attempt: 1, status_code: null, next_attempt_at_ms: null, error: expect.stringContaining('private address') });
    expect(receiver.requests).toEqual([]);
  });
});

describe('a node paused while its webhook attempt is answered', () => {
  // SIGSTOP, a frozen VM or a long stall: the receiver answered within a second, but the node reads the answer only
  // once it runs again, past the attempt's time-out. The answer was in time: the attempt succeeded and is not made
  // again (it was, as "no response within 1 s", when the deadline fired before the waiting answer was read).
  it('counts the answer that arrived during the pause: one attempt, succeeded', async () => {
    await withPausedNode(async (calls, receiver) => {
      const hook = (await calls.post(`/v1/webhooks?url=${encodeURIComponent(`${receiver.url}/hook`)}`)).body.data;
      const echo = await calls.post('/v1/sources', {
        component_code: 'export default { name: "echo", version: "0.0.1", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body); } };',
      });
      expect(echo.status, JSON.stringify(echo.body)).toBe(200);
      expect((await calls.post(`/v1/subscriptions?emitter_id=${echo.body.data.id}&listener_id=${hook.id}`)).status).toBe(200);
      expect((await request('POST', echo.body.data.configured_props.http.endpoint_url, { body: { n: 1 } })).status).toBe(200);
      const log = await waitFor(
        () => calls.get(`/v1/webhooks/${hook.id}/deliveries`),
        (r) => r.body.data.some((a: { state: string }) => a.state !== 'pending'),
        { what: 'the attempt to finish' },
      );
      expect(log.body.data).toEqual([expect.objectContaining({ attempt: 1, state: 'succeeded', status_code: 200 })]);
      expect(receiver.received).toHaveLength(1);
    });
  });
});

describe.skipIf(!TEST_DATABASE_URL)('deleting a webhook while its deliveries commit, on postgres', () => {
  let server: TestServer;
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
    server = await startTestServer('postgres', { allowPrivateNetwork: true, webhookRetrySchedule: [] });
  });
  afterAll(async () => {
    await server?.destroy();
    await receiver?.close();
  });

  // A commit that records an attempt (locking its row) and queues the webhook's next delivery (its key locked against
  // the webhook's delete) crossed a DELETE that removed the webhook first: PostgreSQL ended the DELETE as a deadlock,
  // and the owner got 500 with the webhook still there, still delivered to (seen under load).
  it('answers 204 and leaves no delivery behind when a commit holding one of its attempts queues another', async () => {
    const a = await account(server);
    const hook = await a.createWebhook(`${receiver.url}/pg-delete`);
    const source = await a.deploy();
    await a.subscribe(source, hook.id);
    await a.runAndWait(source, emitsOf([{ event: 'first' }]));
    const [delivery] = await a.deliveriesOf(hook.id, (rows) => rows.length === 1 && rows[0].state === 'succeeded');
    const commit = new pg.Client({ connectionString: server.databaseUrl });
    const watcher = new pg.Client({ connectionString: server.databaseUrl });
    await commit.connect();
    await watcher.connect();
    try {
      await commit.query('begin');
      await commit.query('update webhook_deliveries set error = error where id = $1', [delivery.id]);
      const deleted = a.api.delete(`/v1/webhooks/${hook.id}`);
      await waitFor(
        async () =>
          (await watcher.query(`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`)).rows[0].n,
        (n) => n === 1,
        { what: 'the delete to wait for the attempt being recorded' },
      );
      await commit.query(
        `insert into webhook_deliveries (id, message_id, webhook_id, user_id, emitter_id, event_id, payload, attempt, state, created_ms)
         values ('dl_queued', 'dl_queued', $1, $2, $3, '1-0', '{}', 1, 'succeeded', 0)`,
        [hook.id, (await a.api.get('/v1/users/me')).body.data.id, source],
      );
      await commit.query('commit');
      const res = await deleted;
      expect(res.status, JSON.stringify(res.body)).toBe(204);
      expect((await a.api.get(`/v1/webhooks/${hook.id}`)).status).toBe(404);
      expect((await watcher.query('select id from webhook_deliveries where webhook_id = $1', [hook.id])).rows).toEqual([]);
    } finally {
      await commit.end();
      await watcher.end();
    }
  });
});
