// The contract between the service and the component runtime: what goes into a worker and what comes back.
// Everything here is plain JSON-serialisable data except Buffers in HTTP responses.

/** One entry of a component's `configurable_props`, as the API returns it (declaration order). */
export interface PropDescriptor {
  name: string;
  /** `app`, `boolean`, `integer`, `string`, `object` (optionally with `[]`), `$.interface.http`, `$.interface.timer`, `$.service.db`. */
  type: string;
  label?: string;
  description?: string;
  default?: unknown;
  optional?: boolean;
  secret?: boolean;
  min?: number;
  max?: number;
  /** Static options only: strings or `{ label, value }`. */
  options?: Array<string | number | boolean | { label: string; value: unknown }>;
  /** True when `options` is an async method (not callable through the API yet). */
  remoteOptions?: boolean;
  /** The app name slug, for `type: "app"`. */
  app?: string;
  /** `$.interface.http` setting. */
  customResponse?: boolean;
  /** `$.interface.timer` schedule written directly on an older component's prop. */
  intervalSeconds?: number;
  cron?: string;
  timezone?: string;
  /** Set when the prop came from an app's propDefinitions: `[appPropName, definitionName]`. */
  propDefinition?: [string, string];
}

/** What loading a component in a worker taught us. */
export interface ComponentInfo {
  name: string;
  version: string;
  key?: string;
  /** `action` or undefined (a source). */
  type?: string;
  description?: string;
  dedupe?: 'unique' | 'greatest' | 'last';
  props: PropDescriptor[];
  hooks: { deploy: boolean; activate: boolean; deactivate: boolean };
  hasRun: boolean;
}

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

/** Which function of the component an invocation calls. */
export type InvocationMethod = 'run' | 'deploy' | 'activate' | 'deactivate';

export interface InvocationRequest {
  /** The account whose worker runs this; a worker never serves two accounts. */
  accountId: string;
  sourceId: string;
  component: PreparedComponent;
  method: InvocationMethod;
  /** Events for `run`, in order; hooks take none. One message carries many events of one source. */
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

export interface EmittedEvent {
  event: unknown;
  id?: string | number;
  name?: string;
  summary?: string;
  ts?: number;
}

export interface LogLine {
  k: 'log' | 'info' | 'warn' | 'error' | 'debug';
  ts: number;
  msg: string;
}

export interface InvocationError {
  name: string;
  message: string;
  stack: string;
  code?: string;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: string | Buffer | null;
}

/** The outcome of one event (or one hook call). A failed event (`error` set) emitted nothing and wrote nothing. */
export interface InvocationOutcome {
  emits: EmittedEvent[];
  logs: LogLine[];
  error?: InvocationError;
  /** The first valid `respond()` of a `run`, when any. */
  response?: HttpResponse;
  durationMs: number;
}

export interface InvocationResult {
  /** One outcome per event (one for a hook). */
  outcomes: InvocationOutcome[];
  /** `$.service.db` keys written by the successful events, with their final values (JSON values). */
  dbWrites: Record<string, unknown>;
}
