// One call of a workflow step: the `$` it gets (exports, sends, flow control, respond) and the StepOutcome it leaves.
import type { HttpResponse, StepInput, StepOutcome, StepSend } from '../types.js';
import { channelNameProblem, sseChannelProblem } from './channel-rules.js';
import { jsonBytes, jsonCopy } from './json.js';
import { MAX_STEP_BYTES_PER_CALL, MAX_STEP_DELAY_MS, MAX_STEP_SENDS_PER_CALL } from './limits.js';
import type { Component } from './load.js';
import { isPlainObject } from './props.js';
import { makeRespond, type Respond } from './respond.js';
import { quote } from './quote.js';
import type { CallScope } from './scope.js';
import {
  ArrayPrototypePush,
  JSONStringify,
  MapPrototypeDelete,
  MapPrototypeForEach,
  MapPrototypeGet,
  MathMin,
  matches,
  NumberIsFinite,
  MapPrototypeSet,
  ObjectFreeze,
  ObjectHasOwn,
  ReflectApply,
  SafeMap,
  SetPrototypeHas,
  StringPrototypeToUpperCase,
  safeSetOf,
  URLCanParse,
} from './primordials.js';

/** What `$.flow.delay()` gives back: Tributary has no resume or cancel links, so both are undefined. */
export interface DelayHandle {
  readonly resume_url: undefined;
  readonly cancel_url: undefined;
}

/** The `$` a step's `run({ steps, $ })` receives; every function works without `this`, so `$` may be destructured. */
export interface StepDollar {
  export(name: string, value: unknown): void;
  respond: Respond;
  flow: {
    exit(reason?: unknown): never;
    delay(ms: unknown): DelayHandle;
    rerun(): never;
  };
  send: Record<StepSend['kind'], (argument: unknown) => void>;
}

/**
 * Thrown by `$.flow.exit()` to stop the step's code where it stands. The invoke loop knows this call's instance and
 * takes it as a successful end, however it arrives (a rejection of run, an uncaught throw in a callback).
 */
class StepExit extends Error {
  override name = 'StepExit';
}

const DELAY_HANDLE: DelayHandle = ObjectFreeze({ resume_url: undefined, cancel_url: undefined });

// The checks below run in the step's call, after its code may have replaced `RegExp.prototype.test`, `String.prototype`
// methods or the iterators: they use the built-ins taken at start, or a check could pass what the server cannot send.
const HTTP_METHOD_LIST = 'GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS';
const HTTP_METHODS = safeSetOf(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']);
const HTTP_URL = /^https?:\/\//i;
/** A "." or ".." segment of a "/"-separated prefix. */
const DOT_SEGMENT = /(?:^|\/)\.\.?(?:\/|$)/;

/** Checks the argument of `$.send.<kind>()`: a TypeError naming the method says what is wrong. */
const SEND_CHECKS: Record<StepSend['kind'], (argument: Record<string, unknown>) => void> = {
  http({ url, method, headers, params }) {
    if (typeof url !== 'string' || url === '') throw new TypeError('$.send.http() needs config.url, a non-empty string');
    // Checked here, so that the step fails at once instead of its send failing later where nobody looks.
    if (!matches(HTTP_URL, url) || !URLCanParse(url)) throw new TypeError(`$.send.http(): config.url must be an http or https URL, got ${quote(url)}`);
    if (method !== undefined && (typeof method !== 'string' || !SetPrototypeHas(HTTP_METHODS, StringPrototypeToUpperCase(method)))) {
      throw new TypeError(`$.send.http(): config.method must be one of ${HTTP_METHOD_LIST}, got ${quote(method)}`);
    }
    if (headers !== undefined && !isPlainObject(headers)) throw new TypeError('$.send.http(): config.headers must be an object');
    if (params !== undefined && !isPlainObject(params)) throw new TypeError('$.send.http(): config.params must be an object');
  },
  email({ subject, text, html }) {
    if (typeof subject !== 'string') throw new TypeError('$.send.email() needs a subject (a string)');
    if (text !== undefined && typeof text !== 'string') throw new TypeError('$.send.email(): text must be a string');
    if (html !== undefined && typeof html !== 'string') throw new TypeError('$.send.email(): html must be a string');
    if (text === undefined && html === undefined) throw new TypeError('$.send.email() needs a text or html body (a string)');
  },
  s3({ bucket, prefix, payload }) {
    if (typeof bucket !== 'string' || bucket === '') throw new TypeError('$.send.s3() needs a bucket (a non-empty string)');
    if (prefix !== undefined && typeof prefix !== 'string') throw new TypeError('$.send.s3(): prefix must be a string');
    if (typeof prefix === 'string' && matches(DOT_SEGMENT, prefix)) throw new TypeError('$.send.s3(): prefix may not hold "." or ".." segments');
    if (payload === undefined) throw new TypeError('$.send.s3() needs a payload');
  },
  emit({ raw_event, name, summary }) {
    if (raw_event === undefined) throw new TypeError('$.send.emit() needs a raw_event');
    // As $emit's: a name that is no string was emitted on the default channel, one past 200 characters or `$errors` on
    // a channel no subscription could select, or that one selecting the workflow's errors.
    if (name !== undefined && name !== null) {
      if (typeof name !== 'string') throw new TypeError('$.send.emit() name (the channel) must be a string');
      const problem = channelNameProblem(name, '$.send.emit() name', 'workflow');
      if (problem) throw new TypeError(problem);
    }
    if (summary !== undefined && summary !== null && typeof summary !== 'string') throw new TypeError('$.send.emit() summary must be a string');
  },
  sse({ channel, payload }) {
    if (typeof channel !== 'string' || channel === '') throw new TypeError('$.send.sse() needs a channel (a non-empty string)');
    const problem = sseChannelProblem(channel, '$.send.sse(): channel');
    if (problem) throw new TypeError(problem);
    if (payload === undefined) throw new TypeError('$.send.sse() needs a payload');
  },
};

/**
 * `$.send.emit`'s argument as `{ raw_event, name }`: an object with its own `raw_event` and no second argument is that
 * already; anything else is `(event, channel)`, so that `$.send.emit({ name: "Yoda" })` emits that object rather than
 * failing for want of a raw_event.
 */
function emitArgument(args: unknown[]): unknown {
  // Indexed, not destructured: the step's code may have replaced the array iterator.
  const first = args[0];
  const channel = args[1];
  if (args.length < 2 && isPlainObject(first) && ObjectHasOwn(first, 'raw_event')) return first;
  if (first === undefined) throw new TypeError('$.send.emit() needs an event: $.send.emit(event, channel?)');
  return channel === undefined ? { raw_event: first } : { raw_event: first, name: channel };
}

const SEND_SHAPES: Record<StepSend['kind'], string> = {
  http: '{ url, method?, headers?, params?, data? }',
  email: '{ subject, text?, html? }',
  s3: '{ bucket, prefix?, payload }',
  emit: '{ raw_event, name?, summary? }, or (event, channel?)',
  sse: '{ channel, payload }',
};

/** The server builds StepInputs; one that is not `{ steps, props }` is its bug, reported on the call it reached. */
export function stepInput(input: unknown): StepInput {
  if (!isPlainObject(input) || !isPlainObject(input.steps) || !isPlainObject(input.props)) {
    throw new TypeError('a step input must be { steps, props }, both objects');
  }
  return { steps: input.steps, props: input.props };
}

/** What one step call records through `$`, and the body that runs it. */
export class StepCall {
  readonly $: StepDollar;
  // A Map, so that an export named "__proto__" stays an ordinary name.
  private readonly exports: Map<string, { value: unknown; bytes: number }> = new SafeMap();
  private readonly sends: StepSend[] = [];
  private returned?: { value: unknown; bytes: number };
  private exit?: { reason?: string };
  private delayMs?: number;
  /** JSON bytes of the exports (names included) and sends held now; the return value adds its own at the end. */
  private bytes = 0;
  private readonly exitSignal = new StepExit('$.flow.exit() ended the step');

  constructor(
    private readonly scope: CallScope,
    customResponse: boolean,
    sendResponse: (response: HttpResponse) => void,
    /** InvocationRequest.unavailableSends: the kinds that fail the step, with why. */
    private readonly unavailableSends: Record<string, string> | undefined = undefined,
    /**
     * Told of each export as it is kept (its JSON text; undefined: the name taken back), to send it ahead of the
     * outcome: a call its time limit or a crash stops keeps what it exported, as a failed call does.
     */
    private readonly announce: ((name: string, json: string | undefined) => void) | undefined = undefined,
  ) {
    const respond = makeRespond(scope, customResponse, sendResponse);
    this.$ = ObjectFreeze({
      export: (name: string, value: unknown) => this.export(name, value),
      respond: (response: unknown) => {
        if (this.usable()) respond(response);
      },
      flow: ObjectFreeze({
        exit: (reason?: unknown): never => this.exitNow(reason),
        delay: (ms: unknown) => this.delay(ms),
        // Ported steps call it for polling and retries; "$.flow.rerun is not a function" did not say it is missing by design.
        rerun: (): never => {
          const error = new Error(
            "$.flow.rerun() is not supported: Tributary keeps no step's rerun count or context; $.flow.delay(ms) makes the next step due later",
          );
          error.name = 'NotSupportedError';
          throw error;
        },
      }),
      send: ObjectFreeze({
        http: (config: unknown) => this.send('http', config),
        email: (config: unknown) => this.send('email', config),
        s3: (config: unknown) => this.send('s3', config),
        // The reference service's docs now write `$.send.emit(event, channel?)`; older steps pass `{ raw_event, name }`.
        emit: (...args: unknown[]) => this.send('emit', emitArgument(args)),
        sse: (config: unknown) => this.send('sse', config),
      }),
    });
  }

  /** The call of `run({ steps, $ })` with `self` as `this`; its return value is recorded once it settles. */
  body(component: Component, self: Record<string, unknown>, steps: Record<string, unknown>): () => Promise<void> {
    const run = component.run as (this: unknown, context: { steps: Record<string, unknown>; $: StepDollar }) => unknown;
    return async () => {
      this.recordReturn(await ReflectApply(run, self, [{ steps, $: this.$ }]));
    };
  }

  /** True when `error` is what this call's `$.flow.exit()` threw: the step ended as it asked. */
  endedByExit(error: unknown): boolean {
    return error === this.exitSignal;
  }

  /**
   * What the step did, and its size as JSON. A failed call keeps only its exports, shown in the run to tell how far it
   * got: its sends, return value, exit and delay never take effect.
   */
  outcome(failed: boolean): { step: StepOutcome; bytes: number } {
    // Without a prototype, so that an export named "__proto__" stays an ordinary name.
    const exports = { __proto__: null } as unknown as Record<string, unknown>;
    let exportBytes = 0;
    MapPrototypeForEach(this.exports, ({ value, bytes }, name) => {
      exports[name] = value;
      exportBytes += bytes;
    });
    // Every field in the literal (JSON leaves out those undefined), where no setter on Object.prototype can take one.
    const step: StepOutcome = failed
      ? { exports, sends: [], returnValue: undefined, exit: undefined, delayMs: undefined }
      : { exports, sends: this.sends, returnValue: this.returned?.value, exit: this.exit, delayMs: this.delayMs };
    return { step, bytes: failed ? exportBytes : this.bytes + (this.returned?.bytes ?? 0) };
  }

  /**
   * False once the call has ended (a stray callback's late effects are dropped). After `$.flow.exit()` every use
   * of `$` throws the exit again: code that caught it and went on is stopped at its next step effect.
   */
  private usable(): boolean {
    if (this.scope.closed) return false;
    if (this.exit) throw this.exitSignal;
    return true;
  }

  /**
   * A breach of the size limits fails the whole call, even if the component catches the error. `what`, when given,
   * names the value that passed the limit.
   */
  private reserve(bytes: number, what?: string): void {
    if (this.bytes + bytes <= MAX_STEP_BYTES_PER_CALL) return;
    const limit = `a step's return value, exports, sends and $.flow.exit() reason may total at most ${MAX_STEP_BYTES_PER_CALL} bytes of JSON per call`;
    const error = new RangeError(what ? `${what} is ${bytes} bytes of JSON, past the limit: ${limit}` : limit);
    this.scope.fail(error);
    throw error;
  }

  /**
   * The last value of a name wins; exporting `undefined` takes the name back (JSON has no undefined). `$summary`
   * must be a string: coercing would turn an object into "[object Object]", never what was meant.
   */
  private export(name: unknown, value: unknown): void {
    if (!this.usable()) return;
    if (typeof name !== 'string' || name === '') throw new TypeError('$.export() needs a name, a non-empty string');
    if (name === '$return_value') throw new TypeError('$.export(): "$return_value" is the step\'s return value; return it from run instead');
    if (name === '$summary' && value !== undefined && typeof value !== 'string') {
      throw new TypeError(`$.export("$summary", …) takes a string, not ${value === null ? 'null' : typeof value}`);
    }
    const previous = MapPrototypeGet(this.exports, name);
    if (value === undefined) {
      if (previous) this.bytes -= previous.bytes;
      MapPrototypeDelete(this.exports, name);
      if (previous) this.announce?.(name, undefined);
      return;
    }
    const copy = jsonCopy(value, `the value exported as ${quote(name)}`);
    const bytes = jsonBytes(JSONStringify(name)) + jsonBytes(copy.json);
    this.reserve(bytes - (previous?.bytes ?? 0));
    this.bytes += bytes - (previous?.bytes ?? 0);
    MapPrototypeSet(this.exports, name, { value: copy.value, bytes });
    this.announce?.(name, copy.json);
  }

  private send(kind: StepSend['kind'], argument: unknown): void {
    if (!this.usable()) return;
    if (!isPlainObject(argument)) throw new TypeError(`$.send.${kind}() takes an object: ${SEND_SHAPES[kind]}`);
    SEND_CHECKS[kind](argument);
    // A send this server cannot carry out fails the step here, even if its code catches the error: the step keeps its
    // exports and logs, as a failed step does, and none of its $.service.db or data store writes is committed.
    const unavailable = this.unavailableSends?.[kind];
    if (typeof unavailable === 'string') {
      const error = new Error(`${unavailable}; nothing of this step was committed`);
      error.name = 'ConfigurationError';
      (error as Error & { code: string }).code = 'send_unavailable';
      this.scope.fail(error);
      throw error;
    }
    const copy = jsonCopy(argument, `the argument of $.send.${kind}()`);
    const bytes = jsonBytes(copy.json);
    if (this.sends.length >= MAX_STEP_SENDS_PER_CALL) {
      const error = new RangeError(`a step may call $.send at most ${MAX_STEP_SENDS_PER_CALL} times per call`);
      this.scope.fail(error);
      throw error;
    }
    this.reserve(bytes);
    this.bytes += bytes;
    ArrayPrototypePush(this.sends, { kind, payload: copy.value });
  }

  /**
   * Pipedream's reason is a string; any other value is kept as its JSON text (`42` as "42", an object as `{"a":1}`)
   * rather than lost, and one JSON cannot hold (a function, a BigInt, a cycle) is a TypeError. No reason: none kept.
   */
  private exitNow(reason: unknown): never {
    if (this.usable()) {
      const text = reason === undefined ? undefined : typeof reason === 'string' ? reason : jsonCopy(reason, 'the $.flow.exit() reason').json;
      // Counted like a return value (which it stands in for: what run returns after an exit is not kept).
      if (text !== undefined) this.reserve(jsonBytes(JSONStringify(text)), 'the $.flow.exit() reason');
      this.exit = text === undefined ? {} : { reason: text };
    }
    throw this.exitSignal;
  }

  /** The step goes on; the next one runs `ms` later (the last call wins), at most MAX_STEP_DELAY_MS. */
  private delay(ms: unknown): DelayHandle {
    if (!this.usable()) return DELAY_HANDLE;
    if (typeof ms !== 'number' || !NumberIsFinite(ms) || ms < 0) {
      const shown = typeof ms === 'number' ? `${ms}` : typeof ms === 'string' ? JSONStringify(ms) : ms === null ? 'null' : typeof ms;
      throw new TypeError(`$.flow.delay() takes a number of milliseconds (finite, at least 0), not ${shown}`);
    }
    if (ms > MAX_STEP_DELAY_MS) this.scope.log('warn', `$.flow.delay(${ms}) was cut to ${MAX_STEP_DELAY_MS} ms (365 days), the longest delay`);
    this.delayMs = MathMin(ms, MAX_STEP_DELAY_MS);
    return DELAY_HANDLE;
  }

  /** Undefined leaves `returnValue` out; after `$.flow.exit()` whatever run returned came from code meant not to run. */
  private recordReturn(value: unknown): void {
    if (value === undefined || this.exit) return;
    const copy = jsonCopy(value, "the step's return value");
    const bytes = jsonBytes(copy.json);
    this.reserve(bytes);
    this.returned = { value: copy.value, bytes };
  }
}
