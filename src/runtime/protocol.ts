// The messages the server and a worker process exchange, and the checks the server applies to every message a worker sends.
// What a worker sends is declared once as TypeBox schemas; the types are their `Static<>` and one compiled validator per
// message type checks it.
import { type Static, Type } from 'typebox';
import { Compile } from 'typebox/compile';
import type { Validator } from 'typebox/compile';
import {
  ComponentInfoSchema,
  type ComponentLoadError,
  DataStoreChangeSchema,
  type DataStoreContents,
  EmittedEventSchema,
  ExactObject,
  HttpResponseSchema,
  InvocationErrorSchema,
  type InvocationMethod,
  isJsonValue,
  JsonData,
  LogLineSchema,
  PropDescriptorSchema,
  PropOptionSchema,
  StepOutcomeSchema,
} from './types.js';
import { MAX_COMPONENT_INFO_BYTES } from './worker/limits.js';

/** Load a component and describe it (the answer is `loaded` or `load_failed`). */
export interface LoadRequest {
  t: 'load';
  id: number;
  artifactPath: string;
  /** A workflow step: a code step needs no name or version, and a plain object with `run` is a component. */
  asStep?: boolean;
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
  dataStores?: DataStoreContents[];
  httpEndpoint?: string;
  customResponse: boolean;
  /** InvocationRequest.unavailableSends. */
  unavailableSends?: Record<string, string>;
}

/**
 * A question about the component's props (ConfigureRequest): one prop's choices, answered by `options`, or the full
 * prop list, answered by `props`; `configure_failed` when the component's code failed to answer.
 */
export interface ConfigureMessage {
  t: 'configure';
  id: number;
  artifactPath: string;
  asStep: boolean;
  what: { kind: 'options'; prop: string; page: number; prevContext: Record<string, unknown>; query?: string | undefined } | { kind: 'props' };
  props: Record<string, unknown>;
  auths: Record<string, Record<string, unknown>>;
  dataStores?: DataStoreContents[];
}

/**
 * The first message a worker receives, before any component code is loaded: the token it puts beside every message
 * it sends, as `[token, message]`. Frames component code writes to the channel itself cannot carry it, and the
 * server kills a worker that sends one without it.
 */
export interface InitMessage {
  t: 'init';
  token: string;
}

export type ToWorker = LoadRequest | InvokeRequest | ConfigureMessage;

const LOAD_FAILURE_CODES = ['no_component_exported', 'missing_name', 'missing_version', 'unknown_prop_type', 'load_failed'] as const satisfies ReadonlyArray<
  ComponentLoadError['code']
>;
export type LoadFailureCode = (typeof LOAD_FAILURE_CODES)[number];

const ReadyMessageSchema = ExactObject({ t: Type.Literal('ready') });
export type ReadyMessage = Static<typeof ReadyMessageSchema>;

/** The worker measures it first (worker/load.ts); this is the server's own check, before the description is stored. */
const LoadedMessageSchema = ExactObject({
  t: Type.Literal('loaded'),
  id: Type.Integer(),
  info: Type.Refine(
    ComponentInfoSchema,
    (info) => Buffer.byteLength(JSON.stringify(info)) <= MAX_COMPONENT_INFO_BYTES,
    () => `is past ${MAX_COMPONENT_INFO_BYTES} bytes of JSON`,
  ),
});
export type LoadedMessage = Static<typeof LoadedMessageSchema>;

const LoadFailedMessageSchema = ExactObject({
  t: Type.Literal('load_failed'),
  id: Type.Integer(),
  code: Type.Enum(LOAD_FAILURE_CODES),
  message: Type.String(),
  details: Type.Optional(ExactObject({ prop: Type.Optional(Type.String()) })),
});
export type LoadFailedMessage = Static<typeof LoadFailedMessageSchema>;

/** Sent the moment a run calls `respond()`, so the HTTP client need not wait for the run to end. */
const RespondMessageSchema = ExactObject({ t: Type.Literal('respond'), id: Type.Integer(), index: Type.Integer(), response: HttpResponseSchema });
export type RespondMessage = Static<typeof RespondMessageSchema>;

/** One finished call; `response` travels in the earlier `respond` message instead. */
const CallResultSchema = ExactObject({
  outcome: ExactObject({
    emits: Type.Array(EmittedEventSchema),
    logs: Type.Array(LogLineSchema),
    error: Type.Optional(InvocationErrorSchema),
    step: Type.Optional(StepOutcomeSchema),
    durationMs: Type.Number(),
  }),
  // The keys this call wrote, with their final values; empty when the call failed.
  dbWrites: Type.Refine(
    Type.Record(Type.String(), Type.Unknown()),
    (writes) => isJsonValue(writes),
    () => 'is not plain JSON data',
  ),
  // The keys this call removed (set to undefined); absent when it removed none (always, when it failed).
  dbRemovals: Type.Optional(Type.Array(Type.String())),
  // What this call did to data stores, one change per store; absent when it wrote none (always, when it failed).
  dataStores: Type.Optional(Type.Array(DataStoreChangeSchema)),
});
export type CallResult = Static<typeof CallResultSchema>;

/**
 * Finished calls `index`, `index + 1`, …; `done` when they end the request. Sent as its JSON text: everything in
 * it is JSON already, and the server parses the text in less than half the time it takes to deserialise objects.
 */
const OutcomesMessageSchema = ExactObject({
  t: Type.Literal('outcomes'),
  id: Type.Integer(),
  index: Type.Integer(),
  results: Type.Array(CallResultSchema),
  done: Type.Boolean(),
});
export type OutcomesMessage = Static<typeof OutcomesMessageSchema>;

/**
 * Log lines of the call `index` still running, sent ahead of its outcome (which then carries only the lines after
 * them) as they are logged: a call stopped at its time limit, even in a synchronous loop, keeps what it logged.
 */
const LogsMessageSchema = ExactObject({ t: Type.Literal('logs'), id: Type.Integer(), index: Type.Integer(), lines: Type.Array(LogLineSchema) });
export type LogsMessage = Static<typeof LogsMessageSchema>;

/**
 * `$.export`s of the step call `index` still running, sent ahead of its outcome (worker/exports-ahead.ts): `values`
 * set, `removed` taken back. A call stopped at its time limit, or whose worker died, keeps them as a failed call keeps
 * its exports. May come before the outcomes of earlier calls the worker still holds; the outcome carries every
 * export again, so only a call that never reports uses these.
 */
const ExportMessageSchema = ExactObject({
  t: Type.Literal('exports'),
  id: Type.Integer(),
  index: Type.Integer(),
  values: Type.Record(Type.String(), JsonData),
  removed: Type.Array(Type.String()),
});
export type ExportMessage = Static<typeof ExportMessageSchema>;

/**
 * An error thrown after call `index` of request `id` ended (a timer it left behind): sent when it happens, also while
 * the worker is idle or runs another request, once per call; the server records it as that source's error.
 */
const StrayErrorMessageSchema = ExactObject({ t: Type.Literal('stray'), id: Type.Integer(), index: Type.Integer(), error: InvocationErrorSchema });
export type StrayErrorMessage = Static<typeof StrayErrorMessageSchema>;

/**
 * Component code changed the built-in prototypes the account's other components share (worker/pristine.ts): the worker
 * is retired once the current call ends. Outside the call protocol, like `stray`.
 */
const SpoiledMessageSchema = ExactObject({ t: Type.Literal('spoiled') });
export type SpoiledMessage = Static<typeof SpoiledMessageSchema>;

/** A prop's choices: what `options()` returned, checked and copied. */
const OptionsMessageSchema = ExactObject({
  t: Type.Literal('options'),
  id: Type.Integer(),
  options: Type.Array(PropOptionSchema),
  context: Type.Union([
    Type.Null(),
    Type.Refine(
      Type.Record(Type.String(), Type.Unknown()),
      (context) => isJsonValue(context),
      () => 'is not plain JSON data',
    ),
  ]),
  // Entries options() gave that are no choice (null, an object without `value`): how many, and why the first is none.
  unusable: Type.Optional(ExactObject({ count: Type.Integer({ minimum: 1 }), reason: Type.String({ maxLength: 1024 }) })),
});
export type OptionsMessage = Static<typeof OptionsMessageSchema>;

/** The full prop list: the static props, then those `additionalProps()` returned. */
const PropsMessageSchema = ExactObject({
  t: Type.Literal('props'),
  id: Type.Integer(),
  props: Type.Refine(
    Type.Array(PropDescriptorSchema),
    (props) => Buffer.byteLength(JSON.stringify(props)) <= MAX_COMPONENT_INFO_BYTES,
    () => `are past ${MAX_COMPONENT_INFO_BYTES} bytes of JSON`,
  ),
});
export type PropsMessage = Static<typeof PropsMessageSchema>;

/** Why the component could not answer a configure request (it threw, returned something unusable, or has no such prop). */
const ConfigureFailedMessageSchema = ExactObject({ t: Type.Literal('configure_failed'), id: Type.Integer(), message: Type.String() });
export type ConfigureFailedMessage = Static<typeof ConfigureFailedMessageSchema>;

export type FromWorker =
  | ReadyMessage
  | LoadedMessage
  | LoadFailedMessage
  | RespondMessage
  | OutcomesMessage
  | LogsMessage
  | ExportMessage
  | StrayErrorMessage
  | SpoiledMessage
  | OptionsMessage
  | PropsMessage
  | ConfigureFailedMessage;

/** A worker said something the protocol does not allow; the worker is killed for it. */
export class ProtocolError extends Error {
  override name = 'ProtocolError';
}

const validators: Readonly<Record<FromWorker['t'], Validator>> = {
  ready: Compile(ReadyMessageSchema),
  loaded: Compile(LoadedMessageSchema),
  load_failed: Compile(LoadFailedMessageSchema),
  respond: Compile(RespondMessageSchema),
  outcomes: Compile(OutcomesMessageSchema),
  logs: Compile(LogsMessageSchema),
  exports: Compile(ExportMessageSchema),
  stray: Compile(StrayErrorMessageSchema),
  spoiled: Compile(SpoiledMessageSchema),
  options: Compile(OptionsMessageSchema),
  props: Compile(PropsMessageSchema),
  configure_failed: Compile(ConfigureFailedMessageSchema),
};

function fail(what: string): never {
  throw new ProtocolError(`malformed worker message: ${what}`);
}

/** `/results/0/outcome/emits` → `results[0].outcome.emits`, the way the messages name their fields. */
function fieldName(instancePath: string): string {
  if (instancePath === '') return 'message';
  return instancePath
    .slice(1)
    .split('/')
    .map((part, i) => (/^\d+$/.test(part) ? `[${part}]` : i === 0 ? part : `.${part}`))
    .join('');
}

function check(raw: unknown): FromWorker {
  const message: unknown = typeof raw === 'string' ? JSON.parse(raw) : raw;
  if (typeof message !== 'object' || message === null || Array.isArray(message)) fail('message is not an object');
  const t = (message as { t?: unknown }).t;
  const validator = typeof t === 'string' && Object.hasOwn(validators, t) ? validators[t as FromWorker['t']] : undefined;
  if (!validator) fail('unknown message type');
  if (!validator.Check(message)) {
    const [first] = validator.Errors(message);
    fail(first ? `${fieldName(first.instancePath)} ${first.message}` : 'does not match the protocol');
  }
  return message as FromWorker;
}

/** The length of the JSON text each outcomes message came as: small ones need no measuring (reported-limits.ts). */
export const outcomesTextChars = new WeakMap<OutcomesMessage, number>();

/** Checks a message from a worker (`[token, message]`): its token, then every field the protocol knows and no other. */
export function parseFromWorker(raw: unknown, token: string): FromWorker {
  if (!Array.isArray(raw) || raw.length !== 2 || raw[0] !== token) {
    throw new ProtocolError("malformed worker message: it lacks the worker's token (written to the channel by component code?)");
  }
  let message: FromWorker;
  try {
    message = check(raw[1]);
  } catch (error) {
    if (error instanceof ProtocolError) throw error;
    // A deeply nested or hostile value can make the checks themselves throw (stack overflow, throwing getters).
    throw new ProtocolError(`malformed worker message: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (message.t === 'outcomes') {
    if (typeof raw[1] === 'string') outcomesTextChars.set(message, raw[1].length);
    for (const result of message.results) result.outcome.durationMs = Math.max(0, result.outcome.durationMs);
  } else if (message.t === 'respond') {
    const body: unknown = message.response.body;
    // Structured clone turns a Buffer into a plain Uint8Array; the rest of the server expects a Buffer.
    if (body instanceof Uint8Array && !Buffer.isBuffer(body)) {
      message.response.body = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    }
  }
  return message;
}
