// The contract between the service and the component runtime: what goes into a worker and what comes back.
// Everything here is plain JSON-serialisable data except Buffers in HTTP responses. What a worker sends back is
// declared once, as TypeBox schemas: protocol.ts checks messages against them and the types are their `Static<>`.
import { type Static, type TObject, type TProperties, Type } from 'typebox';

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

/** One entry of a component's `configurable_props`, as the API returns it (declaration order). */
export const PropDescriptorSchema = ExactObject({
  name: Type.String(),
  // `app`, `boolean`, `integer`, `string`, `object` (optionally with `[]`), `$.interface.http`, `$.interface.timer`, `$.service.db`.
  type: Type.String(),
  label: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  default: Type.Optional(JsonData),
  optional: Type.Optional(Type.Boolean()),
  secret: Type.Optional(Type.Boolean()),
  min: Type.Optional(Type.Number()),
  max: Type.Optional(Type.Number()),
  // Static options only: strings or `{ label, value }`.
  options: Type.Optional(Type.Array(Type.Union([Type.String(), Type.Number(), Type.Boolean(), ExactObject({ label: Type.String(), value: JsonData })]))),
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

export interface InvocationRequest {
  /** The account whose worker runs this; a worker never serves two accounts. */
  accountId: string;
  sourceId: string;
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
  /** `this.http.endpoint` when the component has an HTTP interface. */
  httpEndpoint?: string;
  /** True when the HTTP prop sets `customResponse`. */
  customResponse?: boolean;
  /** Milliseconds before the worker is killed. */
  timeoutMs: number;
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

/** A response body crosses the process boundary as a string, bytes (a Buffer arrives as a Uint8Array) or null. */
const ResponseBody = Type.Refine(
  Type.Unsafe<string | Buffer | null>({}),
  (body) => body === null || typeof body === 'string' || body instanceof Uint8Array,
  () => 'is not a string, a Buffer or null',
);

export const HttpResponseSchema = ExactObject({
  status: Type.Integer({ minimum: 100, maximum: 599 }),
  headers: Type.Record(Type.String(), Type.String()),
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
  /** `$.service.db` keys written by the successful events, with their final values (JSON values). */
  dbWrites: Record<string, unknown>;
  /**
   * CPU time the account's worker used for this request, measured by the server from the kernel's count (so a
   * component cannot under-report it), including what its timers used since its previous call; wall time
   * where CPU time cannot be read. This, not the runs' own durationMs, is what compute quotas count.
   */
  cpuMs: number;
}
