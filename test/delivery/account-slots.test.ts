// A node's outbound slots shared between accounts: the share rule, the claim that goes round the accounts, and one
// account's hanging receivers leaving another account's webhook deliveries room, end to end.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountSlots, accountSlotCap } from '../../src/delivery/account-slots.js';
import { FairClaims } from '../../src/delivery/fair-claims.js';
import { ManualClock } from '../../src/lib/clock.js';
import { accountsWithWork } from '../../src/store/account-queues.js';
import { insertDeliveries, pendingDelivery } from '../../src/store/deliveries.js';
import { newId } from '../../src/model/ids.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { account, emitsOf, startReceiver, type Receiver } from './helpers.js';

describe('sharing slots between accounts', () => {
  it('lets one account hold all but an eighth of the slots, and a queue of one slot whole', () => {
    expect([32, 16, 8, 2, 1].map(accountSlotCap)).toEqual([28, 14, 7, 1, 1]);
  });

  /** The shares as an object, easier to compare; `wanting` as an object too. */
  const shared = (slots: AccountSlots, count: number, wanting: Record<string, number>, holding?: (userId: string) => number) =>
    Object.fromEntries(slots.share(count, new Map(Object.entries(wanting)), holding));

  it('gives free slots one at a time to the account holding fewest, up to its cap and the rows it has', () => {
    const slots = new AccountSlots(8);
    slots.take('a', 4);
    expect(shared(slots, 3, { a: 9, b: 9, c: 9 })).toEqual({ b: 2, c: 1 });
    expect(shared(slots, 3, { a: 9, b: 1, c: 1 })).toEqual({ a: 1, b: 1, c: 1 });
    // b's rows already in memory count as held.
    expect(shared(slots, 3, { a: 9, b: 9 }, (userId) => (userId === 'b' ? 5 : 0))).toEqual({ a: 2, b: 1 });
  });

  it('keeps the slots past the cap for accounts holding none: each newcomer gets one while others hold the rest', () => {
    const slots = new AccountSlots(8);
    expect(shared(slots, 8, { a: 9 })).toEqual({ a: 7 });
    slots.take('a', 5);
    // Of the 3 free slots, the last one is kept: b and c, holding none, get one each, a none.
    expect(shared(slots, 3, { a: 9, b: 9, c: 9 })).toEqual({ b: 1, c: 1 });
    expect(shared(slots, 3, { a: 9 })).toEqual({ a: 2 });
    slots.take('a', 2);
    expect(shared(slots, 1, { a: 9 })).toEqual({});
    expect(shared(slots, 1, { a: 9, b: 9 })).toEqual({ b: 1 });
    slots.take('b');
    expect([slots.roomOf('a'), slots.roomOf('b'), slots.roomOf('c')]).toEqual([0, 0, 0]);
    slots.give('a');
    expect([slots.roomOf('a'), slots.roomOf('c')]).toEqual([0, 1]);
    slots.give('b');
    slots.give('a');
    expect([slots.roomOf('a'), slots.roomOf('b'), slots.roomOf('c')]).toEqual([2, 2, 2]);
  });

  it('lets an attempt that waited 2 s give its slot back, still counting against its account, up to 32 per slot', () => {
    const clock = new ManualClock(0);
    const slots = new AccountSlots(2);
    const opened: string[] = [];
    const first = slots.takeForAttempt('a', clock, () => opened.push('a'));
    expect([slots.taken, slots.roomOf('a'), slots.roomOf('b')]).toEqual([1, 0, 1]);
    clock.advance(1_999);
    expect(slots.taken).toBe(1);
    clock.advance(1);
    // Stalled: the slot is free for others, but a still holds its cap of one.
    expect([slots.taken, slots.heldBy('a'), slots.roomOf('a'), slots.roomOf('b')]).toEqual([0, 1, 0, 1]);
    expect(opened).toEqual(['a']);
    first();
    first();
    expect([slots.taken, slots.heldBy('a'), slots.roomOf('a'), opened.length]).toEqual([0, 0, 1, 2]);
    // An attempt that ends before 2 s never stalls.
    const quick = slots.takeForAttempt('b', clock, () => opened.push('b'));
    quick();
    clock.advance(5_000);
    expect([slots.taken, slots.heldBy('b'), opened]).toEqual([0, 0, ['a', 'a', 'b']]);
    // 64 stalled attempts (32 per slot) at most: the next keeps its slot.
    const ends = Array.from({ length: 65 }, (_, i) => slots.takeForAttempt(`u${i}`, clock, () => {}));
    clock.advance(2_000);
    expect(slots.taken).toBe(1);
    for (const end of ends) end();
    expect(slots.taken).toBe(0);
  });
});

describe.each(DIALECTS)('webhook slots shared between accounts on %s', (dialect) => {
  let server: TestServer;
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = await startReceiver();
    // Hanging attempts end only after two minutes: within these tests, none frees its slot.
    server = await startTestServer(dialect, { allowPrivateNetwork: true, webhookTimeout: 120 });
  });
  afterAll(async () => {
    await server?.destroy();
    await receiver?.close();
  });

  /** Pending deliveries of made-up accounts to one webhook, due at the times given: the claims read user_id only. */
  async function queued(dueTimes: Array<[userId: string, dueMs: number]>): Promise<{ ids: string[]; clear: () => Promise<void> }> {
    const { db, dialect: name } = server.running.services.store;
    const hook = await (await account(server)).createWebhook('https://example.com/queued');
    const rows = dueTimes.map(([userId, dueMs]) => {
      const id = newId('dl');
      const fields = { id, message_id: id, webhook_id: hook.id, user_id: userId, emitter_id: 'dc_x', event_id: '1-0', payload: '{}', attempt: 1 };
      return pendingDelivery({ ...fields, next_attempt_ms: dueMs, created_ms: dueMs });
    });
    await insertDeliveries(db, name, rows);
    return {
      ids: rows.map((row) => row.id),
      clear: () =>
        db
          .deleteFrom('webhook_deliveries')
          .where('webhook_id', '=', hook.id)
          .execute()
          .then(() => undefined),
    };
  }

  // The rows are due at a time ten days ahead, as the claims are asked: the server's own sender leaves them alone.
  const later = () => Date.now() + 10 * 86_400_000;

  it('claims round the accounts: one account’s long backlog due earlier does not hide another’s delivery', async () => {
    const now = later();
    const backlog = (count: number): Array<[string, number]> => Array.from({ length: count }, (_, i) => ['u_busy', now - 60_000 + i]);
    // 100 rows fit the first look (4 rows per slot), shared at once: the quiet account's row takes one of the 28
    // slots open to all. Past 128, the quiet account is found by looking accounts up, after the busy one took its 28:
    // its row takes one of the 4 slots kept for accounts holding none.
    for (const [size, busyShare] of [
      [100, 27],
      [300, 28],
    ] as const) {
      const { ids, clear } = await queued([...backlog(size), ['u_quiet', now - 1000], ['u_quiet', now + 3_600_000]]);
      try {
        const claims = new FairClaims(server.running.services.store, 'webhook_deliveries', new AccountSlots(32));
        const claimed = await claims.dueIds(32, now);
        expect(claimed.filter((id) => id === ids[size])).toHaveLength(1);
        const busy = new Set(ids.slice(0, size));
        expect(claimed.filter((id) => busy.has(id))).toEqual(ids.slice(0, busyShare));
        expect(await claims.nextDueMs(now)).toBe(now + 3_600_000);
      } finally {
        await clear();
      }
    }
  });

  it('looks accounts up a bounded number at a time, going on where the last look stopped', async () => {
    const { db } = server.running.services.store;
    const now = later();
    const { clear } = await queued([
      ['u_a', now - 10],
      ['u_b', now + 10],
      ['u_c', now - 30],
    ]);
    try {
      const first = await accountsWithWork(db, 'webhook_deliveries', now, undefined, 2);
      expect(first).toEqual({
        accounts: [
          { userId: 'u_a', nextDueMs: now - 10 },
          { userId: 'u_b', nextDueMs: now + 10 },
        ],
        complete: false,
      });
      const rest = await accountsWithWork(db, 'webhook_deliveries', now, 'u_b', 2);
      expect(rest).toEqual({ accounts: [{ userId: 'u_c', nextDueMs: now - 30 }], complete: true });
    } finally {
      await clear();
    }
  });

  it('sends another account’s delivery at once while other accounts’ hanging receivers hold all the slots they may', async () => {
    // Deliveries to receivers that never answer, more than the node's 32 slots: the first account holds 28 of them,
    // and the second, coming after, one of the 4 kept for accounts holding none.
    const holdsSlots = async (deliveries: number, hangAt: string, slots: number) => {
      const hog = await account(server);
      receiver.answerAt(hangAt, () => 'hang');
      const source = await hog.deploy();
      for (let i = 0; i < deliveries; i++) await hog.subscribe(source, (await hog.createWebhook(`${receiver.url}${hangAt}`, `hang ${i}`)).id);
      await hog.runAndWait(source, emitsOf([{ event: 'to every hanging receiver' }]));
      await waitFor(
        async () => receiver.on(hangAt).length,
        (n) => n === slots,
        { what: `a hogging account to hold ${slots} slots` },
      );
    };
    const [hangAt, alsoHangAt] = [`/hang-${dialect}`, `/hang-too-${dialect}`];
    await holdsSlots(40, hangAt, 28);
    await holdsSlots(10, alsoHangAt, 1);

    const other = await account(server);
    const at = `/prompt-${dialect}`;
    const hook = await other.createWebhook(`${receiver.url}${at}`);
    const source = await other.deploy();
    await other.subscribe(source, hook.id);
    await other.runAndWait(source, emitsOf([{ event: 'not kept waiting' }]));
    // Without the share it would wait for a hanging attempt's two-minute time-out.
    await waitFor(
      async () => receiver.on(at).length,
      (n) => n === 1,
      { what: "the other account's delivery" },
    );
    const [delivered] = await other.deliveriesOf(hook.id, (rows) => rows[0]?.state === 'succeeded');
    expect(delivered.status_code).toBe(200);
    // The first hog's other deliveries still wait: its hanging attempts count against its cap, stalled or not.
    expect(receiver.on(hangAt)).toHaveLength(28);
  });

  it('leaves a healthy account room while hanging receivers of more accounts than the reserve hold all they may', async () => {
    // Six accounts whose receivers never answer: the first takes 28 slots, the next four one each of the 4 kept for
    // accounts holding none, the sixth none. Attempts that waited 2 s give their slots back (still counting against
    // their account's cap), so each hog reaches its 28; without that, the sixth and a healthy newcomer would wait
    // for a hanging attempt's two-minute time-out.
    const hogs = await Promise.all(Array.from({ length: 6 }, () => account(server)));
    const paths = hogs.map((_, i) => `/hang-many-${i}-${dialect}`);
    for (const [i, hog] of hogs.entries()) {
      receiver.answerAt(paths[i]!, () => 'hang');
      const source = await hog.deploy();
      for (let n = 0; n < 30; n++) await hog.subscribe(source, (await hog.createWebhook(`${receiver.url}${paths[i]}`, `hang ${n}`)).id);
      await hog.runAndWait(source, emitsOf([{ event: 'to every hanging receiver' }]));
    }
    await waitFor(
      async () => paths.map((path) => receiver.on(path).length),
      (held) => held.every((n) => n === 28),
      { what: 'each hogging account to hold its 28 attempts' },
    );

    const healthy = await account(server);
    const at = `/healthy-${dialect}`;
    const hook = await healthy.createWebhook(`${receiver.url}${at}`);
    const source = await healthy.deploy();
    await healthy.subscribe(source, hook.id);
    await healthy.runAndWait(source, emitsOf([{ event: 'not kept waiting either' }]));
    const [delivered] = await healthy.deliveriesOf(hook.id, (rows) => rows[0]?.state === 'succeeded');
    expect(delivered.status_code).toBe(200);
    expect(paths.map((path) => receiver.on(path).length)).toEqual([28, 28, 28, 28, 28, 28]);
  });
});
