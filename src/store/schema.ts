// Row types of every table, shared by both dialects (JSON is stored as text, booleans as 0/1, times as integers).
import type { Generated } from 'kysely';
import type { StoredEvent, StreamKind, TriggerKind } from '../model/events.js';

export type { StreamKind, TriggerKind };

export interface UsersTable {
  id: string;
  username: string;
  email: string;
  plan: 'free' | 'paid';
  api_key_hash: string;
  created_at: number;
  updated_at: number;
}

export interface ComponentsTable {
  id: string;
  /** Null for components published to the global registry. */
  user_id: string | null;
  key: string | null;
  code: string;
  code_hash: string;
  component_url: string | null;
  name: string;
  version: string;
  /** JSON: the configurable_props array returned by the API. */
  configurable_props: string;
  /** JSON: everything else the runtime learned when it loaded the code (hooks, dedupe, imports). */
  metadata: string;
  created_at: number;
  updated_at: number;
}

/** Invocation and compute counters of one account over one period (`day:YYYY-MM-DD` or `billing:<start ts>`). */
export interface UsageTable {
  user_id: string;
  period: string;
  invocations: number;
  compute_ms: number;
}

export interface SourcesTable {
  id: string;
  user_id: string;
  component_id: string;
  name: string;
  name_slug: string;
  active: number;
  /** JSON: the props as configured; secret values are sealed (encrypted), interface props hold their settings. */
  configured_props: string;
  /** Unguessable id of the HTTP endpoint, for sources with a `$.interface.http` prop. */
  endpoint_id: string | null;
  /**
   * JSON array of the prop descriptors `additionalProps()` added (or changed) for `configured_props`, computed at
   * deploy; null when the component has no `additionalProps()`.
   */
  additional_props: string | null;
  created_at: number;
  updated_at: number;
}

/** `$.service.db` of a source: one row per key, the value as JSON. */
export interface SourceDbTable {
  source_id: string;
  key: string;
  value: string;
}

/** Per-emitter state that must survive restarts: the last event id given out and the dedupe cache. */
export interface EmitterStateTable {
  emitter_id: string;
  last_ms: number;
  last_seq: number;
  /** JSON: `unique` → array of ids (oldest first), `greatest` → number (or its digits past 2^53), `last` → id; null when unset. */
  dedupe: string | null;
  /** JSON: events currently stored per stream kind, so that retention trims only the excess. */
  counts: string;
}

/** A stored event (see StoredEvent for its columns) and the stream it is on. */
export interface EventsTable extends StoredEvent {
  stream: StreamKind;
}

/** The durable invocation queue: a trigger is a row before it is acknowledged; rows go when their run commits. */
export interface InvocationsTable {
  id: string;
  source_id: string;
  user_id: string;
  trigger: TriggerKind;
  /** JSON of the triggering event. */
  event: string;
  created_ms: number;
  /** How many listener hops led here, to cut subscription loops. */
  depth: number;
  attempts: number;
  lease_owner: string | null;
  lease_until_ms: number | null;
  /** The timer prop that queued a timer run (null for other runs, and for timer runs queued before migration 015). */
  prop_name: string | null;
}

/** One timer prop of an active source; claimed with a compare-and-set on `next_due_ms` so each due time fires once. */
export interface TimersTable {
  source_id: string;
  prop_name: string;
  user_id: string;
  /** JSON: `{ intervalSeconds }` or `{ cron, timezone? }`. */
  schedule: string;
  next_due_ms: number;
}

/** One version of a component an account published under its key; never updated (the key is the primary key). */
export interface PublishedComponentsTable {
  user_id: string;
  key: string;
  version: string;
  component_id: string;
  published_at: number;
}

/** A trigger and ordered steps; `steps` is JSON of WorkflowStepRow[], `trigger` JSON or null (runs on subscribed events only). */
export interface WorkflowsTable {
  id: string;
  user_id: string;
  name: string;
  active: number;
  trigger: string | null;
  steps: string;
  /** For an HTTP trigger: the unguessable id of its endpoint. */
  endpoint_id: string | null;
  /** Running time a run may use over all its steps. */
  timeout_ms: number;
  created_at: number;
  updated_at: number;
}

export type WorkflowRunStatus = 'queued' | 'running' | 'delayed' | 'succeeded' | 'failed';
export type WorkflowTriggerKind = 'http' | 'timer' | 'event' | 'manual' | 'replay';

/** One run of a workflow; unfinished runs have a `due_ms`, and a run leased by a runner has a lease. */
export interface WorkflowRunsTable {
  id: string;
  workflow_id: string;
  user_id: string;
  status: WorkflowRunStatus;
  trigger: WorkflowTriggerKind;
  /** JSON of the triggering event (`steps.trigger.event`). */
  event: string;
  depth: number;
  /** Index of the first step not yet finished. */
  next_step: number;
  /** When the run may continue; null once finished. */
  due_ms: number | null;
  lease_owner: string | null;
  lease_until_ms: number | null;
  /** How many times a runner took the run up (a crash leaves it to the next). */
  attempts: number;
  /** Running time used so far by finished steps (delays do not count). */
  running_ms: number;
  exit_reason: string | null;
  /** JSON of the error that failed the run. */
  error: string | null;
  replay_of: string | null;
  created_ms: number;
  finished_ms: number | null;
}

/** A finished step of a run: committed before the next step starts, so that a resumed run never runs it twice. */
export interface WorkflowRunStepsTable {
  run_id: string;
  step_index: number;
  name: string;
  status: 'succeeded' | 'failed';
  started_ms: number;
  duration_ms: number;
  /** JSON, null when the step returned nothing. */
  return_value: string | null;
  /** JSON object of `$.export` values. */
  exports: string;
  /** JSON array of log lines. */
  logs: string;
  error: string | null;
}

/** `$.service.db` of one step of a workflow. */
export interface WorkflowStepDbTable {
  workflow_id: string;
  step: string;
  key: string;
  value: string;
}

/** The `$.send` kinds carried out after their step commits (emit and sse are events, stored by the commit itself). */
export type OutboxKind = 'http' | 'email' | 's3';
export type SendState = 'pending' | 'succeeded' | 'failed';

/** One `$.send.http`, `$.send.email` or `$.send.s3` of a committed step. */
export interface WorkflowSendsTable {
  id: string;
  run_id: string;
  workflow_id: string;
  user_id: string;
  step_index: number;
  kind: OutboxKind;
  /** JSON: the argument the step passed to `$.send.<kind>()`. */
  payload: string;
  state: SendState;
  /** Attempts made so far (0 before the first). */
  attempt: number;
  /** When the next attempt is due; null once the send has succeeded or failed for good. */
  next_attempt_ms: number | null;
  lease_owner: string | null;
  lease_until_ms: number | null;
  last_error: string | null;
  /** The HTTP status of the last attempt of an http send. */
  status_code: number | null;
  created_ms: number;
  finished_ms: number | null;
}

export interface Database {
  connected_accounts: ConnectedAccountsTable;
  data_stores: DataStoresTable;
  data_store_records: DataStoreRecordsTable;
  workflow_sends: WorkflowSendsTable;
  workflows: WorkflowsTable;
  workflow_runs: WorkflowRunsTable;
  workflow_run_steps: WorkflowRunStepsTable;
  workflow_step_db: WorkflowStepDbTable;
  subscriptions: SubscriptionsTable;
  auto_subscriptions: AutoSubscriptionsTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  timers: TimersTable;
  sources: SourcesTable;
  source_db: SourceDbTable;
  emitter_state: EmitterStateTable;
  events: EventsTable;
  invocations: InvocationsTable;
  usage: UsageTable;
  users: UsersTable;
  components: ComponentsTable;
  published_components: PublishedComponentsTable;
  nodes: NodesTable;
  relayed_answers: RelayedAnswersTable;
}

/** A node serving from this database (PostgreSQL), as it last said: see migration 019. */
export interface NodesTable {
  /** The node's lease owner (`node-<uuid>`), as its claims write it in `lease_owner`. */
  id: string;
  role: 'all' | 'api' | 'worker';
  host: string;
  pid: number;
  event_retention: number;
  started_ms: number;
  /** When the node last renewed its row (epoch ms). */
  seen_ms: number;
}

/** Cluster: a custom response relayed to the node whose request waits on it, kept for a node that missed its NOTIFY. */
export interface RelayedAnswersTable {
  seq: Generated<number>;
  /** The invocation (`inv_…`) or workflow run (`wr_…`) answered. */
  id: string;
  /** The RelayedAnswer, as JSON. */
  answer: string;
  at_ms: number;
}

/** A named key-value store of an account, made on first use by a `data_store` prop naming it. */
export interface DataStoresTable {
  id: string;
  user_id: string;
  name: string;
  created_at: number;
  /** Epoch seconds of the last commit that wrote to it. */
  updated_at: number;
  /** Keys and values of its records, expired ones too, in bytes of UTF-8: what its 4 MB limit is checked against. */
  bytes: Generated<number>;
}

/** One record of a data store: the value as JSON, and when it expires (epoch ms; null: never). */
export interface DataStoreRecordsTable {
  store_id: string;
  key: string;
  value: string;
  expires_ms: number | null;
}

/** Routes events of an emitter (an id, or the glob `dc_*` / `p_*`) on one stream to a listener. */
export interface SubscriptionsTable {
  id: string;
  user_id: string;
  emitter_id: string;
  listener_id: string;
  /** As given: '' when none, 'default', '$errors', '$logs' or a channel name. */
  event_name: string;
  created_at: number;
}

/** Subscriptions to materialise for every source created after this row. */
export interface AutoSubscriptionsTable {
  id: string;
  user_id: string;
  listener_id: string;
  event_name: string;
  created_at: number;
}

export interface WebhooksTable {
  id: string;
  user_id: string;
  name: string | null;
  description: string | null;
  url: string;
  /** The `whsec_…` signing secret, sealed with the SecretBox. */
  secret: string;
  active: number;
  created_at: number;
  updated_at: number;
}

export type DeliveryState = 'pending' | 'succeeded' | 'failed';

/** One attempt to deliver one event to one webhook: pending rows are the queue, finished rows the log. */
export interface WebhookDeliveriesTable {
  id: string;
  /** Standard Webhooks `webhook-id`: the same for every attempt of one event to one webhook. */
  message_id: string;
  webhook_id: string;
  user_id: string;
  emitter_id: string;
  event_id: string;
  /** JSON of the event summary, sent as the request body. */
  payload: string;
  /** 1 for the first attempt. */
  attempt: number;
  state: DeliveryState;
  /** Pending: when this attempt is due. Failed: when the retry is due, or null when there is none. */
  next_attempt_ms: number | null;
  status_code: number | null;
  error: string | null;
  duration_ms: number | null;
  attempted_ms: number | null;
  created_ms: number;
  lease_owner: string | null;
  lease_until_ms: number | null;
}

/** An app's credentials that app props name by id (`{ authProvisionId }`); not a Tributary user (see UsersTable). */
export interface ConnectedAccountsTable {
  id: string;
  user_id: string;
  /** The app's name slug, as app props declare it (`app: "mastodon"`). */
  app: string;
  name: string;
  /** JSON of the credential fields, sealed with the SecretBox. */
  credentials: string;
  /** JSON array of the credential field names (not secret), shown by the API. */
  fields: string;
  /** 0 after an OAuth token refresh failed, until a refresh succeeds or the credentials are replaced. */
  healthy: number;
  created_at: number;
  updated_at: number;
}
