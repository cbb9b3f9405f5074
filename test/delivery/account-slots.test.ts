// A node's outbound slots shared between accounts: the share rule, the claim that goes round the accounts, and one
// account's hanging receivers leaving another account's webhook deliveries room, end to end.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountSlots, accountSlotCap } from '../../src/delivery/account-slots.js';
import { accountsWithWork } from '../../src/store/fair-claim.js';
import { claimDue, insertDeliveries, pendingDelivery } from '../../src/store/deliveries.js';
import { newId } from '../../src/model/ids.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { account, emitsOf, startReceiver, type Receiver } from './helpers.js';

describe('sharing slots between accounts', () => {
  it('lets one account hold all but an eighth of the slots, and a queue of one slot whole', () => {
    expect([32, 16, 8, 2, 1].map(accountSlotCap)).toEqual([28, 14, 7, 1, 1]);
  });

  const due = (userId: string) => ({ userId, nextDueMs: 100 });
  /** The shares as an object, easier to compare. */
  const shared = (slots: AccountSlots, ...args: Parameters<AccountSlots['share']>) => Object.fromEntries(slots.share(...args));

  it('gives free slots one at a time to the account holding fewest, up to its cap, and only for work due', () => {
    const slots = new AccountSlots(8);
    slots.take('a', 4);
    expect(shared(slots, 3, [due('a'), due('b'), due('c')], 100)).toEqual({ b: 2, c: 1 });
    // b's rows already in memory count as held.
    expect(shared(slots, 3, [due('a'), due('b')], 100, (userId) => (userId === 'b' ? 5 : 0))).toEqual({ a: 2, b: 1 });
    const notDue = [
      { userId: 'b', nextDueMs: 101 },
      { userId: 'c', nextDueMs: undefined },
    ];
    expect(shared(slots, 4, notDue, 100)).toEqual({});
  });

  it('keeps the slots past the cap for accounts holding none: each newcomer gets one while others hold the rest', () => {
    const slots = new AccountSlots(8);
    expect(shared(slots, 8, [due('a')], 100)).toEqual({ a: 7 });
    slots.take('a', 5);
    // Of the 3 free slots, the last one is kept: b and c, holding none, get one each, a none.
    expect(shared(slots, 3, [due('a'), due('b'), due('c')], 100)).toEqual({ b: 1, c: 1 });
    expect(shared(slots, 3, [due('a')], 100)).toEqual({ a: 2 });
    slots.take('a', 2);
    expect(shared(slots, 1, [due('a')], 100)).toEqual({});
    expect(shared(slots, 1, [due('a'), due('b')], 100)).toEqual({ b: 1 });
    slots.take('b');
    expect([slots.roomOf('a'), slots.roomOf('b'), slots.roomOf('c')]).toEqual([0, 0, 0]);
    // A slot given back by an account at its cap, or with no more than the reserve free, may let waiting work start.
    expect(slots.give('a')).toBe(true);
    expect(slots.give('b')).toBe(true);
    expect(slots.give('a')).toBe(false);
    expect(slots.roomOf('c')).toBe(2);
  });

  it('wakes for the earliest due time of an account with room; an account at its cap waits for a slot instead', () => {
    const slots = new AccountSlots(8);
    slots.take('a', 7);
    expect(
      slots.nextDueMs([
        { userId: 'a', nextDueMs: 10 },
        { userId: 'b', nextDueMs: 50 },
        { userId: 'c', nextDueMs: undefined },
      ]),
    ).toBe(50);
    expect(slots.nextDueMs([{ userId: 'a', nextDueMs: 10 }])).toBeUndefined();
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

  it('claims round the accounts: one account’s long backlog due earlier does not hide another’s delivery', async () => {
    const { db, dialect: name } = server.running.services.store;
    const [busy, quiet] = [await account(server), await account(server)];
    const busyHook = await busy.createWebhook('https://example.com/backlog');
    const quietHook = await quiet.createWebhook('https://example.com/quiet');
    const userOf = async (webhookId: string) =>
      (await db.selectFrom('webhooks').select('user_id').where('id', '=', webhookId).executeTakeFirstOrThrow()).user_id;
    const [busyUser, quietUser] = [await userOf(busyHook.id), await userOf(quietHook.id)];
    const now = Date.now();
    const row = (webhookId: string, userId: string, dueMs: number) => {
      const id = newId('dl');
      const fields = { id, message_id: id, webhook_id: webhookId, user_id: userId, emitter_id: 'dc_x', event_id: '1-0', payload: '{}', attempt: 1 };
      return pendingDelivery({ ...fields, next_attempt_ms: dueMs, created_ms: dueMs });
    };
    await insertDeliveries(db, name, [
      ...Array.from({ length: 100 }, (_, i) => row(busyHook.id, busyUser, now - 60_000 + i)),
      row(quietHook.id, quietUser, now - 1000),
      row(quietHook.id, quietUser, now + 3_600_000),
    ]);
    const accounts = await accountsWithWork(db, 'webhook_deliveries', now);
    expect(accounts.filter((a) => a.userId === busyUser || a.userId === quietUser)).toEqual(
      expect.arrayContaining([
        { userId: busyUser, nextDueMs: now - 60_000 },
        { userId: quietUser, nextDueMs: now - 1000 },
      ]),
    );
    const shares = new AccountSlots(32).share(4, accounts, now);
    expect(shares.get(busyUser)).toBe(2);
    expect(shares.get(quietUser)).toBe(2);
    const claimed = await claimDue(db, 'fair-node', now, 60_000, shares);
    expect(claimed.filter((d) => d.user_id === quietUser).map((d) => Number(d.next_attempt_ms))).toEqual([now - 1000]);
    expect(claimed.filter((d) => d.user_id === busyUser).map((d) => Number(d.next_attempt_ms))).toEqual([now - 60_000, now - 59_999]);
    await db.deleteFrom('webhook_deliveries').where('webhook_id', 'in', [busyHook.id, quietHook.id]).execute();
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
    // The hogs' other deliveries still wait for slots.
    expect(receiver.on(hangAt)).toHaveLength(28);
    expect(receiver.on(alsoHangAt)).toHaveLength(1);
  });
});
