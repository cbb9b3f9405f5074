// When the first live lease of a leased queue ends: a node that dies holding leases never says so, so the other
// nodes wake then to take its work over.
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from './schema.js';

/** The queues whose rows are claimed with `lease_owner` / `lease_until_ms`. */
export type LeasedTable = 'invocations' | 'workflow_runs' | 'webhook_deliveries' | 'workflow_sends';

/** When the first lease live at `nowMs` ends, if any. */
export async function nextLeaseEndMs(db: Kysely<Database> | Transaction<Database>, table: LeasedTable, nowMs: number): Promise<number | undefined> {
  const { rows } = await sql<{
    end: number | string | null;
  }>`select min(lease_until_ms) as "end" from ${sql.table(table)} where lease_until_ms >= ${nowMs}`.execute(db);
  const end = rows[0]?.end;
  return end === null || end === undefined ? undefined : Number(end);
}
