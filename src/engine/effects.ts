// Commits what one invocation did (events, logs, errors, db writes) inside the caller's transaction.
import type { Transaction } from 'kysely';
import type { ComponentInfo, InvocationOutcome } from '../runtime/types.js';
import type { DialectName } from '../store/database.js';
import type { Database, TriggerKind } from '../store/schema.js';
import { writeSourceDb } from '../store/sources.js';
import { appendEvents, pendingEmits, type AppendOptions, type PendingEvent } from '../core/event-pipeline.js';
import type { CommittedEvents, EventRouter } from './routing.js';

/** The context a failure is reported with in an `$errors` event. */
export interface InvocationContext {
  invocationId: string;
  trigger: TriggerKind | 'deploy' | 'activate' | 'deactivate';
  /** The triggering event, as a value or as the JSON text of its queue row (parsed only for an `$errors` event). */
  event?: unknown;
  eventJson?: string;
}

export interface EffectsInput {
  sourceId: string;
  userId: string;
  /** Listener hops that led to this invocation. */
  depth: number;
  info: ComponentInfo;
  /** One outcome per triggering event, with the context it ran in. */
  outcomes: Array<{ outcome: InvocationOutcome; context: InvocationContext }>;
  dbWrites: Record<string, unknown>;
}

export interface EffectsOptions {
  dialect: DialectName;
  retention: number;
  nowMs: number;
  router: EventRouter;
}

/** Builds the `$errors` event of a failed run or hook, as DESIGN.md section 3 describes it. */
export function errorEvent(sourceId: string, outcome: InvocationOutcome, context: InvocationContext, nowMs: number): PendingEvent {
  const error = outcome.error!;
  return {
    stream: '$errors',
    name: '$errors',
    summary: `${error.name}: ${error.message}`.slice(0, 200),
    event: {
      error: { name: error.name, message: error.message, stack: error.stack, code: error.code ?? error.name },
      original_event: context.eventJson === undefined ? (context.event ?? null) : JSON.parse(context.eventJson),
      original_context: { id: context.invocationId, ts: new Date(nowMs).toISOString(), source_id: sourceId, trigger: context.trigger },
    },
  };
}

function logEvents(outcome: InvocationOutcome): PendingEvent[] {
  return outcome.logs.map((line) => ({ stream: '$logs', name: '$logs', event: line, summary: line.msg.slice(0, 200) }));
}

/** Stores events of one emitter and routes them, inside the caller's transaction; pass the result to `router.afterCommit`. */
export async function storeAndRoute(
  trx: Transaction<Database>,
  emitter: { id: string; userId: string; depth: number },
  extra: PendingEvent[],
  options: AppendOptions & { router: EventRouter },
): Promise<CommittedEvents> {
  const events = await appendEvents(trx, emitter.id, extra, options);
  const committed = { emitterId: emitter.id, userId: emitter.userId, depth: emitter.depth, events };
  if (events.length) await options.router.routeInTransaction(trx, committed);
  return committed;
}

/** Stores all effects of an invocation; returns what was committed, for `router.afterCommit`. */
export async function commitEffects(trx: Transaction<Database>, input: EffectsInput, options: EffectsOptions): Promise<CommittedEvents> {
  const emits = input.outcomes.flatMap(({ outcome }) => (outcome.error ? [] : outcome.emits));
  const extra: PendingEvent[] = [];
  for (const { outcome, context } of input.outcomes) {
    extra.push(...logEvents(outcome));
    if (outcome.error) extra.push(errorEvent(input.sourceId, outcome, context, options.nowMs));
  }
  await writeSourceDb(trx, input.sourceId, input.dbWrites);
  return storeAndRoute(trx, { id: input.sourceId, userId: input.userId, depth: input.depth }, extra, {
    ...options,
    dedupe: (cache) => pendingEmits(input.info.dedupe, cache, emits),
  });
}
