// Queries on the usage counters (invocations and compute time per account and period).
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.js';
import { compiledOnce } from './compiled.js';

export interface UsageFigures {
  invocations: number;
  computeMs: number;
}

export async function readUsage(db: Kysely<Database>, userId: string, period: string): Promise<UsageFigures> {
  const row = await db.selectFrom('usage').select(['invocations', 'compute_ms']).where('user_id', '=', userId).where('period', '=', period).executeTakeFirst();
  return { invocations: Number(row?.invocations ?? 0), computeMs: Number(row?.compute_ms ?? 0) };
}

const upsertUsage = compiledOnce(
  'addUsage',
  (db, userId: string, period: string, invocations: number, computeMs: number) =>
    db
      .insertInto('usage')
      .values({ user_id: userId, period, invocations, compute_ms: computeMs })
      .onConflict((oc) =>
        oc.columns(['user_id', 'period']).doUpdateSet((eb) => ({
          invocations: eb('usage.invocations', '+', invocations),
          compute_ms: eb('usage.compute_ms', '+', computeMs),
        })),
      ),
  (userId, period, invocations, computeMs) => [userId, period, invocations, computeMs, invocations, computeMs],
);

/** Adds to an account's counters for a period (creating the row on first use). */
export async function addUsage(
  db: Kysely<Database> | Transaction<Database>,
  userId: string,
  period: string,
  invocations: number,
  computeMs: number,
): Promise<void> {
  await upsertUsage(db, userId, period, invocations, computeMs);
}
