// Records an error a source's code threw after its run ended (from a timer it left behind) on that source's `$errors`.
import type { Logger } from 'pino';
import type { Clock } from '../lib/clock.js';
import { isId, newId } from '../model/ids.js';
import type { ComponentRuntime } from '../runtime/index.js';
import type { CallOrigin } from '../runtime/stray-errors.js';
import type { InvocationError } from '../runtime/types.js';
import type { DialectName, Store } from '../store/database.js';
import type { TransactionGroup } from '../store/group-commit.js';
import { loadSource } from '../store/sources.js';
import { storeAndRoute } from '../commit/effects.js';
import { errorEvent } from '../commit/error-events.js';
import type { EventRouter } from '../commit/routing.js';
import type { SourceLocks } from './source-locks.js';

export interface StrayErrorOptions {
  dialect: DialectName;
  retention: number;
  router: EventRouter;
  clock: Clock;
}

/** From now on, each such error of a source becomes an `$errors` event of it, named after the run that left it (trigger `after_run`). */
export function recordStrayErrors(
  runtime: ComponentRuntime,
  store: Store,
  transactions: TransactionGroup,
  locks: SourceLocks,
  options: StrayErrorOptions,
  logger: Logger,
): void {
  runtime.onStrayError((origin, index, error) => {
    // A workflow's errors are its runs' outcomes: one thrown after a step ended has no run to fail, so it is only logged.
    if (!isId(origin.sourceId, 'dc')) {
      logger.warn({ workflowId: origin.sourceId, ...origin.logContext, err: error }, 'a step threw after it ended');
      return;
    }
    // After the work on the source now under way: a deploy whose activate() threw it has not committed the source yet.
    locks
      .exclusive(origin.sourceId, () => record(store, transactions, options, origin, index, error))
      .catch((err: unknown) => logger.error({ err, sourceId: origin.sourceId }, 'could not record an error thrown after its run'));
  });
}

async function record(
  store: Store,
  transactions: TransactionGroup,
  { dialect, retention, router, clock }: StrayErrorOptions,
  origin: CallOrigin,
  index: number,
  error: InvocationError,
): Promise<void> {
  const source = await loadSource(store.db, origin.sourceId);
  if (!source) return;
  const ids = origin.logContext?.invocationIds;
  const id = Array.isArray(ids) && typeof ids[index] === 'string' ? ids[index] : newId('inv');
  const nowMs = clock.now();
  const report = errorEvent(
    source.id,
    error,
    // A hook's too: `activate` there would read as a failed hook, though it succeeded.
    { invocationId: id, trigger: 'after_run', event: null },
    nowMs,
  );
  // At the run's own hop count, as its other events: at 0, sources listening to each other's $errors would loop for ever.
  const depths = origin.logContext?.depths;
  const depth = Array.isArray(depths) && typeof depths[index] === 'number' ? depths[index] : 0;
  const emitter = { id: source.id, userId: source.user_id, depth };
  const committed = await transactions.run((trx) => storeAndRoute(trx, emitter, [report], { dialect, retention, nowMs, router }));
  if (committed.events.length) router.afterCommit(committed);
}
