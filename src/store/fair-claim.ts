// What a fair claim of an outbound queue reads: which accounts have rows pending, and each account's earliest due rows.
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;

/** The outbound queues shared between accounts; both keep `state`, `user_id`, `next_attempt_ms` and a lease. */
export type AccountQueueTable = 'webhook_deliveries' | 'workflow_sends';

/** An account with pending rows, and when its earliest row that no one holds falls due (undefined: all are held). */
export interface AccountWork {
  userId: string;
  nextDueMs: number | undefined;
}

/**
 * Every account with pending rows, each with its earliest unheld due time. One index seek per account (the index of
 * migration 013), not a scan of the queue: an account's backlog of a million rows costs no more than one row.
 */
export async function accountsWithWork(db: Db, table: AccountQueueTable, nowMs: number): Promise<AccountWork[]> {
  const queue = sql.table(table);
  // A loose index scan: each step seeks the next account after the one before.
  const { rows } = await sql<{ user_id: string; next_due_ms: number | string | null }>`
    with recursive accounts(user_id) as (
      select (select q.user_id from ${queue} q where q.state = 'pending' order by q.user_id limit 1)
      union all
      select (select q.user_id from ${queue} q where q.state = 'pending' and q.user_id > a.user_id order by q.user_id limit 1)
      from accounts a where a.user_id is not null
    )
    select a.user_id, (
      select q.next_attempt_ms from ${queue} q
      where q.state = 'pending' and q.user_id = a.user_id and (q.lease_until_ms is null or q.lease_until_ms < ${nowMs})
      order by q.next_attempt_ms limit 1
    ) as next_due_ms
    from accounts a where a.user_id is not null`.execute(db);
  return rows.map((row) => ({ userId: row.user_id, nextDueMs: row.next_due_ms === null ? undefined : Number(row.next_due_ms) }));
}

/** The ids of the earliest due rows no one holds, at most `count` of each account's, earliest first within each. */
export async function dueIdsByAccount(db: Db, table: AccountQueueTable, shares: ReadonlyMap<string, number>, nowMs: number): Promise<string[]> {
  const ids: string[] = [];
  for (const [userId, count] of shares) {
    if (count <= 0) continue;
    const rows = await db
      .selectFrom(table)
      .select('id')
      .where('state', '=', 'pending')
      .where('user_id', '=', userId)
      .where('next_attempt_ms', '<=', nowMs)
      .where((eb) => eb.or([eb('lease_until_ms', 'is', null), eb('lease_until_ms', '<', nowMs)]))
      .orderBy('next_attempt_ms')
      .orderBy('id')
      .limit(count)
      .execute();
    for (const row of rows) ids.push(row.id);
  }
  return ids;
}
