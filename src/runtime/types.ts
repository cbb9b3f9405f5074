// The contract between the service and the component runtime: what goes into a worker and what comes back.
// Everything here is plain JSON-serialisable data except Buffers in HTTP responses. What a worker sends back is
// declared once, as TypeBox schemas: protocol.ts checks messages against them and the types are their `Static<>`.
import { type Static, type TObject, type TProperties, Type } from 'typebox';
import { HEADER_VALUE_INVALID, MAX_RESPONSE_BODY_BYTES, MAX_RESPONSE_HEADER_BYTES } from './worker/limits.js';

/** Plain JSON data only: what reaches the store and the network must not be a Map, a Date or a typed array in disguise. */
export function isJsonValue(value: unknown, depth = 0): boolean {
  if (depth > 256) return false;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every((item) => isJsonValue(item, depth + 1));
  if (typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return false;
  for (const key in value) {
    if (!isJsonValue((value as Record<string, unknown>)[key], depth + 1)) return false;
  }
  return true;
}

/**
 * An object of exactly these fields. A well-behaved worker never sends another one, so one that does is refused
 * rather than trusted; dropping it instead would cost a second, uncompiled walk over every outcome.
 */
export function ExactObject<Properties extends TProperties>(properties: Properties): TObject<Properties> {
  return Type.Object(properties, { additionalProperties: false });
}

/** Any JSON value, checked to be plain data (the protocol checks what a worker sends against these schemas). */
export const JsonData = Type.Refine(
  Type.Unknown(),
  (value) => isJsonValue(value),
  () => 'is not plain JSON data',
);

/** One choice of a prop: a plain value, or a value with the label shown for it. */
export const PropOptionSchema = Type.Union([Type.String(), Type.Number(), Type.Boolean(), ExactObject({ label: Type.String(), value: JsonData })]);
export type PropOption = Static<typeof PropOptionSchema>;

/** One entry of a component's `configurable_props`, as the API returns it (declaration order). */
export const PropDescriptorSchema = ExactObject({
  name: Type.String(),
  // `app`, `boolean`, `integer`, `string`, `object` (optionally with `[]`), `$.interface.http`, `$.interface.timer`, `$.service.db`, `alert`.
  type: Type.String(),
  label: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  default: Type.Optional(JsonData),
  optional: Type.Optional(Type.Boolean()),
  secret: Type.Optional(Type.Boolean()),
  // Form hints: `hidden` props are not shown (additionalProps() may unhide them), `disabled` ones not editable, and a
  // `useQuery` prop's options() take what is typed as `query`.
  hidden: Type.Optional(Type.Boolean()),
  disabled: Type.Optional(Type.Boolean()),
  useQuery: Type.Optional(Type.Boolean()),
  min: Type.Optional(Type.Number()),
  max: Type.Optional(Type.Number()),
  // Static options only: strings or `{ label, value }`.
  options: Type.Optional(Type.Array(PropOptionSchema)),
  // True when `options` is an async method.
  remoteOptions: Type.Optional(Type.Boolean()),
  // The app name slug, for `type: "app"`.
  app: Type.Optional(Type.String()),
  // `$.interface.http` setting.
  customResponse: Type.Optional(Type.Boolean()),
  // `$.interface.timer` schedule written directly on an older component's prop.
  intervalSeconds: Type.Optional(Type.Number()),
  cron: Type.Optional(Type.String()),
  timezone: Type.Optional(Type.String()),
  // Set when the prop came from an app's propDefinitions: `[appPropName, definitionName]`.
  propDefinition: Type.Optional(Type.Tuple([Type.String(), Type.String()])),
  // True when the answer to this prop changes what `additionalProps()` returns (POST /components/{id}/props/reload).
  reloadProps: Type.Optional(Type.Boolean()),
  // `alert`: a note for whoever configures the component (`info`, `neutral`, `warning` or `error`, and its text); no value.
  alertType: Type.Optional(Type.String()),
  content: Type.Optional(Type.String()),
});
export type PropDescriptor = Static<typeof PropDescriptorSchema>;

/** What loading a component in a worker taught us. */
export const ComponentInfoSchema = ExactObject({
  name: Type.String(),
  version: Type.String(),
  key: Type.Optional(Type.String()),
  // `action` or absent (a source).
  type: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  dedupe: Type.Optional(Type.Union([Type.Literal('unique'), Type.Literal('greatest'), Type.Literal('last')])),
  props: Type.Array(PropDescriptorSchema),
  hooks: ExactObject({ deploy: Type.Boolean(), activate: Type.Boolean(), deactivate: Type.Boolean() }),
  hasRun: Type.Boolean(),
  // True when the component has an `additionalProps()` method: more props that depend on the configured ones.
  additionalProps: Type.Optional(Type.Boolean()),
});
export type ComponentInfo = Static<typeof ComponentInfoSchema>;

/** A component whose code has been checked, its imports installed, and a loadable file written. */
export interface PreparedComponent {
  /** Hex SHA-256 of the code as saved. */
  codeHash: string;
  /** Absolute path of the file the worker loads. */
  artifactPath: string;
  /** Absolute directories the worker may read besides the artifact (installed packages). */
  readPaths: string[];
  /** Bare package imports with the version installed, e.g. `{ "axios": "1.7.2" }`. */
  packages: Record<string, string>;
}

/**
 * A step of getting one npm package a component imports, said as it happens (saves report them to the client):
 * `resolving` asks npm which version a range or tag means; `installing` runs npm (or waits for another save's run of
 * it); `installed` follows it; `cached` means the version was already in the package cache and nothing ran.
 */
export interface InstallProgress {
  step: 'resolving' | 'installing' | 'installed' | 'cached';
  name: string;
  /** The exact version; while resolving, the range or tag the import names (`latest` when it names none). */
  version: string;
  /** The package's place among the component's npm imports (from 1, in the order they are installed) and their count. */
  index: number;
  total: number;
}

export type InstallListener = (progress: InstallProgress) => void;

/** Why a component could not be saved; the API turns it into 422 with `code` and `error`. */
export class ComponentLoadError extends Error {
  override name = 'ComponentLoadError';
  constructor(
    readonly code:
      | 'syntax_error'
      | 'relative_import'
      | 'package_install_failed'
      | 'no_component_exported'
      | 'missing_name'
      | 'missing_version'
      | 'unknown_prop_type'
      | 'load_failed'
      | 'load_timeout'
      | 'load_out_of_memory',
    message: string,
    readonly details?: { line?: number; column?: number; import?: string; prop?: string },
  ) {
    super(message);
  }
}

/** Which function of the component an invocation calls; `step` is an action's or code step's `run({ steps, $ })`. */
export type InvocationMethod = 'run' | HookMethod | 'step';
export type HookMethod = 'deploy' | 'activate' | 'deactivate';

/**
 * One call of a workflow step (method `step`): the run's step data so far (`steps.trigger.event`, `steps.<name>.
 * $return_value`, …) and the step's prop values for this run, templates already evaluated (they may differ per run).
 */
export interface StepInput {
  steps: Record<string, unknown>;
  props: Record<string, unknown>;
}

/**
 * What `$.send.*` queued during a step, carried out by the server once the step commits; `payload` is the argument
 * as the component passed it (plain JSON), checked by the server for its kind.
 */
export const StepSendSchema = ExactObject({
  kind: Type.Union([Type.Literal('http'), Type.Literal('email'), Type.Literal('s3'), Type.Literal('emit'), Type.Literal('sse')]),
  payload: JsonData,
});
export type StepSend = Static<typeof StepSendSchema>;

/** What a step call did besides logs and db writes (a failed step reports none of it). */
export const StepOutcomeSchema = ExactObject({
  /** `run`'s return value; absent when it returned undefined. */
  returnValue: Type.Optional(JsonData),
  /** `$.export(name, value)` calls, the last value of each name (`$summary` included). */
  exports: Type.Record(Type.String(), JsonData),
  /** Set when the step called `$.flow.exit(reason)`: the run ends successfully after this step. */
  exit: Type.Optional(ExactObject({ reason: Type.Optional(Type.String()) })),
  /** Set when the step called `$.flow.delay(ms)`: the next step runs this much later. */
  delayMs: Type.Optional(Type.Number({ minimum: 0 })),
  /** `$.send.*` calls in order. */
  sends: Type.Array(StepSendSchema),
});
export type StepOutcome = Static<typeof StepOutcomeSchema>;

/**
 * One write of a call to a data store prop: `set` a value (with a time to live in seconds, or none), `delete` the
 * key, or change only its time to live (`ttl`; null removes it).
 */
export const DataStoreWriteSchema = ExactObject({
  key: Type.String(),
  op: Type.Union([Type.Literal('set'), Type.Literal('delete'), Type.Literal('ttl')]),
  value: Type.Optional(JsonData),
  ttlSeconds: Type.Optional(Type.Union([Type.Number({ exclusiveMinimum: 0 }), Type.Null()])),
});
export type DataStoreWrite = Static<typeof DataStoreWriteSchema>;

/** What calls did to one of the account's data stores: `cleared` first (every key removed), then `writes` in order, one per key. */
export const DataStoreChangeSchema = ExactObject({
  name: Type.String(),
  cleared: Type.Boolean(),
  writes: Type.Array(DataStoreWriteSchema),
});
export type DataStoreChange = Static<typeof DataStoreChangeSchema>;

/** A data store's records as a call starts, loaded by the server (expired records left out). */
export interface DataStoreContents {
  name: string;
  /** `[key, value]` pairs; an array, so that a key such as "__proto__" stays a key. */
  entries: Array<[string, unknown]>;
  /**
   * Why every use of the store is a TypeError: its name is the `ds_` id of another of the account's stores, which a
   * deploy refuses (a template or a form gave it here), and a write would make a second store named after that id.
   */
  refused?: string;
}

export interface InvocationRequest {
  /** The account whose worker runs this; a worker never serves two accounts. */
  accountId: string;
  sourceId: string;
  /**
   * What the caller's log lines name this request by (its invocation or run ids); the runtime's own lines about it
   * carry them too. Never sent to the worker.
   */
  logContext?: Record<string, unknown>;
  component: PreparedComponent;
  method: InvocationMethod;
  /** Events for `run`, in order, or StepInputs for `step`; hooks take none. One message carries many events of one source. */
  events?: unknown[];
  /** The events as JSON text, instead of `events`: what the queue already holds goes to the worker as it is. */
  eventsJson?: string[];
  /** Configured prop values keyed by prop name, secrets decrypted. Interface props carry their runtime value. */
  props: Record<string, unknown>;
  /** `$auth` per app prop name (`{}` until accounts exist). */
  auths: Record<string, Record<string, unknown>>;
  /** `$.service.db` contents before the call. */
  db: Record<string, unknown>;
  /**
   * The account's data stores that `data_store` props name (their configured value is the store's name), as they
   * are before the call. A data store prop whose store is not here cannot be used in this call.
   */
  dataStores?: DataStoreContents[];
  /** `this.http.endpoint` when the component has an HTTP interface. */
  httpEndpoint?: string;
  /** True when the HTTP prop sets `customResponse`. */
  customResponse?: boolean;
  /**
   * For `step` calls: the `$.send` kinds this server cannot carry out, each with why (`needs the server's --smtp-url
   * setting`). A step that uses one fails there, keeping what a failed step keeps, and commits nothing.
   */
  unavailableSends?: Record<string, string>;
  /** Milliseconds before the worker is killed. */
  timeoutMs: number;
  /**
   * Each event's own time, where events share a call but not their time left (a workflow's runs): the call has the
   * shortest, and an event run again alone after the worker's death has its own, not the one another event set.
   */
  eventTimeoutsMs?: number[];
}

/**
 * A question about a component's props, answered in a worker of the account without deploying anything: the
 * choices of one prop (its `options()`, own or through a propDefinition), or the full prop list with what
 * `additionalProps()` adds for these configured values. `this` is bound as in `run`.
 */
export interface ConfigureRequest {
  accountId: string;
  component: PreparedComponent;
  /** Load it as a workflow step would be loaded (actions and code steps). */
  asStep: boolean;
  /** Configured prop values, as `this` sees them; a data_store prop's value is its store's name. */
  props: Record<string, unknown>;
  /** `$auth` per app prop name. */
  auths: Record<string, Record<string, unknown>>;
  /** Data stores the props name, read-only here. */
  dataStores?: DataStoreContents[];
  /** Milliseconds before the worker is killed; the runtime's load timeout when absent. */
  timeoutMs?: number;
}

/** Which page of a prop's choices: `page` counts from 0, `prevContext` is the `context` the previous page returned. */
export interface OptionsQuery {
  prop: string;
  page: number;
  prevContext: Record<string, unknown>;
  query?: string | undefined;
}

/** A prop's choices; whatever went wrong is in `errors`, and then the choices are empty. */
export interface PropOptionsResult {
  options: PropOption[];
  /** What the component returned beside its options (`{ nextPageToken }`), for the next page's `prevContext`. */
  context: Record<string, unknown> | null;
  errors: string[];
  /** Entries of the list that are no choice at all (null, an object without `value`), left out: how many, and why the first. */
  unusable?: UnusableChoices | undefined;
  /** CPU time the worker used for the call, as InvocationResult's (billed as compute like a run's). */
  cpuMs: number;
}

export interface UnusableChoices {
  count: number;
  reason: string;
}

/** The full prop list: the static props, then what `additionalProps()` returned; undefined, with `errors`, when it failed. */
export interface ReloadPropsResult {
  props: PropDescriptor[] | undefined;
  errors: string[];
  /** CPU time the worker used for the call, as InvocationResult's (billed as compute like a run's). */
  cpuMs: number;
}

export const EmittedEventSchema = ExactObject({
  event: JsonData,
  id: Type.Optional(Type.Union([Type.String(), Type.Number()])),
  name: Type.Optional(Type.String()),
  summary: Type.Optional(Type.String()),
  ts: Type.Optional(Type.Integer()),
});
export type EmittedEvent = Static<typeof EmittedEventSchema>;

export const LogLineSchema = ExactObject({
  k: Type.Union([Type.Literal('log'), Type.Literal('info'), Type.Literal('warn'), Type.Literal('error'), Type.Literal('debug')]),
  ts: Type.Number(),
  msg: Type.String(),
});
export type LogLine = Static<typeof LogLineSchema>;

export const InvocationErrorSchema = ExactObject({
  name: Type.String(),
  message: Type.String(),
  stack: Type.String(),
  code: Type.Optional(Type.String()),
});
export type InvocationError = Static<typeof InvocationErrorSchema>;

/**
 * A response body crosses the process boundary as a string, bytes (a Buffer arrives as a Uint8Array) or null, within
 * `respond()`'s limit: checked again here, since the worker's own check runs where component code can undo it.
 */
const ResponseBody = Type.Refine(
  Type.Unsafe<string | Buffer | null>({}),
  (body) =>
    body === null ||
    (typeof body === 'string' && (body.length * 3 <= MAX_RESPONSE_BODY_BYTES || Buffer.byteLength(body) <= MAX_RESPONSE_BODY_BYTES)) ||
    (body instanceof Uint8Array && body.byteLength <= MAX_RESPONSE_BODY_BYTES),
  () => `is not a string, a Buffer or null of at most ${MAX_RESPONSE_BODY_BYTES} bytes`,
);

/** Whether `respond()`'s headers are within its limit and each value is one Node can write (worker/respond.ts checks first). */
function headersFit(headers: Record<string, string | string[]>): boolean {
  let bytes = 0;
  for (const [name, value] of Object.entries(headers)) {
    for (const line of Array.isArray(value) ? value : [value]) {
      bytes += name.length + line.length;
      if (bytes > MAX_RESPONSE_HEADER_BYTES || HEADER_VALUE_INVALID.test(line)) return false;
    }
  }
  return true;
}

export const HttpResponseSchema = ExactObject({
  status: Type.Integer({ minimum: 100, maximum: 599 }),
  /** A list (`set-cookie: [a, b]`) is sent as one header line per value, as Node sends it. */
  headers: Type.Refine(Type.Record(Type.String(), Type.Union([Type.String(), Type.Array(Type.String())])), headersFit, () => {
    return `are past ${MAX_RESPONSE_HEADER_BYTES} bytes or hold a character HTTP does not allow in a header`;
  }),
  body: ResponseBody,
});
export type HttpResponse = Static<typeof HttpResponseSchema>;

/** The outcome of one event (or one hook call). A failed event (`error` set) emitted nothing and wrote nothing. */
export interface InvocationOutcome {
  emits: EmittedEvent[];
  logs: LogLine[];
  error?: InvocationError;
  /** The first valid `respond()` of a `run` (or `$.respond()` of a step), when any. */
  response?: HttpResponse;
  /** For `step` calls that succeeded. */
  step?: StepOutcome;
  durationMs: number;
}

export interface InvocationResult {
  /** One outcome per event (one for a hook). */
  outcomes: InvocationOutcome[];
  /** `$.service.db` keys written by the successful events, with their final values (JSON values; undefined: removed). */
  dbWrites: Record<string, unknown>;
  /** What the successful events did to data stores, merged in order: one change per store written. */
  dataStoreWrites?: DataStoreChange[];
  /**
   * CPU time the account's worker used for this request, measured by the server from the kernel's count (so a
   * component cannot under-report it), including what its timers used since its previous call; wall time
   * where CPU time cannot be read. This, not the runs' own durationMs, is what compute quotas count.
   */
  cpuMs: number;
}
