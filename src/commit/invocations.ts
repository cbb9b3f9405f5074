// Queue rows for new invocations, written inside the caller's transaction (listener runs, timer runs) or by the dispatcher.
import type { Transaction } from 'kysely';
import type { DialectName } from '../store/database.js';
import type { Database } from '../store/schema.js';
import { insertInvocations, type InvocationRow } from '../store/invocations.js';
import { newId } from '../model/ids.js';
import type { TriggerKind } from '../model/events.js';

export interface NewInvocation {
  sourceId: string;
  userId: string;
  trigger: TriggerKind;
  event: unknown;
  /** Listener hops that led to this invocation (0 for HTTP, timers and manual runs). */
  depth?: number;
  /** The timer prop whose due time queued this run (timer runs only). */
  propName?: string;
}

export function invocationRows(items: NewInvocation[], nowMs: number): InvocationRow[] {
  return items.map((item) => ({
    id: newId('inv'),
    source_id: item.sourceId,
    user_id: item.userId,
    trigger: item.trigger,
    event: JSON.stringify(item.event ?? null),
    created_ms: nowMs,
    depth: item.depth ?? 0,
    attempts: 0,
    lease_owner: null,
    lease_until_ms: null,
    prop_name: item.propName ?? null,
  }));
}

/** Queues invocations inside the caller's transaction; whoever runs them must be woken once it commits. */
export async function queueInvocations(trx: Transaction<Database>, dialect: DialectName, items: NewInvocation[], nowMs: number): Promise<string[]> {
  if (!items.length) return [];
  const rows = invocationRows(items, nowMs);
  await insertInvocations(trx, dialect, rows);
  return rows.map((r) => r.id);
}
