// Runs an invoke request in the worker: each event, StepInput or the hook in order, its outcomes sent back in few messages.
import { setImmediate as originalSetImmediate } from 'node:timers';
import { AsyncLocalStorage } from 'node:async_hooks';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HttpResponse, InvocationError, LogLine } from '../types.js';
import type { CallResult, InvokeRequest, LogsMessage, OutcomesMessage } from '../protocol.js';
import { buildThis, type ThisInputs } from './context.js';
import { DataStores } from './data-store.js';
import { LoadFailure } from './failure.js';
import type { Send } from './harden.js';
import { MAX_ERROR_CHARS, OUTCOME_FLUSH_BYTES, OUTCOME_FLUSH_MS } from './limits.js';
import { loadComponent, type LoadedComponent, withoutServerPaths } from './load.js';
import {
  ArrayPrototypePush,
  ArrayPrototypeSlice,
  JSONParse,
  JSONStringify,
  MapPrototypeForEach,
  MapPrototypeSet,
  matches,
  ObjectKeys,
  PerformanceNow,
  ReflectApply,
  SafeMap,
  StringPrototypeIndexOf,
  StringPrototypeSlice,
} from './primordials.js';
import { CallScope } from './scope.js';
import { builtinsChangeWarning, reportIfSpoiled, reportSpoiled } from './pristine.js';
import { ExportsAhead } from './exports-ahead.js';
import { StepCall, stepInput } from './step.js';

// Taken before timer-cap.ts caps the globals: the runtime's own waits never count against components.
const setImmediate = originalSetImmediate;

const calls = new AsyncLocalStorage<CallScope>();
/** The call in progress; it owns errors that surface outside any async context. */
let active: CallScope | undefined;

/** The call whose code is running now: the one that started this async chain, else the one in progress. */
function currentScope(): CallScope | undefined {
  return calls.getStore() ?? active;
}

/** The call of an invoke request now running, whose log lines go ahead of its outcome as they are logged. */
interface LiveCall {
  scope: CallScope;
  requestId: number;
  batch: OutcomeBatch;
  send: Send;
}
let live: LiveCall | undefined;

/** Sends the live call's unsent lines, after the outcomes held before it so that the server hears them in order. */
function streamLogs(): void {
  const call = live;
  if (!call || call.scope.closed || call.scope.logs.length === call.scope.sentLogs) return;
  call.batch.flush(false);
  const { scope } = call;
  const message: LogsMessage = { t: 'logs', id: call.requestId, index: scope.index, lines: ArrayPrototypeSlice(scope.logs, scope.sentLogs) };
  call.send(JSONStringify(message));
  scope.sentLogs = scope.logs.length;
}

/** What a step call tells of each export as it is kept: see ExportsAhead. */
function exportsAhead(requestId: number, index: number, send: Send, scope: CallScope): (name: string, json: string | undefined) => void {
  const ahead = new ExportsAhead(requestId, index, send, () => scope.closed);
  return (name, json) => ahead.note(name, json);
}

export function logToCurrentCall(k: LogLine['k'], msg: string): void {
  const scope = currentScope();
  if (!scope) return;
  const before = scope.logs.length;
  scope.log(k, msg);
  if (live?.scope !== scope || scope.logs.length === before) return;
  // The channel writes to the pipe at once when nothing waits before it: a line sent now outlives a synchronous
  // loop right after it, which no timer could fire in.
  streamLogs();
}

/** Where errors thrown after their call ended are reported: the channel, once a request has given it. */
let strayTo: Send | undefined;

/**
 * An uncaught exception or unhandled rejection fails the call it came from. One thrown after that call ended (from a
 * timer it left behind) fails no other call: the first of each call is reported as its source's error, later ones dropped.
 */
export function failCurrentCall(error: unknown): void {
  const scope = currentScope();
  if (!scope) return;
  if (!scope.closed) {
    scope.fail(error);
    return;
  }
  if (scope.origin === undefined || scope.strayReported || !strayTo) return;
  scope.strayReported = true;
  strayTo({ t: 'stray', id: scope.origin, index: scope.index, error: toInvocationError(error) });
}

let leftoverCheckQueued = false;

/**
 * After a timer callback that ran with no call going (one a finished call left behind): whether it changed the shared
 * built-ins, told to the server at once, so that the idle worker is retired before the account's next call meets the
 * change. One check per turn of the event loop, however many such timers fired in it.
 */
export function checkAfterLeftoverTimer(): void {
  if (live !== undefined || strayTo === undefined || leftoverCheckQueued) return;
  leftoverCheckQueued = true;
  setImmediate(() => {
    leftoverCheckQueued = false;
    if (live === undefined && strayTo !== undefined) reportIfSpoiled(strayTo);
  });
}

const here = path.dirname(fileURLToPath(import.meta.url));
/** The worker's own files, built and (through source maps) as written: frames in them are machinery, not the component's. */
const OWN_FILES = [here, path.resolve(here, '../../../src/runtime/worker')].map((dir) => dir + path.sep);

const FRAME = /^\s+at /;

/** Whether a stack line is a frame of the worker's own machinery. */
function isOwnFrame(line: string): boolean {
  if (!matches(FRAME, line)) return false;
  if (StringPrototypeIndexOf(line, 'AsyncLocalStorage.run') !== -1) return true;
  for (let index = 0; index < OWN_FILES.length; index++) if (StringPrototypeIndexOf(line, OWN_FILES[index]!) !== -1) return true;
  return false;
}

/** Line by line with the built-ins taken at start: a failed call's stack is read after its code may have replaced `split`. */
function withoutOwnFrames(stack: string): string {
  let out: string | undefined;
  let start = 0;
  while (start <= stack.length) {
    const end = StringPrototypeIndexOf(stack, '\n', start);
    const line = StringPrototypeSlice(stack, start, end === -1 ? stack.length : end);
    if (!isOwnFrame(line)) out = out === undefined ? line : `${out}\n${line}`;
    if (end === -1) break;
    start = end + 1;
  }
  return out ?? '';
}

function cut(text: string): string {
  return text.length > MAX_ERROR_CHARS ? `${StringPrototypeSlice(text, 0, MAX_ERROR_CHARS)}… [cut]` : text;
}

/**
 * What the server is told of a thrown value. Reading it runs component code (getters, proxies, toJSON): a value that
 * throws then is reported as unreadable, since a throw here, from the uncaughtException handler, would end the worker
 * and fail whatever call of the account is running in it.
 */
export function toInvocationError(error: unknown): InvocationError {
  try {
    return readError(error);
  } catch {
    const message = 'the component threw a value that throws when read';
    return { name: 'Error', message, stack: `Error: ${message}` };
  }
}

function readError(error: unknown): InvocationError {
  if (error instanceof Error) {
    const name = typeof error.name === 'string' && error.name ? error.name : 'Error';
    let message = typeof error.message === 'string' ? error.message : String(error.message);
    // "fetch failed" says nothing; its cause (a refused destination, a reset connection) says what happened.
    const cause = (error as { cause?: unknown }).cause;
    if (cause instanceof Error && typeof cause.message === 'string' && cause.message !== message) message = `${message}: ${cause.message}`;
    message = withoutServerPaths(message);
    let stack: string;
    try {
      stack = typeof error.stack === 'string' ? withoutServerPaths(withoutOwnFrames(error.stack)) : `${name}: ${message}`;
    } catch {
      stack = `${name}: ${message}`;
    }
    const code = (error as { code?: unknown }).code;
    return { name: cut(name), message: cut(message), stack: cut(stack), code: typeof code === 'string' || typeof code === 'number' ? `${code}` : undefined };
  }
  let message: string;
  try {
    message = typeof error === 'string' ? error : (JSONStringify(error) ?? String(error));
  } catch {
    message = String(error);
  }
  return { name: 'Error', message: cut(message), stack: cut(`Error: ${message}`) };
}

/**
 * The component's function in the call's async context; settles through `resolve` and `reject`, never by its own
 * promise. The await takes the component's (native) promise without looking up the `then` its code may have replaced.
 */
async function runIn(fn: () => unknown, resolve: () => void, reject: (error: unknown) => void): Promise<void> {
  try {
    await fn();
    resolve();
  } catch (error) {
    reject(error);
  }
}

/** Runs `fn` as the call of `scope`: errors it throws anywhere, even outside its promise, fail it. */
export async function call(scope: CallScope, fn: () => unknown): Promise<void> {
  active = scope;
  try {
    // A failure ends the wait at once: the component's promise may never settle.
    await scope.until((resolve, reject) => calls.run(scope, () => runIn(fn, resolve, reject)));
    // Node reports a floating rejected promise only once the microtask queue drains: give it that chance
    // while the call is still open, so the rejection fails the call it came from.
    await scope.until((resolve) => setImmediate(resolve));
  } finally {
    active = undefined;
  }
}

/** The call of `run` with an event or of a hook; steps are called by StepCall. */
function callFor(loaded: LoadedComponent, request: InvokeRequest, self: Record<string, unknown>, event: unknown): () => unknown {
  const { component } = loaded;
  if (request.method === 'run') {
    // A source without run emits each triggering event unchanged.
    if (typeof component.run !== 'function') return () => (self.$emit as (e: unknown) => void)(event);
    const run = component.run as (this: unknown, event: unknown) => unknown;
    return () => ReflectApply(run, self, [event]);
  }
  const hooks = component.hooks as Record<string, unknown> | undefined;
  const hook = hooks?.[request.method];
  if (typeof hook !== 'function') return () => undefined;
  return () => ReflectApply(hook as (this: unknown) => unknown, self, []);
}

/**
 * Collects the outcomes of a request's calls and sends them together: at the end of the request, and after a call
 * that ends OUTCOME_FLUSH_MS after the last message or with OUTCOME_FLUSH_BYTES waiting, so that the server hears
 * of progress (and of a call that never ends) in bounded time and memory.
 */
class OutcomeBatch {
  private results: CallResult[] = [];
  private firstIndex = 0;
  private bytes = 0;
  private sentAt = PerformanceNow();

  constructor(
    private readonly requestId: number,
    private readonly send: Send,
  ) {}

  add(result: CallResult, bytes: number): void {
    ArrayPrototypePush(this.results, result);
    this.bytes += bytes;
    if (this.bytes >= OUTCOME_FLUSH_BYTES || PerformanceNow() - this.sentAt >= OUTCOME_FLUSH_MS) this.flush(false);
  }

  flush(done: boolean): void {
    if (!this.results.length && !done) return;
    const message: OutcomesMessage = { t: 'outcomes', id: this.requestId, index: this.firstIndex, results: this.results, done };
    this.send(JSONStringify(message));
    this.firstIndex += this.results.length;
    this.results = [];
    this.bytes = 0;
    this.sentAt = PerformanceNow();
  }
}

/** A component that no longer loads (it did when saved) fails every call of the request with the reason. */
function failedOutcomes(request: InvokeRequest, count: number, failure: LoadFailure, send: Send): void {
  const stack = `ComponentLoadError: ${failure.message}`;
  const error: InvocationError = { name: 'ComponentLoadError', message: failure.message, stack, code: failure.code };
  const results: CallResult[] = [];
  for (let index = 0; index < count; index++) ArrayPrototypePush(results, { outcome: { emits: [], logs: [], error, durationMs: 0 }, dbWrites: {} });
  const message: OutcomesMessage = { t: 'outcomes', id: request.id, index: 0, results, done: true };
  reportIfSpoiled(send);
  send(JSONStringify(message));
}

export async function invoke(request: InvokeRequest, send: Send): Promise<void> {
  const isStep = request.method === 'step';
  const inputs: unknown[] = request.method === 'run' || isStep ? [] : [undefined];
  if (request.method === 'run' || isStep) {
    for (let index = 0; index < request.events.length; index++) inputs[index] = JSONParse(request.events[index]!);
  }
  let loaded: LoadedComponent;
  try {
    loaded = loadComponent(request.artifactPath, isStep);
  } catch (error) {
    if (!(error instanceof LoadFailure)) throw error;
    failedOutcomes(request, inputs.length, error, send);
    return;
  }
  const committed = new SafeMap<string, unknown>();
  const dbKeys = ObjectKeys(request.db);
  for (let index = 0; index < dbKeys.length; index++) MapPrototypeSet(committed, dbKeys[index]!, request.db[dbKeys[index]!]);
  const inputsOfThis: ThisInputs = {
    httpEndpoint: request.httpEndpoint,
    customResponse: request.customResponse,
    auths: request.auths,
    stores: new DataStores(request.dataStores),
  };
  const batch = new OutcomeBatch(request.id, send);
  strayTo = send;
  for (let index = 0; index < inputs.length; index++) {
    const scope = new CallScope(request.method, index);
    scope.origin = request.id;
    const sendResponse = (response: HttpResponse) => send({ t: 'respond', id: request.id, index, response });
    const step = isStep
      ? new StepCall(scope, request.customResponse, sendResponse, request.unavailableSends, exportsAhead(request.id, index, send, scope))
      : undefined;
    const started = PerformanceNow();
    live = { scope, requestId: request.id, batch, send };
    let error: unknown;
    let failed = false;
    try {
      if (step) {
        const input = stepInput(inputs[index]);
        const self = buildThis(loaded, inputsOfThis, input.props, scope, committed, sendResponse);
        await call(scope, step.body(loaded.component, self, input.steps));
      } else {
        const self = buildThis(loaded, inputsOfThis, request.props, scope, committed, sendResponse);
        await call(scope, callFor(loaded, request, self, inputs[index]));
      }
    } catch (thrown) {
      failed = true;
      error = thrown;
    }
    if (!failed && scope.failure !== undefined) {
      failed = true;
      error = scope.failure;
    }
    // `$.flow.exit()` ends a step by throwing: a success, unless something else failed the call first.
    if (failed && step?.endedByExit(error) && (scope.failure === undefined || step.endedByExit(scope.failure))) failed = false;
    // The request's last call is checked, and told in its logs why the account's next call will start a new worker.
    const warning = index === inputs.length - 1 ? builtinsChangeWarning() : undefined;
    if (warning !== undefined) scope.log('warn', warning);
    live = undefined;
    scope.closed = true;
    // Without a prototype, so that a key such as "__proto__" stays an ordinary key.
    const dbWrites = { __proto__: null } as unknown as Record<string, unknown>;
    const removed: string[] = [];
    let dbBytes = 0;
    if (!failed) {
      MapPrototypeForEach(scope.dbWrites, (write, key) => {
        if (write.value === undefined) ArrayPrototypePush(removed, key);
        else dbWrites[key] = write.value;
        MapPrototypeSet(committed, key, write.value);
        dbBytes += write.bytes;
      });
    }
    const stores = failed ? undefined : inputsOfThis.stores.commit(scope);
    if (stores) dbBytes += stores.bytes;
    const done = step?.outcome(failed);
    // A failed call's outcome is there only to carry its exports.
    const reported = done && (!failed || ObjectKeys(done.step.exports).length > 0) ? done : undefined;
    // Every field in the literal (JSON leaves out those undefined): assigned later, a field would meet any setter
    // component code put on Object.prototype under its name, and a failed call could be reported as a success.
    const outcome: CallResult['outcome'] = {
      // A step has no $emit; what it hands on travels in `step`.
      emits: failed || step ? [] : scope.emits,
      logs: scope.sentLogs ? ArrayPrototypeSlice(scope.logs, scope.sentLogs) : scope.logs,
      durationMs: PerformanceNow() - started,
      error: failed ? toInvocationError(error) : undefined,
      step: reported?.step,
    };
    const result: CallResult = {
      outcome,
      dbWrites,
      dbRemovals: removed.length ? removed : undefined,
      dataStores: stores?.changes.length ? stores.changes : undefined,
    };
    batch.add(result, scope.emitBytes + dbBytes + scope.logChars + (reported?.bytes ?? 0));
  }
  reportSpoiled(send);
  batch.flush(true);
}
