// Records an error a source's or workflow step's code threw after its call ended (from a timer it left behind) on its `$errors`.
import type { Logger } from 'pino';
import type { Clock } from '../lib/clock.js';
import { isId, newId } from '../model/ids.js';
import type { ComponentRuntime } from '../runtime/index.js';
import type { CallOrigin } from '../runtime/stray-errors.js';
import type { InvocationError } from '../runtime/types.js';
import type { DialectName, Store } from '../store/database.js';
import type { TransactionGroup } from '../store/group-commit.js';
import { loadSource } from '../store/sources.js';
import { holdRun } from '../store/workflows.js';
import { storeAndRoute } from '../commit/effects.js';
import { errorEvent } from '../commit/error-events.js';
import { workflowErrorEvent } from '../commit/workflow-steps.js';
import type { CommittedEvents, EventRouter } from '../commit/routing.js';
import type { SourceLocks } from './source-locks.js';

export interface StrayErrorOptions {
  dialect: DialectName;
  retention: number;
  router: EventRouter;
  clock: Clock;
}

/**
 * From now on, each such error of a source becomes an `$errors` event of it, named after the run that left it (trigger
 * `after_run`); a workflow step's, one of the workflow, naming its run and step (trigger `after_step`).
 */
export function recordStrayErrors(
  runtime: ComponentRuntime,
  store: Store,
  transactions: TransactionGroup,
  locks: SourceLocks,
  options: StrayErrorOptions,
  logger: Logger,
): void {
  runtime.onStrayError((origin, index, error) => {
    // No lock: a workflow is committed before any step of it runs; its delete is fenced by the run's row (holdRun).
    if (!isId(origin.sourceId, 'dc')) {
      recordForWorkflow(transactions, options, origin, index, error).catch((err: unknown) =>
        logger.error({ err, workflowId: origin.sourceId, ...origin.logContext }, 'could not record an error a step threw after it ended'),
      );
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

/** Fails nothing: the run went on (or ended) when the step did. A run no longer there went with its deleted workflow. */
async function recordForWorkflow(
  transactions: TransactionGroup,
  { dialect, retention, router, clock }: StrayErrorOptions,
  origin: CallOrigin,
  index: number,
  error: InvocationError,
): Promise<void> {
  const runIds = origin.logContext?.runIds;
  const runId = Array.isArray(runIds) ? runIds[index] : undefined;
  const step = origin.logContext?.step;
  if (typeof runId !== 'string') return;
  const committed = await transactions.run(async (trx): Promise<CommittedEvents | undefined> => {
    const run = await holdRun(trx, dialect, origin.sourceId, runId);
    if (!run) return undefined;
    const nowMs = clock.now();
    const report = workflowErrorEvent(run, typeof step === 'string' ? step : '', error, nowMs, true);
    // At the run's own hop count, as a failed step's: workflows listening to each other's $errors are cut like any loop.
    const emitter = { id: run.workflow_id, userId: run.user_id, depth: run.depth };
    return storeAndRoute(trx, emitter, [report], { dialect, retention, nowMs, router });
  });
  if (committed?.events.length) router.afterCommit(committed);
}
