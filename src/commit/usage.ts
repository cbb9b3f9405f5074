// Counts runs and compute time against an account's current period, inside the transaction that commits them.
import type { Transaction } from 'kysely';
import type { Database } from '../store/schema.js';
import { addUsage } from '../store/usage.js';
import type { UserRow } from '../store/users.js';
import { billingPeriod, dayPeriod } from '../model/periods.js';

/**
 * Counts invocations and compute time against the account's current period (the day, or the paid plan's month).
 * Compute time is the worker's CPU time as the runtime measured it, never what the runs reported.
 */
export async function billUsage(trx: Transaction<Database>, account: UserRow, count: number, cpuMs: number, nowMs: number): Promise<void> {
  const computeMs = Math.round(cpuMs);
  const period = account.plan === 'paid' ? billingPeriod(account.created_at, nowMs).key : dayPeriod(nowMs);
  await addUsage(trx, account.id, period, count, computeMs);
}
