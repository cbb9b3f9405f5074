// What the client knows of each kind of resource: its id prefix, where it is listed, read and deleted, and its table.
import { lineText } from './terminal-text.js';
import { UsageError } from './usage-error.js';

export type Row = Record<string, unknown>;

export interface ResourceKind {
  /** The plural `tributary list` takes. */
  plural: string;
  /** The id prefix (`dc_`), or undefined for kinds `describe` and `delete` do not take. */
  prefix: string | undefined;
  listPath: string;
  /** GET and DELETE of one; undefined when the API has none. */
  itemPath: ((id: string) => string) | undefined;
  deletable: boolean;
  columns: Columns;
}

/**
 * An id as one path segment: typed by hand, `dc_x/../../workflows/p_…` would otherwise be resolved by the URL into
 * another resource's path (a delete of a source id deleting a workflow), and `dc_x?y` would name the source `dc_x`.
 */
export const segment = (id: string) => encodeURIComponent(id);

/** Unix seconds as an ISO time to the second. */
export const when = (seconds: unknown) => (typeof seconds === 'number' ? new Date(seconds * 1000).toISOString().replace('.000Z', 'Z') : '');

/** `n` and the noun it counts, in the plural unless `n` is 1: "1 step", "3 steps". */
export function counted(n: number, noun: string): string {
  return `${n} ${n === 1 ? noun : `${noun}s`}`;
}

/** http when a prop echoes an endpoint, timer when one echoes a schedule, else a listener (of other emitters). */

export function sourceType(source: Row): string {
  const values = Object.values((source.configured_props ?? {}) as Row).filter((v): v is Row => typeof v === 'object' && v !== null);
  const http = values.some((v) => 'endpoint_url' in v);
  // As the web console says it: a source with both props is run by either.
  const timer = values.some((v) => 'interval_seconds' in v || 'cron' in v);
  if (http) return timer ? 'http+timer' : 'http';
  return timer ? 'timer' : 'listener';
}

/** The endpoint URL a source's or workflow's HTTP trigger shows, if it has one. */
export function endpointUrl(given: object): string | undefined {
  const item = given as Row;
  const trigger = item.trigger as Row | null | undefined;
  if (typeof trigger?.endpoint_url === 'string') return trigger.endpoint_url;
  for (const value of Object.values((item.configured_props ?? {}) as Row)) {
    if (typeof value === 'object' && value !== null && typeof (value as Row).endpoint_url === 'string') return (value as Row).endpoint_url as string;
  }
  return undefined;
}

export const KINDS: readonly ResourceKind[] = [
  {
    plural: 'sources',
    prefix: 'dc_',
    listPath: '/v1/users/me/sources',
    itemPath: (id) => `/v1/sources/${segment(id)}`,
    deletable: true,
    columns: [
      ['ID', (r) => r.id],
      ['NAME', (r) => r.name],
      ['TYPE', sourceType],
      ['ACTIVE', (r) => (r.active ? 'yes' : 'no')],
      ['UPDATED', (r) => when(r.updated_at)],
    ],
  },
  {
    plural: 'workflows',
    prefix: 'p_',
    listPath: '/v1/users/me/workflows',
    itemPath: (id) => `/v1/workflows/${segment(id)}`,
    deletable: true,
    columns: [
      ['ID', (r) => r.id],
      ['NAME', (r) => r.name],
      ['TRIGGER', (r) => (r.trigger as Row | null)?.type ?? 'none'],
      ['STEPS', (r) => (r.steps as unknown[]).length],
      ['ACTIVE', (r) => (r.active ? 'yes' : 'no')],
    ],
  },
  {
    plural: 'webhooks',
    prefix: 'wh_',
    listPath: '/v1/users/me/webhooks',
    itemPath: (id) => `/v1/webhooks/${segment(id)}`,
    deletable: true,
    columns: [
      ['ID', (r) => r.id],
      ['NAME', (r) => r.name ?? ''],
      ['URL', (r) => r.url],
      ['ACTIVE', (r) => (r.active === false ? 'no' : 'yes')],
    ],
  },
  {
    plural: 'subscriptions',
    prefix: undefined,
    listPath: '/v1/users/me/subscriptions',
    itemPath: undefined,
    deletable: false,
    columns: [
      ['ID', (r) => r.id],
      ['EMITTER', (r) => r.emitter_id],
      ['LISTENER', (r) => r.listener_id],
      ['EVENTS', (r) => r.event_name || 'default'],
    ],
  },
  {
    plural: 'auto-subscriptions',
    prefix: undefined,
    listPath: '/v1/users/me/auto_subscriptions',
    itemPath: undefined,
    deletable: false,
    columns: [
      ['ID', (r) => r.id],
      ['LISTENER', (r) => r.listener_id],
      ['EVENTS', (r) => r.event_name || 'default'],
      ['CREATED', (r) => when(r.created_at)],
    ],
  },
  {
    plural: 'components',
    prefix: 'sc_',
    listPath: '/v1/users/me/components',
    itemPath: (id) => `/v1/components/${segment(id)}`,
    deletable: false,
    // No KEY column: the API's component has no `key` field (the specification's shape), so it would always be empty.
    columns: [
      ['ID', (r) => r.id],
      ['NAME', (r) => r.name],
      ['VERSION', (r) => r.version],
      ['CREATED', (r) => when(r.created_at)],
    ],
  },
  {
    plural: 'accounts',
    prefix: 'apn_',
    listPath: '/v1/users/me/accounts',
    itemPath: (id) => `/v1/accounts/${segment(id)}`,
    deletable: true,
    columns: [
      ['ID', (r) => r.id],
      ['APP', (r) => r.app],
      ['NAME', (r) => r.name],
      ['HEALTHY', (r) => (r.healthy ? 'yes' : 'no')],
    ],
  },
  {
    // Also named by name: `tributary data-stores keys|get|set|delete` take either; describe and delete take the id.
    plural: 'data-stores',
    prefix: 'ds_',
    listPath: '/v1/data_stores',
    itemPath: (id) => `/v1/data_stores/${segment(id)}`,
    deletable: true,
    columns: [
      ['ID', (r) => r.id],
      ['NAME', (r) => r.name],
      ['KEYS', (r) => r.key_count],
      ['UPDATED', (r) => when(r.updated_at)],
    ],
  },
];

export function kindNamed(plural: string): ResourceKind {
  const kind = KINDS.find((k) => k.plural === plural);
  if (!kind) throw new UsageError(`unknown kind "${plural}": one of ${KINDS.map((k) => k.plural).join(', ')}`);
  return kind;
}

/** The kind an id belongs to, by its prefix. */
export function kindOfId(id: string): ResourceKind {
  const kind = KINDS.find((k) => k.prefix !== undefined && id.startsWith(k.prefix));
  // `list subscriptions` and `list auto-subscriptions` print sub_… ids, but the API reads and deletes a subscription
  // only by its emitter, listener and stream: the id is said as what it is, with the commands that take those.
  if (!kind && id.startsWith('sub_')) {
    throw new UsageError(
      `${JSON.stringify(id)} is a subscription, which the API names by its emitter, listener and stream, not by its id: see them with ` +
        'tributary list subscriptions (or auto-subscriptions), and remove one with tributary unsubscribe <emitter_id> <listener_id> ' +
        '[--event <name>] (or tributary auto-unsubscribe <listener_id> [--event <name>])',
    );
  }
  if (!kind) {
    const known = KINDS.filter((k) => k.prefix).map((k) => `${k.prefix}… (${k.plural})`);
    throw new UsageError(`"${id}" is not an id the client knows: ${known.join(', ')}`);
  }
  return kind;
}

/** Table columns: header and how to show the row's value. */
export type Columns<T = Row> = Array<[header: string, value: (row: T) => unknown]>;

/**
 * Rows as a table with a header, columns padded to their widest value: every list the CLI prints (`users list` too).
 * A value holding a line break or another control character (a name is any text) is shown as its JSON string, so that
 * each row stays one line and the terminal is sent no command.
 */
export function formatTable<T>(table: { columns: Columns<T> }, rows: T[]): string {
  const cells = rows.map((row) => table.columns.map(([, value]) => lineText(String(value(row) ?? ''))));
  const headers = table.columns.map(([header]) => header);
  const widths = headers.map((header, i) => Math.max(header.length, ...cells.map((c) => c[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...cells.map(line)].join('\n');
}
