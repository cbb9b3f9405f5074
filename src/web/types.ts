// The API's resources as the console reads them (the fields it uses; the server's OpenAPI document has them all).

export interface PropDescriptor {
  name: string;
  type: string;
  label?: string;
  description?: string;
  default?: unknown;
  optional?: boolean;
  secret?: boolean;
  /** Not shown in the form (additionalProps() may unhide it). */
  hidden?: boolean;
  /** What additionalProps() returns depends on this prop's value: the form asks for the list again when it changes. */
  reloadProps?: boolean;
  min?: number;
  max?: number;
  options?: unknown[];
  remoteOptions?: boolean;
  app?: string;
  intervalSeconds?: number;
  cron?: string;
  /** `type: "alert"`: info, neutral, warning or error, and the note's text; an alert takes no value. */
  alertType?: string;
  content?: string;
}

export interface Component {
  id: string;
  name: string;
  version: string;
  configurable_props: PropDescriptor[];
}

/** A component as `GET /v1/components/{id}` and the account's list give it: with its code and times. */
export interface SavedComponent extends Component {
  /** Left out of the list's answers (`exclude=code`): a page of components would otherwise carry all their code. */
  code?: string;
  code_hash: string;
  created_at: number;
  updated_at: number;
}

export interface Source {
  id: string;
  component_id: string;
  configured_props: Record<string, unknown>;
  active: boolean;
  created_at: number;
  updated_at: number;
  name: string;
  name_slug: string;
}

export interface EventSummary {
  id: string;
  indexed_at_ms: number;
  event: unknown;
  metadata: { emitter_id: string; emit_id: string; name: string; summary?: string; id?: string | number; ts?: number };
}

export interface User {
  id: string;
  username: string;
  email: string;
  api_key?: string;
  daily_compute_time_quota?: number;
  daily_compute_time_used?: number;
  daily_invocations_quota?: number;
  daily_invocations_used?: number;
  billing_period_start_ts?: number;
  billing_period_end_ts?: number;
  billing_period_invocations?: number;
}

export interface Workflow {
  id: string;
  name: string;
  active: boolean;
  trigger: ({ type: string } & Record<string, unknown>) | null;
  steps: Array<{ name: string; component_id: string }>;
  created_at: number;
}

export interface RunStep {
  name: string;
  status: string;
  started_at_ms: number;
  duration_ms: number;
  $return_value?: unknown;
  exports: Record<string, unknown>;
  logs: unknown[];
  error?: unknown;
  sends: Array<{ kind: string; state: string; attempt: number; status_code?: number; last_error?: string }>;
}

export interface WorkflowRun {
  id: string;
  workflow_id: string;
  status: string;
  trigger: string;
  event: unknown;
  created_at_ms: number;
  finished_at_ms: number | null;
  exit_reason?: string;
  resumes_at_ms?: number;
  error?: unknown;
  replay_of?: string;
  steps: RunStep[];
}

export interface Webhook {
  id: string;
  name: string | null;
  description: string | null;
  url: string;
  active: boolean;
  created_at: number;
  secret?: string;
}

export interface Delivery {
  id: string;
  event_id: string;
  emitter_id: string;
  attempt: number;
  state: 'pending' | 'succeeded' | 'failed';
  status_code: number | null;
  error: string | null;
  duration_ms: number | null;
  attempted_at_ms: number | null;
  next_attempt_at_ms: number | null;
  created_at: number;
}

export interface Subscription {
  id: string;
  emitter_id: string;
  listener_id: string;
  event_name: string;
}

/** One step of installing an npm package, as the `progress` event of a save's `/stream` route says it. */
export interface InstallStep {
  step: 'resolving' | 'installing' | 'installed' | 'cached';
  package: string;
  version: string;
  index: number;
  total: number;
  elapsed_ms: number;
  workflow_step?: string;
}

/** One of the account's key-value stores, made by the first write to its name from a `data_store` prop. */
export interface DataStore {
  id: string;
  name: string;
  /** Records that have not expired. */
  key_count: number;
  created_at: number;
  updated_at: number;
}

/** A store's keys (not their values: the API does not give them), in key order. */
export interface DataStoreRecord {
  key: string;
  /** The JSON value the component stored. */
  value: unknown;
  /** Only for a record with a ttl. */
  expires_at?: number;
  expires_at_ms?: number;
}

export interface DataStoreKeys {
  id: string;
  name: string;
  keys: string[];
}

/** An app's credentials kept for app props (`this.<app>.$auth`): the API gives their field names, never their values. */
export interface ConnectedAccount {
  id: string;
  app: string;
  name: string;
  fields: string[];
  /** False after an OAuth token refresh failed, until one succeeds or the credentials are replaced. */
  healthy: boolean;
  created_at: number;
  updated_at: number;
}
