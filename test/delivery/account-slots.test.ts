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

  it('gives free slots one at a time to the account holding fewest, up to its cap, and only for work due', () => {
    const slots = new AccountSlots(8);
    slots.take('a', 5);
    const due = (userId: string) => ({ userId, nextDueMs: 100 });
    expect(slots.share(4, [due('a'), due('b'), due('c')], 100)).toEqual(
      new Map([
        ['b', 2],
        ['c', 2],
      ]),
    );
    // b's rows already in memory count as held.
    expect(slots.share(3, [due('a'), due('b')], 100, (userId) => (userId === 'b' ? 5 : 0))).toEqual(
      new Map([
        ['a', 2],
        ['b', 1],
      ]),
    );
    expect(
      slots.share(
        4,
        [
          { userId: 'b', nextDueMs: 101 },
          { userId: 'c', nextDueMs: undefined },
        ],
        100,
      ),
    ).toEqual(new Map());
    slots.take('a', 2);
    expect(slots.share(4, [due('a')], 100)).toEqual(new Map());
    expect(slots.give('a')).toBe(true);
    expect(slots.give('a')).toBe(false);
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

  it('sends another account’s delivery at once while one account’s hanging receivers hold all the slots it may', async () => {
    // 40 deliveries to receivers that never answer: more than the node's 32 slots. The account holds 28 of them.
    const hog = await account(server);
    const hangAt = `/hang-${dialect}`;
    receiver.answerAt(hangAt, () => 'hang');
    const hogSource = await hog.deploy();
    for (let i = 0; i < 40; i++) await hog.subscribe(hogSource, (await hog.createWebhook(`${receiver.url}${hangAt}`, `hang ${i}`)).id);
    await hog.runAndWait(hogSource, emitsOf([{ event: 'to every hanging receiver' }]));
    await waitFor(
      async () => receiver.on(hangAt).length,
      (n) => n === 28,
      { what: 'the hogging account to hold 28 slots' },
    );

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
    // The hog's other 12 still wait for its own slots.
    expect(receiver.on(hangAt)).toHaveLength(28);
  });
});
