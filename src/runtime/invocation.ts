// Runs an InvocationRequest on workers and assembles its result, also when a worker is killed or dies halfway.
import { performance } from 'node:perf_hooks';
import { applyDataStoreChanges, mergeDataStoreChanges } from './data-store-changes.js';
import { RuntimeClosedError, WorkerExitError } from './errors.js';
import type { RuntimeLogger } from './options.js';
import { ProtocolError, outcomesTextChars, type CallResult, type InvokeRequest } from './protocol.js';
import { ReportedLimits } from './reported-limits.js';
import { StreamedExports } from './streamed-exports.js';
import { OUTCOME_FLUSH_MS } from './worker/limits.js';
import type { DataStoreChange, HttpResponse, InvocationError, InvocationOutcome, InvocationRequest, InvocationResult, LogLine } from './types.js';
import type { WorkerProcess } from './worker-process.js';

export interface InvokeHooks {
  /** Called as soon as a run calls `respond()` (a step `$.respond()`), with the index of the event or StepInput that answered. */
  onRespond?(response: HttpResponse, eventIndex: number): void;
}

/** What one worker reported of a request: the outcomes of its first calls, and why it stopped short when it did. */
export interface WorkerReport {
  outcomes: InvocationOutcome[];
  dbWrites: Map<string, unknown>;
  /** Data store changes of the reported calls that succeeded, merged. */
  dataStoreWrites: DataStoreChange[];
  /** CPU time of the call as the server measured it (wall time where it cannot measure CPU time). */
  cpuMs: number;
  /** Set when the worker died before reporting every call. */
  stopped?: {
    error: InvocationError;
    /** Since the worker's last report: the first unreported call ran at most this long. */
    durationMs: number;
    /** `respond()` answers of calls whose outcomes never came. */
    responses: Map<number, HttpResponse>;
    /** What the first unreported call logged before the worker stopped (sent ahead of its outcome). */
    logs: LogLine[];
    /** The `$.export`s the first unreported step call made before the worker stopped (sent ahead too), if any. */
    exports?: Record<string, unknown>;
  };
}

/** Time for a worker's message to be written, read and checked, beyond a run's own timeout. */
export const DELIVERY_GRACE_MS = 250;

const ERROR_NAMES: Record<string, { name: string; code: string }> = {
  timeout: { name: 'TimeoutError', code: 'timeout' },
  out_of_memory: { name: 'OutOfMemoryError', code: 'out_of_memory' },
  process_exit: { name: 'ProcessExitError', code: 'process_exit' },
  protocol_error: { name: 'WorkerProtocolError', code: 'protocol_error' },
  crashed: { name: 'WorkerCrashError', code: 'worker_crashed' },
};

/** Methods called once per entry of `events`; a hook is called once, without one. */
function takesEvents(request: InvocationRequest): boolean {
  return request.method === 'run' || request.method === 'step';
}

/** How many calls a request makes: one per event for `run`, one per StepInput for `step`, one for a hook. */
export function callCount(request: InvocationRequest): number {
  return takesEvents(request) ? (request.eventsJson ?? request.events ?? []).length : 1;
}

/** The request's events (or StepInputs) as the worker takes them, JSON text. */
function eventsAsJson(request: InvocationRequest): string[] {
  if (!takesEvents(request)) return [];
  return request.eventsJson ?? (request.events ?? []).map((event) => JSON.stringify(event ?? null));
}

/** A copy of the request that runs only its event `index`, on the db and data stores the calls before it left. */
function onlyEvent(request: InvocationRequest, index: number, db: Record<string, unknown>, dataStoreWrites: DataStoreChange[]): InvocationRequest {
  const { eventTimeoutsMs, ...rest } = request;
  const only: InvocationRequest = { ...rest, db, timeoutMs: eventTimeoutsMs?.[index] ?? request.timeoutMs };
  const dataStores = applyDataStoreChanges(request.dataStores, dataStoreWrites);
  if (dataStores) only.dataStores = dataStores;
  if (request.eventsJson) only.eventsJson = [request.eventsJson[index]!];
  else only.events = [(request.events ?? [])[index]];
  // Ids given one per event (invocation or run ids) name only this event's now.
  const count = callCount(request);
  if (request.logContext) {
    only.logContext = Object.fromEntries(
      Object.entries(request.logContext).map(([key, value]) => [key, Array.isArray(value) && value.length === count ? [value[index]] : value]),
    );
  }
  return only;
}

/** A failed step reports its exports (how far it got) and nothing that takes effect. */
function onlyExports(step: NonNullable<InvocationOutcome['step']>): boolean {
  return step.sends.length === 0 && step.returnValue === undefined && step.exit === undefined && step.delayMs === undefined;
}

/** The result as reported, or, past a limit, the call failed with a RangeError as the worker would have failed it. */
function withinLimits(result: CallResult, limits: ReportedLimits, textChars: number | undefined): CallResult {
  // A failed call has no effects (checked above), but its logs are still kept.
  const excess = limits.excess(result, textChars);
  if (excess === undefined) return result;
  const error = { name: 'RangeError', message: excess, stack: `RangeError: ${excess}` };
  return { outcome: { emits: [], logs: [], error, durationMs: result.outcome.durationMs }, dbWrites: {} };
}

/** The error reported for the call a worker died in. */
function errorFor(exit: WorkerExitError, request: InvocationRequest): InvocationError {
  const { name, code } = ERROR_NAMES[exit.reason] ?? { name: 'WorkerCrashError', code: 'worker_crashed' };
  const message = exit.reason === 'timeout' ? `${request.method} timed out after ${request.timeoutMs} ms` : exit.message;
  return { name, message, stack: `${name}: ${message}`, code };
}

/** `artifactPath` is the bundle as the worker's account sees it. */
export async function invokeIn(
  worker: WorkerProcess,
  request: InvocationRequest,
  artifactPath: string,
  hooks: InvokeHooks | undefined,
  logger: RuntimeLogger,
): Promise<WorkerReport> {
  const count = callCount(request);
  const outcomes: InvocationOutcome[] = [];
  // A Map, not an object: a key such as "__proto__" must stay a key.
  const dbWrites = new Map<string, unknown>();
  const responses = new Map<number, HttpResponse>();
  let dataStoreWrites: DataStoreChange[] = [];
  const storeNames = new Set((request.dataStores ?? []).map((store) => store.name));
  const limits = new ReportedLimits(request);
  const startedAt = performance.now();
  let reportedAt = startedAt;
  // Lines the call in progress (index outcomes.length) sent ahead of its outcome.
  let streamed: LogLine[] = [];
  /** Characters of `streamed`, so that each logs message checks only its own lines against the call's bounds. */
  let streamedChars = 0;
  const exported = new StreamedExports();
  const measured = () => worker.lastCallCpuMs ?? performance.now() - startedAt;
  const message: InvokeRequest = {
    t: 'invoke',
    id: worker.nextRequestId(),
    artifactPath,
    method: request.method,
    events: eventsAsJson(request),
    props: request.props,
    auths: request.auths,
    db: request.db,
    httpEndpoint: request.httpEndpoint,
    customResponse: request.customResponse === true,
  };
  if (request.dataStores) message.dataStores = request.dataStores;
  if (request.unavailableSends) message.unavailableSends = request.unavailableSends;
  worker.strays.note(message.id, { sourceId: request.sourceId, method: request.method, logContext: request.logContext }, count);
  try {
    await worker.call(
      message,
      (m) => {
        switch (m.t) {
          case 'respond': {
            if (!message.customResponse || m.index < outcomes.length || m.index >= count || responses.has(m.index)) {
              throw new ProtocolError(`unexpected response for event ${m.index}`);
            }
            responses.set(m.index, m.response);
            try {
              hooks?.onRespond?.(m.response, m.index);
            } catch (error) {
              logger.error({ err: error, sourceId: request.sourceId, ...request.logContext, eventIndex: m.index }, 'onRespond hook failed');
            }
            return false;
          }
          case 'logs': {
            if (m.index !== outcomes.length || m.index >= count || !m.lines.length) throw new ProtocolError(`unexpected logs of event ${m.index}`);
            const excess = limits.logsExcess(m.lines, streamed.length, streamedChars);
            if (excess) throw new ProtocolError(excess);
            for (const line of m.lines) {
              streamed.push(line);
              streamedChars += line.msg.length;
            }
            // Not progress: a message of logs cannot buy a run more time.
            return false;
          }
          case 'exports': {
            if (request.method !== 'step') throw new ProtocolError(`a ${request.method} call sent exports`);
            exported.take(m, outcomes.length, count);
            // Not progress either.
            return false;
          }
          case 'outcomes': {
            if (m.index !== outcomes.length || m.index + m.results.length > count || (!m.results.length && !m.done)) {
              throw new ProtocolError(`unexpected outcomes from event ${m.index}`);
            }
            const first = m.results[0];
            if (first && streamed.length) {
              first.outcome.logs = [...streamed, ...first.outcome.logs];
              streamed = [];
              streamedChars = 0;
            }
            if (
              m.results.some(
                ({ outcome, dbWrites: writes, dbRemovals, dataStores }) =>
                  outcome.error &&
                  (outcome.emits.length > 0 ||
                    (outcome.step !== undefined && !onlyExports(outcome.step)) ||
                    Object.keys(writes).length > 0 ||
                    dbRemovals !== undefined ||
                    dataStores !== undefined),
              )
            ) {
              throw new ProtocolError('a failed call reported effects');
            }
            // A step reports what it did as `step` and never emits; other calls have no `step`.
            const stepCall = request.method === 'step';
            if (
              m.results.some(({ outcome }) =>
                stepCall ? !outcome.error && (outcome.step === undefined || outcome.emits.length > 0) : outcome.step !== undefined,
              )
            ) {
              throw new ProtocolError(stepCall ? 'a step call reported no step outcome, or emits' : `a ${request.method} call reported a step outcome`);
            }
            if (m.results.some(({ dataStores }) => dataStores?.some((change) => !storeNames.has(change.name)))) {
              throw new ProtocolError('a call wrote to a data store it was not given');
            }
            const textChars = outcomesTextChars.get(m);
            for (const { outcome, dbWrites: writes, dbRemovals, dataStores } of m.results.map((result) => withinLimits(result, limits, textChars))) {
              const response = responses.get(outcomes.length);
              responses.delete(outcomes.length);
              outcomes.push(response ? { ...outcome, response } : outcome);
              if (!outcome.error) for (const [key, value] of Object.entries(writes)) dbWrites.set(key, value);
              // Undefined: the key is removed (writeSourceDb).
              if (!outcome.error) for (const key of dbRemovals ?? []) dbWrites.set(key, undefined);
              if (dataStores) dataStoreWrites = mergeDataStoreChanges(dataStoreWrites, dataStores);
            }
            reportedAt = performance.now();
            exported.settled(outcomes.length);
            if (m.done && outcomes.length !== count) throw new ProtocolError(`done after ${outcomes.length} of ${count} outcomes`);
            // Only finished runs count as progress: a message cannot buy a run more time (respond() does not either).
            if (m.results.length) worker.extendTimeout();
            return m.done;
          }
          default:
            throw new ProtocolError(`unexpected ${m.t} message during an invocation`);
        }
      },
      // A worker holds finished outcomes for up to OUTCOME_FLUSH_MS, and a message of several MB takes a while to
      // travel and be checked: a call is late only once both have passed too.
      request.timeoutMs + OUTCOME_FLUSH_MS + DELIVERY_GRACE_MS,
    );
  } catch (error) {
    if (!(error instanceof WorkerExitError)) throw error;
    if (error.reason === 'closed') throw new RuntimeClosedError();
    if (error.reason === 'start_failed' || error.reason === 'evicted') throw error;
    const stopped: NonNullable<WorkerReport['stopped']> = {
      error: errorFor(error, request),
      durationMs: performance.now() - reportedAt,
      responses,
      logs: streamed,
    };
    const exports = exported.of(outcomes.length);
    if (exports) stopped.exports = exports;
    // The pool's line about the process names only its account; this one names the runs it stopped.
    logger.warn(
      { sourceId: request.sourceId, ...request.logContext, reason: error.reason, unreported: count - outcomes.length },
      'the worker stopped during a call',
    );
    return { outcomes, dbWrites, dataStoreWrites, cpuMs: measured(), stopped };
  }
  return { outcomes, dbWrites, dataStoreWrites, cpuMs: measured() };
}

/**
 * Runs a request through `attempt` (one worker call). When a worker dies with several calls unreported, which of
 * them killed it is unknown: each of those runs again on its own, so that the failure lands on its own event and
 * the others still run. A call that finished before the death may so run twice, as after any crash (DESIGN.md,
 * section 1). If a worker cannot even be started for that, the rest fail with the error of the death.
 */
export async function invokeIsolatingFailures(
  request: InvocationRequest,
  hooks: InvokeHooks | undefined,
  attempt: (request: InvocationRequest, hooks: InvokeHooks | undefined) => Promise<WorkerReport>,
): Promise<InvocationResult> {
  const { outcomes, dbWrites, stopped, cpuMs: firstCpuMs, dataStoreWrites: firstStoreWrites } = await attempt(request, hooks);
  let cpuMs = firstCpuMs;
  let dataStoreWrites = firstStoreWrites;
  const count = callCount(request);
  // The last call left fails with the death, unless it is a timeout it may have had more time for.
  const ownTime = (index: number) => stopped?.error.code === 'timeout' && (request.eventTimeoutsMs?.[index] ?? 0) > request.timeoutMs;
  const firstUnreported = outcomes.length;
  if (stopped && count - outcomes.length === 1 && !ownTime(outcomes.length)) outcomes.push(failedOutcome(stopped, outcomes.length, true));
  else if (stopped) {
    const onRespond = hooks?.onRespond;
    for (let index = outcomes.length; index < count; index++) {
      let alone: WorkerReport;
      try {
        alone = await attempt(
          onlyEvent(request, index, { ...request.db, ...Object.fromEntries(dbWrites) }, dataStoreWrites),
          onRespond && { onRespond: (response: HttpResponse) => onRespond(response, index) },
        );
      } catch (error) {
        if (error instanceof RuntimeClosedError) throw error;
        for (; index < count; index++) outcomes.push(failedOutcome(stopped, index, index === firstUnreported));
        break;
      }
      cpuMs += alone.cpuMs;
      const outcome = alone.outcomes[0] ?? failedOutcome(alone.stopped!, 0, true);
      // The HTTP client got the first answer given; a second one from the re-run went nowhere.
      const earlier = stopped.responses.get(index);
      outcomes.push(earlier ? { ...outcome, response: earlier } : outcome);
      for (const [key, value] of alone.dbWrites) dbWrites.set(key, value);
      dataStoreWrites = mergeDataStoreChanges(dataStoreWrites, alone.dataStoreWrites);
    }
  }
  const result: InvocationResult = { outcomes, dbWrites: Object.fromEntries(dbWrites), cpuMs };
  if (dataStoreWrites.length) result.dataStoreWrites = dataStoreWrites;
  return result;
}

/**
 * The outcome of call `index` of a report that stopped before it; `first`: the call that was running, whose lines it
 * keeps, and its exports, as a failed step keeps them (nothing else of the step takes effect).
 */
function failedOutcome(stopped: NonNullable<WorkerReport['stopped']>, index: number, first: boolean): InvocationOutcome {
  const outcome: InvocationOutcome = { emits: [], logs: first ? stopped.logs : [], error: stopped.error, durationMs: stopped.durationMs };
  if (first && stopped.exports) outcome.step = { exports: stopped.exports, sends: [] };
  const response = stopped.responses.get(index);
  if (response) outcome.response = response;
  return outcome;
}
