// The outbound queues read per account, for fair claims: the earliest due rows, the accounts with rows pending (a few
// at a time), each account's earliest due rows, and when the next row falls due.
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from './schema.js';
import { compiledOnce } from './compiled.js';

type Db = Kysely<Database> | Transaction<Database>;

/** The outbound queues shared between accounts; both keep `state`, `user_id`, `next_attempt_ms` and a lease. */
export type AccountQueueTable = 'webhook_deliveries' | 'workflow_sends';

/** A due row no one holds, and whose it is. */
export interface DueRow {
  id: string;
  user_id: string;
}

/** An account with pending rows, and when its earliest row that no one holds falls due (undefined: all are held). */
export interface AccountWork {
  userId: string;
  nextDueMs: number | undefined;
}

/** Rows due at `nowMs` that no one holds (never leased, or the lease ran out), earliest first. */
function dueUnheld(db: Db, table: AccountQueueTable, nowMs: number) {
  return db
    .selectFrom(table)
    .select(['id', 'user_id'])
    .where('state', '=', 'pending')
    .where('next_attempt_ms', '<=', nowMs)
    .where((eb) => eb.or([eb('lease_until_ms', 'is', null), eb('lease_until_ms', '<', nowMs)]))
    .orderBy('next_attempt_ms')
    .orderBy('id');
}

/** A statement compiled once for each queue table: a claim runs these at every freed slot while rows wait in the table. */
function perQueueTable<T>(build: (table: AccountQueueTable) => T): Record<AccountQueueTable, T> {
  return { webhook_deliveries: build('webhook_deliveries'), workflow_sends: build('workflow_sends') };
}

const earliestDueBy = perQueueTable((table) =>
  compiledOnce(
    `earliestDue.${table}`,
    (db, nowMs: number, limit: number) => dueUnheld(db, table, nowMs).limit(limit),
    (nowMs, limit) => ['pending', nowMs, nowMs, limit],
  ),
);

/** The `limit` earliest due rows no one holds, of any account: the claim's cheap first look. */
export async function earliestDue(db: Db, table: AccountQueueTable, nowMs: number, limit: number): Promise<DueRow[]> {
  return (await earliestDueBy[table](db, nowMs, limit)).rows;
}

/**
 * Up to `most` accounts with pending rows, in id order after `afterUserId`, each with its earliest unheld due time;
 * `complete` when no account follows. One index seek per account (migration 013's index): an account's backlog of a
 * million rows costs no more than one row, and `most` bounds the cost however many accounts there are.
 */
export async function accountsWithWork(
  db: Db,
  table: AccountQueueTable,
  nowMs: number,
  afterUserId: string | undefined,
  most: number,
): Promise<{ accounts: AccountWork[]; complete: boolean }> {
  const queue = sql.table(table);
  // A loose index scan: each step seeks the next account after the one before.
  const { rows } = await sql<{ user_id: string; next_due_ms: number | string | null }>`
    with recursive accounts(user_id, n) as (
      select (select q.user_id from ${queue} q where q.state = 'pending' and q.user_id > ${afterUserId ?? ''} order by q.user_id limit 1), 1
      union all
      select (select q.user_id from ${queue} q where q.state = 'pending' and q.user_id > a.user_id order by q.user_id limit 1), a.n + 1
      from accounts a where a.user_id is not null and a.n < ${most}
    )
    select a.user_id, (
      select q.next_attempt_ms from ${queue} q
      where q.state = 'pending' and q.user_id = a.user_id and (q.lease_until_ms is null or q.lease_until_ms < ${nowMs})
      order by q.next_attempt_ms limit 1
    ) as next_due_ms
    from accounts a where a.user_id is not null`.execute(db);
  const accounts = rows.map((row) => ({ userId: row.user_id, nextDueMs: row.next_due_ms === null ? undefined : Number(row.next_due_ms) }));
  return { accounts, complete: accounts.length < most };
}

/** The earliest due rows no one holds, at most `count` of each account's, earliest first within each. */
export async function dueRowsByAccount(db: Db, table: AccountQueueTable, shares: ReadonlyMap<string, number>, nowMs: number): Promise<DueRow[]> {
  const found: DueRow[] = [];
  for (const [userId, count] of shares) {
    if (count <= 0) continue;
    found.push(...(await dueUnheld(db, table, nowMs).where('user_id', '=', userId).limit(count).execute()));
  }
  return found;
}

/**
 * When the earliest pending row no one holds falls due after `afterMs` (when the last claim looked). Rows due by then
 * were the claim's: those it left belong to accounts at their share, which a freed slot wakes. Walks the due-time
 * index in order from `afterMs`.
 */
export async function nextFutureDueMs(db: Db, table: AccountQueueTable, afterMs: number): Promise<number | undefined> {
  const [row] = (await nextFutureDueBy[table](db, afterMs)).rows;
  return row?.next_attempt_ms === null || row?.next_attempt_ms === undefined ? undefined : Number(row.next_attempt_ms);
}

const nextFutureDueBy = perQueueTable((table) =>
  compiledOnce(
    `nextFutureDueMs.${table}`,
    (db, afterMs: number) =>
      db
        .selectFrom(table)
        .select('next_attempt_ms')
        .where('state', '=', 'pending')
        .where('next_attempt_ms', '>', afterMs)
        .where('lease_until_ms', 'is', null)
        .orderBy('next_attempt_ms')
        .limit(1),
    (afterMs) => ['pending', afterMs, 1],
  ),
);
