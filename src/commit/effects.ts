// Commits what one invocation did (events, logs, errors, db and data store writes) inside the caller's transaction.
import type { Transaction } from 'kysely';
import type { ComponentInfo, DataStoreChange, InvocationOutcome } from '../runtime/types.js';
import type { DialectName } from '../store/database.js';
import type { Database } from '../store/schema.js';
import { writeSourceDb } from '../store/sources.js';
import { writeDataStores } from '../store/data-stores.js';
import { appendEvents, type AppendOptions } from './append-events.js';
import { pendingEmits } from '../model/dedupe.js';
import { madeSummary, type PendingEvent } from '../model/events.js';
import type { CommittedEvents, EventRouter } from './routing.js';
import { errorEvent, type InvocationContext } from './error-events.js';

export type { InvocationContext };

export interface EffectsInput {
  sourceId: string;
  userId: string;
  /** Listener hops that led to this invocation. */
  depth: number;
  info: ComponentInfo;
  /** One outcome per triggering event, with the context it ran in. */
  outcomes: Array<{ outcome: InvocationOutcome; context: InvocationContext }>;
  dbWrites: Record<string, unknown>;
  /** What the successful calls did to the account's data stores. */
  dataStoreWrites?: DataStoreChange[] | undefined;
}

export interface EffectsOptions {
  dialect: DialectName;
  retention: number;
  nowMs: number;
  router: EventRouter;
}

function logEvents(outcome: InvocationOutcome): PendingEvent[] {
  return outcome.logs.map((line) => ({ stream: '$logs', name: '$logs', event: line, summary: madeSummary(line.msg) }));
}

/** Stores events of one emitter and routes them, inside the caller's transaction; pass the result to `router.afterCommit`. */
export async function storeAndRoute(
  trx: Transaction<Database>,
  emitter: { id: string; userId: string; depth: number },
  extra: PendingEvent[],
  options: AppendOptions & { router: EventRouter },
): Promise<CommittedEvents> {
  const { events, afterId } = await appendEvents(trx, emitter.id, extra, options);
  const committed = { emitterId: emitter.id, userId: emitter.userId, depth: emitter.depth, events, afterId };
  if (events.length) await options.router.routeInTransaction(trx, committed);
  return committed;
}

/** Stores all effects of an invocation; returns what was committed, for `router.afterCommit`. */
export async function commitEffects(trx: Transaction<Database>, input: EffectsInput, options: EffectsOptions): Promise<CommittedEvents> {
  const emits = input.outcomes.map(({ outcome }) => (outcome.error ? [] : outcome.emits));
  const extra: PendingEvent[] = [];
  for (const { outcome, context } of input.outcomes) {
    extra.push(...logEvents(outcome));
    if (outcome.error) extra.push(errorEvent(input.sourceId, outcome.error, context, options.nowMs));
  }
  await writeSourceDb(trx, input.sourceId, input.dbWrites);
  await writeDataStores(trx, input.userId, input.dataStoreWrites, options.nowMs);
  return storeAndRoute(trx, { id: input.sourceId, userId: input.userId, depth: input.depth }, extra, {
    ...options,
    dedupe: (cache) => pendingEmits(input.info.dedupe, cache, emits),
  });
}

/**
 * A batch's runs (or their events) split where their listener depth changes, in order: [from, to) of each. Nearly
 * always one; an emitter that both listens deep in a chain and is called directly must not have its direct runs'
 * events cut as a loop.
 */
export function sameDepthRuns(depths: number[]): Array<{ depth: number; from: number; to: number }> {
  const segments: Array<{ depth: number; from: number; to: number }> = [];
  depths.forEach((depth, i) => {
    const last = segments.at(-1);
    if (last?.depth === depth) last.to = i + 1;
    else segments.push({ depth, from: i, to: i + 1 });
  });
  return segments;
}
