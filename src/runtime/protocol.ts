// The messages the server and a worker process exchange, and the checks the server applies to every message a worker sends.
import type {
  ComponentInfo,
  ComponentLoadError,
  EmittedEvent,
  HttpResponse,
  InvocationError,
  InvocationMethod,
  InvocationOutcome,
  LogLine,
  PropDescriptor,
} from './types.js';

/** Load a component and describe it (the answer is `loaded` or `load_failed`). */
export interface LoadRequest {
  t: 'load';
  id: number;
  artifactPath: string;
}

/**
 * Run `run` for each event, or one hook; answered by `outcomes` messages, the last one `done`. A worker sends the
 * outcomes it holds at the end of a call once OUTCOME_FLUSH_MS (worker/limits.ts) have passed since its last
 * message or OUTCOME_FLUSH_BYTES wait, and at the end of the request: one write per batch instead of one per
 * event, and the server still hears within a bounded time.
 */
export interface InvokeRequest {
  t: 'invoke';
  id: number;
  artifactPath: string;
  method: InvocationMethod;
  /** Each event as JSON text, parsed by the worker: a string costs the server far less to send than an object. */
  events: string[];
  props: Record<string, unknown>;
  auths: Record<string, Record<string, unknown>>;
  db: Record<string, unknown>;
  httpEndpoint?: string;
  customResponse: boolean;
}

export type ToWorker = LoadRequest | InvokeRequest;

export type LoadFailureCode = Extract<
  ComponentLoadError['code'],
  'no_component_exported' | 'missing_name' | 'missing_version' | 'unknown_prop_type' | 'load_failed'
>;

export interface ReadyMessage {
  t: 'ready';
}
export interface LoadedMessage {
  t: 'loaded';
  id: number;
  info: ComponentInfo;
}
export interface LoadFailedMessage {
  t: 'load_failed';
  id: number;
  code: LoadFailureCode;
  message: string;
  details?: { prop?: string };
}
/** Sent the moment a run calls `respond()`, so the HTTP client need not wait for the run to end. */
export interface RespondMessage {
  t: 'respond';
  id: number;
  index: number;
  response: HttpResponse;
}
/** One finished call; `response` travels in the earlier `respond` message instead. */
export interface CallResult {
  outcome: Omit<InvocationOutcome, 'response'>;
  /** The keys this call wrote, with their final values; empty when the call failed. */
  dbWrites: Record<string, unknown>;
}
/**
 * Finished calls `index`, `index + 1`, …; `done` when they end the request. Sent as its JSON text: everything in
 * it is JSON already, and the server parses the text in less than half the time it takes to deserialise objects.
 */
export interface OutcomesMessage {
  t: 'outcomes';
  id: number;
  index: number;
  results: CallResult[];
  done: boolean;
}

export type FromWorker = ReadyMessage | LoadedMessage | LoadFailedMessage | RespondMessage | OutcomesMessage;

/** A worker said something the protocol does not allow; the worker is killed for it. */
export class ProtocolError extends Error {
  override name = 'ProtocolError';
}

const LOAD_FAILURE_CODES: ReadonlySet<string> = new Set<LoadFailureCode>([
  'no_component_exported',
  'missing_name',
  'missing_version',
  'unknown_prop_type',
  'load_failed',
]);
const LOG_KINDS: ReadonlySet<string> = new Set<LogLine['k']>(['log', 'info', 'warn', 'error', 'debug']);
const DEDUPE: ReadonlySet<string> = new Set(['unique', 'greatest', 'last']);

type Obj = Record<string, unknown>;

function fail(what: string): never {
  throw new ProtocolError(`malformed worker message: ${what}`);
}

function isObject(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);
}

function object(value: unknown, what: string): Obj {
  if (!isObject(value)) fail(`${what} is not an object`);
  return value;
}

function string(value: unknown, what: string): string {
  if (typeof value !== 'string') fail(`${what} is not a string`);
  return value;
}

function optionalString(value: unknown, what: string): string | undefined {
  return value === undefined ? undefined : string(value, what);
}

function integer(value: unknown, what: string): number {
  if (!Number.isSafeInteger(value)) fail(`${what} is not an integer`);
  return value as number;
}

function finiteNumber(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) fail(`${what} is not a number`);
  return value;
}

function boolean(value: unknown, what: string): boolean {
  if (typeof value !== 'boolean') fail(`${what} is not a boolean`);
  return value;
}

function optional<T>(value: unknown, check: (v: unknown, what: string) => T, what: string): T | undefined {
  return value === undefined ? undefined : check(value, what);
}

/** Plain JSON data only: what reaches the store and the network must not be a Map, a Date or a typed array in disguise. */
function isJsonValue(value: unknown, depth = 0): boolean {
  if (depth > 256) return false;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every((item) => isJsonValue(item, depth + 1));
  if (typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return false;
  for (const key in value) {
    if (!isJsonValue((value as Obj)[key], depth + 1)) return false;
  }
  return true;
}

function json(value: unknown, what: string): unknown {
  if (!isJsonValue(value)) fail(`${what} is not plain JSON data`);
  return value;
}

function jsonRecord(value: unknown, what: string): Record<string, unknown> {
  const record = object(value, what);
  json(record, what);
  return record;
}

function withoutUndefined<T extends object>(value: T): T {
  for (const key of Object.keys(value) as Array<keyof T>) {
    if (value[key] === undefined) delete value[key];
  }
  return value;
}

function propDescriptor(value: unknown, what: string): PropDescriptor {
  const p = object(value, what);
  let options: PropDescriptor['options'];
  if (p.options !== undefined) {
    if (!Array.isArray(p.options)) fail(`${what}.options is not an array`);
    options = p.options.map((option, i) => {
      if (typeof option === 'string' || typeof option === 'number' || typeof option === 'boolean') return option;
      const o = object(option, `${what}.options[${i}]`);
      return { label: string(o.label, `${what}.options[${i}].label`), value: json(o.value ?? null, `${what}.options[${i}].value`) };
    });
  }
  let propDefinition: [string, string] | undefined;
  if (p.propDefinition !== undefined) {
    const d = p.propDefinition;
    if (!Array.isArray(d) || d.length !== 2) fail(`${what}.propDefinition is not a pair`);
    propDefinition = [string(d[0], `${what}.propDefinition[0]`), string(d[1], `${what}.propDefinition[1]`)];
  }
  return withoutUndefined<PropDescriptor>({
    name: string(p.name, `${what}.name`),
    type: string(p.type, `${what}.type`),
    label: optionalString(p.label, `${what}.label`),
    description: optionalString(p.description, `${what}.description`),
    default: p.default === undefined ? undefined : json(p.default, `${what}.default`),
    optional: optional(p.optional, boolean, `${what}.optional`),
    secret: optional(p.secret, boolean, `${what}.secret`),
    min: optional(p.min, finiteNumber, `${what}.min`),
    max: optional(p.max, finiteNumber, `${what}.max`),
    options,
    remoteOptions: optional(p.remoteOptions, boolean, `${what}.remoteOptions`),
    app: optionalString(p.app, `${what}.app`),
    customResponse: optional(p.customResponse, boolean, `${what}.customResponse`),
    intervalSeconds: optional(p.intervalSeconds, finiteNumber, `${what}.intervalSeconds`),
    cron: optionalString(p.cron, `${what}.cron`),
    timezone: optionalString(p.timezone, `${what}.timezone`),
    propDefinition,
  });
}

function componentInfo(value: unknown): ComponentInfo {
  const info = object(value, 'info');
  const hooks = object(info.hooks, 'info.hooks');
  if (!Array.isArray(info.props)) fail('info.props is not an array');
  const dedupe = optionalString(info.dedupe, 'info.dedupe');
  if (dedupe !== undefined && !DEDUPE.has(dedupe)) fail('info.dedupe is not a strategy');
  return withoutUndefined<ComponentInfo>({
    name: string(info.name, 'info.name'),
    version: string(info.version, 'info.version'),
    key: optionalString(info.key, 'info.key'),
    type: optionalString(info.type, 'info.type'),
    description: optionalString(info.description, 'info.description'),
    dedupe: dedupe as ComponentInfo['dedupe'],
    props: info.props.map((p, i) => propDescriptor(p, `info.props[${i}]`)),
    hooks: {
      deploy: boolean(hooks.deploy, 'info.hooks.deploy'),
      activate: boolean(hooks.activate, 'info.hooks.activate'),
      deactivate: boolean(hooks.deactivate, 'info.hooks.deactivate'),
    },
    hasRun: boolean(info.hasRun, 'info.hasRun'),
  });
}

// The checks of outcomes run for every event of every batch: they build objects with only the fields present
// (no `delete`, which turns an object into a slow dictionary) and name the failing field only when one fails.
function emittedEvent(value: unknown, index: number): EmittedEvent {
  const what = (field: string) => `outcome.emits[${index}]${field}`;
  if (!isObject(value)) fail(`${what('')} is not an object`);
  const { event, id, name, summary, ts } = value;
  if (!isJsonValue(event)) fail(`${what('.event')} is not plain JSON data`);
  const emitted: EmittedEvent = { event };
  if (id !== undefined) {
    if (typeof id !== 'string' && typeof id !== 'number') fail(`${what('.id')} is not a string or number`);
    emitted.id = id;
  }
  if (name !== undefined) emitted.name = string(name, what('.name'));
  if (summary !== undefined) emitted.summary = string(summary, what('.summary'));
  if (ts !== undefined) emitted.ts = integer(ts, what('.ts'));
  return emitted;
}

function logLine(value: unknown, index: number): LogLine {
  if (!isObject(value)) fail(`outcome.logs[${index}] is not an object`);
  const { k, ts, msg } = value;
  if (typeof k !== 'string' || !LOG_KINDS.has(k)) fail(`outcome.logs[${index}].k is not a log kind`);
  if (typeof ts !== 'number' || !Number.isFinite(ts)) fail(`outcome.logs[${index}].ts is not a number`);
  if (typeof msg !== 'string') fail(`outcome.logs[${index}].msg is not a string`);
  return { k: k as LogLine['k'], ts, msg };
}

function invocationError(value: unknown, what: string): InvocationError {
  const e = object(value, what);
  return withoutUndefined<InvocationError>({
    name: string(e.name, `${what}.name`),
    message: string(e.message, `${what}.message`),
    stack: string(e.stack, `${what}.stack`),
    code: optionalString(e.code, `${what}.code`),
  });
}

function httpResponse(value: unknown): HttpResponse {
  const r = object(value, 'response');
  const status = integer(r.status, 'response.status');
  if (status < 100 || status > 599) fail('response.status is out of range');
  const headers = object(r.headers, 'response.headers');
  for (const [name, v] of Object.entries(headers)) string(v, `response.headers.${name}`);
  let body: HttpResponse['body'];
  if (r.body === null || typeof r.body === 'string' || Buffer.isBuffer(r.body)) body = r.body;
  else if (r.body instanceof Uint8Array) body = Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength);
  else fail('response.body is not a string, a Buffer or null');
  return { status, headers: headers as Record<string, string>, body };
}

function outcome(value: unknown): CallResult['outcome'] {
  const o = object(value, 'outcome');
  if (!Array.isArray(o.emits)) fail('outcome.emits is not an array');
  if (!Array.isArray(o.logs)) fail('outcome.logs is not an array');
  const durationMs = finiteNumber(o.durationMs, 'outcome.durationMs');
  const checked: CallResult['outcome'] = {
    emits: o.emits.map(emittedEvent),
    logs: o.logs.map(logLine),
    durationMs: Math.max(0, durationMs),
  };
  if (o.error !== undefined) checked.error = invocationError(o.error, 'outcome.error');
  return checked;
}

/** Checks a message from a worker and rebuilds it from the fields the protocol knows, dropping anything else. */
export function parseFromWorker(raw: unknown): FromWorker {
  try {
    const m = object(typeof raw === 'string' ? JSON.parse(raw) : raw, 'message');
    switch (m.t) {
      case 'ready':
        return { t: 'ready' };
      case 'loaded':
        return { t: 'loaded', id: integer(m.id, 'id'), info: componentInfo(m.info) };
      case 'load_failed': {
        const code = string(m.code, 'code');
        if (!LOAD_FAILURE_CODES.has(code)) fail('code is not a load failure code');
        const details = optional(m.details, object, 'details');
        const prop = details === undefined ? undefined : optionalString(details.prop, 'details.prop');
        return withoutUndefined<LoadFailedMessage>({
          t: 'load_failed',
          id: integer(m.id, 'id'),
          code: code as LoadFailureCode,
          message: string(m.message, 'message'),
          details: prop === undefined ? undefined : { prop },
        });
      }
      case 'respond':
        return { t: 'respond', id: integer(m.id, 'id'), index: integer(m.index, 'index'), response: httpResponse(m.response) };
      case 'outcomes': {
        if (!Array.isArray(m.results)) fail('results is not an array');
        return {
          t: 'outcomes',
          id: integer(m.id, 'id'),
          index: integer(m.index, 'index'),
          results: m.results.map((r, i) => {
            const result = object(r, `results[${i}]`);
            return { outcome: outcome(result.outcome), dbWrites: jsonRecord(result.dbWrites, `results[${i}].dbWrites`) };
          }),
          done: boolean(m.done, 'done'),
        };
      }
      default:
        return fail('unknown message type');
    }
  } catch (error) {
    if (error instanceof ProtocolError) throw error;
    // A deeply nested or hostile value can make the checks themselves throw (stack overflow, throwing getters).
    throw new ProtocolError(`malformed worker message: ${error instanceof Error ? error.message : String(error)}`);
  }
}
