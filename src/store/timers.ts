// Queries on timers: replace a source's timers, find the next due time, claim a due time exactly once.
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Database, TimersTable } from './schema.js';

export type TimerRow = Selectable<TimersTable>;
type Db = Kysely<Database> | Transaction<Database>;

/**
 * Replaces the timers of a source (or workflow). A timer whose schedule is unchanged keeps its next due time: an
 * update that leaves it alone (a rename, new code) would otherwise put its run off by a whole interval, and updates
 * coming more often than the interval would keep it from ever running.
 */
export async function replaceTimers(db: Db, sourceId: string, rows: TimerRow[]): Promise<void> {
  const before = await db.selectFrom('timers').select(['prop_name', 'schedule', 'next_due_ms']).where('source_id', '=', sourceId).execute();
  await db.deleteFrom('timers').where('source_id', '=', sourceId).execute();
  const kept = rows.map((row) => {
    const same = before.find((old) => old.prop_name === row.prop_name && old.schedule === row.schedule);
    return same ? { ...row, next_due_ms: same.next_due_ms } : row;
  });
  if (kept.length) await db.insertInto('timers').values(kept).execute();
}

export async function nextDueMs(db: Db): Promise<number | undefined> {
  const row = await db
    .selectFrom('timers')
    .select((eb) => eb.fn.min('next_due_ms').as('due'))
    .executeTakeFirst();
  return row?.due === null || row?.due === undefined ? undefined : Number(row.due);
}

export function dueTimers(db: Db, nowMs: number, limit: number): Promise<TimerRow[]> {
  return db.selectFrom('timers').selectAll().where('next_due_ms', '<=', nowMs).orderBy('next_due_ms').limit(limit).execute();
}

/** Moves a timer from `expectedDue` to `nextDue`; false when another node (or an update) got there first. */
export async function advanceTimer(db: Db, timer: TimerRow, nextDue: number): Promise<boolean> {
  const result = await db
    .updateTable('timers')
    .set({ next_due_ms: nextDue })
    .where('source_id', '=', timer.source_id)
    .where('prop_name', '=', timer.prop_name)
    .where('next_due_ms', '=', timer.next_due_ms)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * True when a run of this timer prop is queued or running, so the next one is skipped, not stacked. Each prop is
 * asked about its own runs only: a busy timer prop must not starve another one of the same source. A timer run queued
 * before runs named their prop (a null name) counts for every prop, as it did then.
 */
export async function hasPendingTimerRun(db: Db, sourceId: string, propName: string): Promise<boolean> {
  const row = await db
    .selectFrom('invocations')
    .select('id')
    .where('source_id', '=', sourceId)
    .where('trigger', '=', 'timer')
    .where((eb) => eb.or([eb('prop_name', '=', propName), eb('prop_name', 'is', null)]))
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
