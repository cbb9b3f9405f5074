// The sender's in-memory hand-over: leases renewed before a late send, ones too old left to the table, and
// deliveries handed over after stop() given back. A second sender runs on the test server's database, on a clock
// the test moves, so that "the first attempt took a second" is exact rather than a race against real time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { SecretBox } from '../../src/lib/secrets.js';
import { TransactionGroup } from '../../src/store/group-commit.js';
import { WebhookSender, type WebhookSenderOptions } from '../../src/delivery/webhooks/sender.js';
import { insertDeliveries, pendingDelivery, type ClaimedDelivery } from '../../src/store/deliveries.js';
import { newId } from '../../src/model/ids.js';
import { ManualClock, systemClock, type Clock } from '../../src/lib/clock.js';
import { DatabaseOutageLog } from '../../src/store/outage-log.js';
import { PollCadence } from '../../src/lib/poll-cadence.js';
import { account, startReceiver, type Receiver } from './helpers.js';
import { WebhookService } from '../../src/services/webhooks.js';
import { AccountLimiter } from '../../src/services/account-limits.js';

describe.each(DIALECTS)('webhook sender hand-over on %s', (dialect) => {
  let server: TestServer;
  let receiver: Receiver;
  let path = 0;
  const nextPath = () => `/handover-${dialect}-${++path}`;

  beforeAll(async () => {
    receiver = await startReceiver();
    server = await startTestServer(dialect, { allowPrivateNetwork: true, webhookRetrySchedule: [] });
  });
  afterAll(async () => {
    await server?.destroy();
    await receiver?.close();
  });

  /** A sender of its own with one slot; not started, so it sends only what is handed over to it. */
  function ownSender(
    options: Pick<WebhookSenderOptions, 'timeoutMs' | 'leaseMs'> & Partial<WebhookSenderOptions>,
    clock: Clock = systemClock,
    transactions = new TransactionGroup(server.running.services.store),
  ): WebhookSender {
    const { store, config } = server.running.services;
    return new WebhookSender(
      store,
      SecretBox.open(config.secretKey, config.dataDir),
      {
        allowPrivateNetwork: true,
        retryScheduleSeconds: [],
        cadence: new PollCadence(60_000, true),
        outages: new DatabaseOutageLog(pino({ level: 'silent' })),
        concurrency: 1,
        reclaimAtStart: false,
        ...options,
      },
      transactions,
      pino({ level: 'silent' }),
      clock,
    );
  }

  /**
   * Inserts one delivery to a new webhook at each of `paths`, leased as the router does, and returns them. Each is
   * of an account of its own: the sender leases no more of one account's deliveries than that account may start.
   */
  async function leasedDeliveries(sender: WebhookSender, paths: string[], clock: Clock = systemClock): Promise<ClaimedDelivery[]> {
    const { store } = server.running.services;
    const webhooks = [];
    for (const at of paths) {
      const hook = await (await account(server)).createWebhook(`${receiver.url}${at}`);
      webhooks.push(await store.db.selectFrom('webhooks').selectAll().where('id', '=', hook.id).executeTakeFirstOrThrow());
    }
    // The leases are taken last, just before the hand-over: the tests count on their length from here.
    const nowMs = clock.now();
    const rows = webhooks.map((webhook, i): ClaimedDelivery => {
      const lease = sender.leaseForNew(nowMs, webhook.user_id, 1)!;
      expect(lease.count).toBe(1);
      const id = newId('dl');
      const payload = JSON.stringify({ at: paths[i] });
      const row = pendingDelivery({
        id,
        message_id: id,
        webhook_id: webhook.id,
        user_id: webhook.user_id,
        emitter_id: 'dc_x',
        event_id: '1-0',
        payload,
        attempt: 1,
        next_attempt_ms: nowMs,
        created_ms: nowMs,
      });
      return { ...row, lease_owner: lease.owner, lease_until_ms: lease.untilMs, url: webhook.url, secret: webhook.secret, active: webhook.active };
    });
    await insertDeliveries(store.db, store.dialect, rows);
    return rows;
  }

  const leaseOf = async (id: string) =>
    server.running.services.store.db
      .selectFrom('webhook_deliveries')
      .select(['lease_owner', 'lease_until_ms', 'state'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();

  it('sends a retry when it falls due, though no signal announces it and the lease watch is a minute away', async () => {
    // First in the file, while no other test's delivery is left pending for this sender to claim: a claim that
    // filled its one slot would wake it when the slot frees, by chance. An hour ahead of real time: the server's
    // own sender never finds the retry due, so only this one can send it.
    const clock = new ManualClock(Date.now() + 3_600_000);
    const sender = ownSender({ timeoutMs: 2000, leaseMs: 60_000, retryScheduleSeconds: [1] }, clock);
    const at = nextPath();
    receiver.answerAt(at, (_, nth) => ({ status: nth === 1 ? 500 : 200 }));
    try {
      await sender.start();
      const [row] = await leasedDeliveries(sender, [at], clock);
      sender.handOver([row!]);
      const retry = await waitFor(
        async () =>
          server.running.services.store.db
            .selectFrom('webhook_deliveries')
            .select(['attempt', 'state', 'next_attempt_ms'])
            .where('message_id', '=', row!.message_id)
            .where('attempt', '=', 2)
            .executeTakeFirst(),
        (found) => found !== undefined,
        { what: 'the retry to be queued' },
      );
      expect(Number(retry!.next_attempt_ms)).toBe(clock.now() + 1000);
      clock.advance(1000);
      await waitFor(
        async () => receiver.on(at).length,
        (n) => n === 2,
        { what: 'the retry to be sent' },
      );
    } finally {
      await sender.stop();
    }
  });

  it("frees an attempt's slot once the receiver has answered, before the outcome is recorded", async () => {
    // A commit that takes long (held open here) delays the record of the first attempt, not the second attempt.
    const transactions = new TransactionGroup(server.running.services.store);
    const sender = ownSender({ timeoutMs: 2000, leaseMs: 60_000 }, systemClock, transactions);
    const [first, second] = [nextPath(), nextPath()];
    const rows = await leasedDeliveries(sender, [first, second]);
    let release: () => void = () => {};
    const held = transactions.run(() => new Promise<void>((resolve) => (release = resolve)));
    try {
      sender.handOver(rows);
      await waitFor(
        async () => receiver.on(second).length,
        (n) => n === 1,
        { what: "the second attempt, in the one slot, while the first one's record waits for the commit" },
      );
    } finally {
      release();
      await held;
      await sender.stop();
    }
    expect([(await leaseOf(rows[0]!.id)).state, (await leaseOf(rows[1]!.id)).state]).toEqual(['succeeded', 'succeeded']);
    expect([receiver.on(first).length, receiver.on(second).length]).toEqual([1, 1]);
  });

  it('renews the lease of a handed-over delivery that waited for a slot, then sends it once', async () => {
    // Stale means less than timeout + 5 s of lease left: the second delivery is stale once the first took 1 s,
    // and still renewable (more than 5 s left).
    const clock = new ManualClock();
    const sender = ownSender({ timeoutMs: 2000, leaseMs: 7500 }, clock);
    const [first, second] = [nextPath(), nextPath()];
    receiver.answerAt(first, () => ({ status: 200, delayMs: 100 }));
    receiver.answerAt(second, () => 'hang');
    try {
      const rows = await leasedDeliveries(sender, [first, second], clock);
      sender.handOver(rows);
      // The first attempt is on its way and answers only after 100 ms of real time: by then it has taken 1 s.
      clock.advance(1000);
      await waitFor(
        async () => receiver.on(second).length,
        (n) => n === 1,
        { what: 'the second delivery to be sent' },
      );
      const held = await leaseOf(rows[1]!.id);
      expect(held.lease_owner).toBe(rows[1]!.lease_owner);
      expect(Number(held.lease_until_ms)).toBe(clock.now() + 7500);
      expect(receiver.on(first)).toHaveLength(1);
    } finally {
      await sender.stop();
    }
  });

  it('leaves a handed-over delivery whose lease ran too short to the table, where it is claimed and sent once', async () => {
    // The first attempt hangs until its 2 s timeout; by then the second has under 5 s of its 6.5 s lease left. The
    // clock runs 5 s behind real time, so that the server's own sender finds the lease expired 1.5 s from now.
    const clock = new ManualClock(Date.now() - 5000);
    const sender = ownSender({ timeoutMs: 2000, leaseMs: 6500 }, clock);
    const [first, second] = [nextPath(), nextPath()];
    receiver.answerAt(first, () => 'hang');
    try {
      const rows = await leasedDeliveries(sender, [first, second], clock);
      sender.handOver(rows);
      await waitFor(
        async () => receiver.on(first).length,
        (n) => n === 1,
        { what: 'the first attempt to reach the receiver' },
      );
      clock.advance(2000);
      // The server's own sender claims it from the table once the lease has run out. It looks unprompted every third
      // of its lease (20 s), which may fall past this wait's deadline: the test wakes it as that look would.
      await waitFor(
        async () => Date.now(),
        (now) => now > rows[1]!.lease_until_ms!,
        { what: 'the lease to run out in real time' },
      );
      server.running.services.webhookSender.wake();
      const [sent] = await waitFor(
        async () => receiver.on(second),
        (found) => found.length === 1,
        { what: 'the second delivery to be claimed and sent' },
      );
      expect(sent!.receivedAt).toBeGreaterThanOrEqual(rows[1]!.lease_until_ms!);
      await waitFor(
        async () => (await leaseOf(rows[1]!.id)).state,
        (state) => state === 'succeeded',
        { what: 'the attempt to be recorded' },
      );
      expect(receiver.on(second)).toHaveLength(1);
    } finally {
      await sender.stop();
    }
  });

  /** Two deliveries to one new webhook at `at` and one to another account's at `after`, leased as the router does. */
  async function twoToOneWebhook(sender: WebhookSender, at: string, after: string): Promise<ClaimedDelivery[]> {
    const [first, other] = await leasedDeliveries(sender, [at, after]);
    const lease = sender.leaseForNew(Date.now(), first!.user_id, 1)!;
    const id = newId('dl');
    const second = { ...first!, id, message_id: id, payload: JSON.stringify({ at, nth: 2 }), lease_until_ms: lease.untilMs };
    await insertDeliveries(server.running.services.store.db, server.running.services.store.dialect, [second]);
    return [first!, second, other!];
  }

  it('sends nothing more to a webhook that answered 410, though its next delivery waited for the slot in memory', async () => {
    const sender = ownSender({ timeoutMs: 2000, leaseMs: 60_000 });
    const [gone, after] = [nextPath(), nextPath()];
    receiver.answerAt(gone, () => ({ status: 410 }));
    try {
      const rows = await twoToOneWebhook(sender, gone, after);
      // One slot: the second delivery to the webhook and then the other account's wait in memory, in that order.
      sender.handOver(rows);
      await waitFor(
        async () => receiver.on(after).length,
        (n) => n === 1,
        { what: "the other account's delivery, once the slot is free" },
      );
    } finally {
      await sender.stop();
    }
    expect(receiver.on(gone)).toHaveLength(1);
  });

  it('sends nothing to a webhook deleted while its handed-over delivery waited for a slot', async () => {
    const sender = ownSender({ timeoutMs: 2000, leaseMs: 60_000 });
    const { store, config } = server.running.services;
    // The node's webhook service tells its sender of deletes (and the sender tells the other nodes).
    const webhooks = new WebhookService(
      store,
      SecretBox.open(config.secretKey, config.dataDir),
      { allowPrivateNetwork: true, publicUrl: config.publicUrl, onDeleted: sender.retired },
      new AccountLimiter(store, config.accountLimits),
    );
    const [first, second, third] = [nextPath(), nextPath(), nextPath()];
    const firstArrived = new Promise<void>((arrived) => {
      receiver.answerAt(first, () => {
        arrived();
        return 'hang';
      });
    });
    try {
      const rows = await leasedDeliveries(sender, [first, second, third]);
      sender.handOver(rows);
      // The first attempt holds the one slot until it times out (2 s); the second and third wait in memory, in
      // that order, while the second's webhook is deleted.
      await firstArrived;
      await webhooks.delete(rows[1]!.user_id, rows[1]!.webhook_id);
      await waitFor(
        async () => receiver.on(third).length,
        (n) => n === 1,
        { what: 'the third delivery, after the slot the first held was freed' },
      );
    } finally {
      await sender.stop();
    }
    expect(receiver.on(second)).toEqual([]);
  });

  it('gives back deliveries handed over after stop(), for another sender to send at once', async () => {
    // The server's sender is woken as another node's would be by the signal the release sends.
    const sender = ownSender({ timeoutMs: 2000, leaseMs: 60_000, announce: () => server.running.services.webhookSender.wake() });
    const at = nextPath();
    const rows = await leasedDeliveries(sender, [at]);
    await sender.stop();
    sender.handOver(rows);
    // Released, not left leased for a minute, and announced: the server's own sender sends it at once.
    await waitFor(
      async () => receiver.on(at).length,
      (n) => n === 1,
      { what: 'the released delivery to be sent' },
    );
    expect(receiver.requests.filter((r) => r.path === at)).toHaveLength(1);
    expect(Date.now()).toBeLessThan(rows[0]!.lease_until_ms!);
  });
});
