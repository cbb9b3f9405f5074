// Every setting of Tributary, typed, with its flag, its TRIBUTARY_* variable and its default, in one table.
import path from 'node:path';
import { Option } from 'commander';
import { type AccountLimits, DEFAULT_ACCOUNT_LIMITS, formatAccountLimits } from './model/account-limits.js';
import {
  accountLimits,
  bool,
  checkS3,
  checkSecretKeyFile,
  checkWorkerCaFile,
  ConfigError,
  databaseUrl,
  dataDirDefault,
  egressList,
  emailAddress,
  integer,
  keyFilePath,
  timerSecs,
  LOG_LEVELS,
  type LogLevel,
  logLevel,
  LOG_FORMATS,
  type LogFormat,
  logFormat,
  NODE_ROLES,
  type NodeRole,
  nodeRole,
  folderPath,
  optionalInteger,
  optionalText,
  optionalUrl,
  secondsList,
  smtpUrl,
  emptyMeansUnset,
  hostInUrl,
  listenHost,
  text,
  type TrustProxy,
  trustProxySetting,
  url,
  workerUserSetting,
} from './config-parsers.js';

export { ConfigError, type LogFormat, type LogLevel, type NodeRole } from './config-parsers.js';

export interface Config {
  readonly host: string;
  readonly port: number;
  /** Base URL clients use to reach this service (HTTP endpoints of sources are built from it). */
  readonly publicUrl: string;
  /** Proxies whose X-Forwarded-For an HTTP event's `client_ip` believes (Fastify's `trustProxy`). */
  readonly trustProxy: TrustProxy;
  readonly dataDir: string;
  /** `postgres://…` selects PostgreSQL; undefined selects SQLite in the data directory. */
  readonly databaseUrl: string | undefined;
  /** What this node does in a cluster: answer HTTP and queue (`api`), claim and run work (`worker`), or both. */
  readonly role: NodeRole;
  /** Seconds `serve` waits at start for a PostgreSQL it cannot reach before it gives up. */
  readonly databaseWait: number;
  /** Port of the Prometheus metrics listener (`GET /metrics`); undefined: no listener. */
  readonly metricsPort: number | undefined;
  /** Interface the metrics listener binds to. */
  readonly metricsHost: string;
  /** Seconds a graceful stop waits for running invocations and steps before handing them back to the queue. */
  readonly shutdownTimeout: number;
  /** Key for secrets at rest; undefined means a key file in the data directory. */
  readonly secretKey: string | undefined;
  /** A key file as Tributary writes it (32 base64 bytes), e.g. the secret.key of a data directory moved to PostgreSQL. */
  readonly secretKeyFile: string | undefined;
  readonly logLevel: LogLevel;
  /** JSON lines, or one readable line per entry; `auto`: readable when standard output is a terminal. */
  readonly logFormat: LogFormat;
  /** Largest accepted API request body, in bytes. */
  readonly bodyLimit: number;
  /** Longest a run or hook may take before its worker is killed, in seconds. */
  readonly runTimeout: number;
  /** Longest loading a component (to read its props) may take, in seconds. */
  readonly loadTimeout: number;
  /** Heap limit of a worker process, in megabytes. */
  readonly workerMemory: number;
  /** Most worker processes alive at once. */
  readonly workerPoolSize: number;
  /** Scheduling niceness of worker processes (0 to 19): above 0, the server's own threads go first. */
  readonly workerNice: number;
  /**
   * Milliseconds a loaded source's next batch may wait to fill (SQLite): fewer, larger batches for at most this much
   * more latency. 0 sends each batch as soon as the previous one is back.
   */
  readonly batchWindow: number;
  /** Shortest accepted timer interval, in seconds. */
  readonly minTimerInterval: number;
  /** Events kept per emitter and stream kind. */
  readonly eventRetention: number;
  /** API requests per minute per key; 0 disables the limit. */
  readonly rateLimit: number;
  /** The user worker processes run as: `auto` (nobody when the server is root), `same`, `per-account`, a name or uid:gid. */
  readonly workerUser: string;
  /** Let webhooks, component URLs and component code reach loopback, private and link-local addresses. */
  readonly allowPrivateNetwork: boolean;
  /** Internal destinations component code may reach anyway: addresses, ranges (CIDR) and host[:port]. */
  readonly egressAllow: readonly string[];
  /** PEM file of extra certificate authorities that component code's HTTPS requests trust (a real path once resolved). */
  readonly workerCaFile: string | undefined;
  /** Free plan: invocations per UTC day. */
  readonly freeDailyInvocations: number;
  /** Free plan: milliseconds of compute (the worker's CPU time) per UTC day. */
  readonly freeDailyComputeMs: number;
  /** The most sources, workflows, webhooks, subscriptions and connected accounts one account may hold (0: no limit). */
  readonly accountLimits: AccountLimits;
  /** Delays before each retry of a failed webhook delivery, in seconds (one retry per entry). */
  readonly webhookRetrySchedule: readonly number[];
  /** Longest a webhook delivery attempt may take, connection to last byte, in seconds. */
  readonly webhookTimeout: number;
  /** SMTP server `$.send.email` goes through (`smtp://user:password@host:587`); a secret, never logged. Unset: no email. */
  readonly smtpUrl: string | undefined;
  /** Sender address of `$.send.email` messages. */
  readonly emailFrom: string;
  /** S3-compatible endpoint of `$.send.s3`; unset: AWS S3 in `s3Region`. */
  readonly s3Endpoint: string | undefined;
  readonly s3Region: string;
  /** `$.send.s3` is available when both keys are set. */
  readonly s3AccessKeyId: string | undefined;
  /** A secret, never logged. */
  readonly s3SecretAccessKey: string | undefined;
  /** The bucket in the path (`endpoint/bucket/key`) rather than in the host name, as most S3-compatible stores want. */
  readonly s3ForcePathStyle: boolean;
}

interface SettingSpec<K extends keyof Config> {
  readonly key: K;
  readonly flag: string;
  readonly description: string;
  readonly defaultValue: Config[K] | ((c: Partial<Config>) => Config[K]);
  readonly parse: (raw: string) => Config[K];
  /** How the default is shown in --help and the README. */
  readonly defaultText?: string;
}

/** The settings table: one row per setting; flags and variables follow `--data-dir` ↔ `TRIBUTARY_DATA_DIR`. */
export const SETTINGS: readonly SettingSpec<keyof Config>[] = [
  { key: 'host', flag: '--host', description: 'interface to listen on', defaultValue: '127.0.0.1', parse: listenHost },
  { key: 'port', flag: '--port', description: 'TCP port to listen on (0 picks a free one)', defaultValue: 3000, parse: integer(0, 65535) },
  {
    key: 'publicUrl',
    flag: '--public-url',
    description: 'base URL clients use to reach the service',
    defaultValue: (c) => `http://${hostInUrl(String(c.host))}:${c.port}`,
    defaultText: 'http://<host>:<port>',
    parse: url,
  },
  {
    key: 'trustProxy',
    flag: '--trust-proxy',
    description: "proxies in front whose X-Forwarded-For gives HTTP events' client_ip: false, true (any), or addresses and CIDR ranges, comma-separated",
    defaultValue: false,
    parse: trustProxySetting,
  },
  {
    key: 'dataDir',
    flag: '--data-dir',
    description: 'directory for the SQLite database and its lock, the key file and the package cache',
    ...dataDirDefault,
    parse: folderPath,
  },
  {
    key: 'databaseUrl',
    flag: '--database-url',
    description: 'postgres:// URL; when unset, SQLite in the data directory',
    defaultValue: undefined,
    defaultText: '(SQLite)',
    parse: databaseUrl,
  },
  {
    key: 'role',
    flag: '--role',
    description: `what this node does (${NODE_ROLES.join(', ')}): api answers HTTP and SSE and queues work, worker runs invocations, timers and deliveries; api and worker need --database-url`,
    defaultValue: 'all',
    parse: nodeRole,
  },
  { key: 'databaseWait', flag: '--database-wait', description: 'seconds serve waits for PostgreSQL at start', defaultValue: 60, parse: integer(0, 86400) },
  {
    key: 'metricsPort',
    flag: '--metrics-port',
    description: 'port of a separate listener serving Prometheus metrics at /metrics, and /healthz and /readyz (0 picks a free one); off when unset',
    defaultValue: undefined,
    defaultText: '(off)',
    parse: optionalInteger(0, 65535),
  },
  { key: 'metricsHost', flag: '--metrics-host', description: 'interface the metrics listener binds to', defaultValue: '127.0.0.1', parse: listenHost },
  {
    key: 'shutdownTimeout',
    flag: '--shutdown-timeout',
    description: 'seconds a graceful stop (SIGTERM) waits for running invocations and steps before handing them back to the queue',
    defaultValue: 10,
    parse: integer(0, 3600),
  },
  {
    key: 'secretKey',
    flag: '--secret-key',
    description: 'key that encrypts secrets at rest; when unset, a key file in the data directory',
    defaultValue: undefined,
    defaultText: '(key file)',
    parse: optionalText,
  },
  {
    key: 'secretKeyFile',
    flag: '--secret-key-file',
    description: "key file to use instead of the data directory's secret.key (such as that file, kept or copied); not with --secret-key",
    defaultValue: undefined,
    parse: keyFilePath,
  },
  { key: 'logLevel', flag: '--log-level', description: `log level: ${LOG_LEVELS.join(', ')}`, defaultValue: 'info', parse: logLevel },
  {
    key: 'logFormat',
    flag: '--log-format',
    description: `log lines: ${LOG_FORMATS.join(', ')} (auto: pretty when standard output is a terminal, else json)`,
    defaultValue: 'auto',
    parse: logFormat,
  },
  { key: 'bodyLimit', flag: '--body-limit', description: 'largest API request body, in bytes', defaultValue: 4 * 1024 * 1024, parse: integer(1024) },
  { key: 'runTimeout', flag: '--run-timeout', description: 'longest a run or hook may take, in seconds', defaultValue: 60, parse: integer(1, 3600) },
  { key: 'loadTimeout', flag: '--load-timeout', description: 'longest loading a component may take, in seconds', defaultValue: 10, parse: integer(1, 600) },
  { key: 'workerMemory', flag: '--worker-memory', description: 'heap limit of a worker process, in MB', defaultValue: 256, parse: integer(16, 16384) },
  { key: 'workerPoolSize', flag: '--worker-pool-size', description: 'most worker processes alive at once', defaultValue: 4, parse: integer(1, 256) },
  {
    key: 'workerNice',
    flag: '--worker-nice',
    description: 'niceness of worker processes, 0 (as the server) to 19 (lowest)',
    defaultValue: 10,
    parse: integer(0, 19),
  },
  {
    key: 'workerUser',
    flag: '--worker-user',
    description:
      'user worker processes run as: auto (nobody when the server runs as root), same, per-account (a user for each account; root only), a user name or uid:gid',
    defaultValue: 'auto',
    parse: workerUserSetting,
  },
  {
    key: 'batchWindow',
    flag: '--batch-window',
    description: 'milliseconds a loaded source waits for its next batch to fill (SQLite; 0: never)',
    defaultValue: 4,
    parse: integer(0, 1000),
  },
  { key: 'minTimerInterval', flag: '--min-timer-interval', description: 'shortest timer interval, in seconds (cron too)', defaultValue: 15, parse: timerSecs },
  { key: 'eventRetention', flag: '--event-retention', description: 'events kept per emitter and stream', defaultValue: 100, parse: integer(1, 10_000_000) },
  { key: 'rateLimit', flag: '--rate-limit', description: 'API requests per minute per key (0: no limit)', defaultValue: 1200, parse: integer(0) },
  {
    key: 'allowPrivateNetwork',
    flag: '--allow-private-network',
    description: 'let webhooks, component URLs and component code reach loopback and private addresses',
    defaultValue: false,
    parse: bool,
  },
  {
    key: 'egressAllow',
    flag: '--egress-allow',
    description: 'internal destinations component code may reach, comma-separated: 10.1.2.0/24, 10.1.2.3, api.internal:443',
    defaultValue: Object.freeze([]),
    defaultText: '(none)',
    parse: egressList,
  },
  {
    key: 'workerCaFile',
    flag: '--worker-ca-file',
    description: "PEM file of extra certificate authorities that component code's HTTPS requests trust, e.g. a company CA or a local mock's",
    defaultValue: undefined,
    parse: optionalText,
  },
  { key: 'freeDailyInvocations', flag: '--free-daily-invocations', description: 'free plan: invocations per UTC day', defaultValue: 10_000, parse: integer(0) },
  {
    key: 'freeDailyComputeMs',
    flag: '--free-daily-compute-ms',
    description: "free plan: milliseconds of compute (the worker's CPU time) per UTC day",
    defaultValue: 1_800_000,
    parse: integer(0),
  },
  {
    key: 'accountLimits',
    flag: '--account-limits',
    description: 'the most of each resource one account may hold, as resource=count pairs (0: no limit); resources not named keep their defaults',
    defaultValue: DEFAULT_ACCOUNT_LIMITS,
    defaultText: formatAccountLimits(DEFAULT_ACCOUNT_LIMITS),
    parse: accountLimits,
  },
  {
    key: 'webhookRetrySchedule',
    flag: '--webhook-retry-schedule',
    description: 'seconds before each retry of a failed webhook delivery, comma-separated',
    defaultValue: Object.freeze([5, 300, 1800, 7200, 18000, 36000, 36000]),
    defaultText: '5,300,1800,7200,18000,36000,36000',
    parse: secondsList,
  },
  {
    key: 'webhookTimeout',
    flag: '--webhook-timeout',
    description: 'longest a webhook delivery attempt may take, connection to last byte, in seconds',
    defaultValue: 15,
    parse: integer(1, 600),
  },
  {
    key: 'smtpUrl',
    flag: '--smtp-url',
    description: 'SMTP server for $.send.email: smtp://user:password@host:587 (STARTTLS when offered) or smtps://…:465; never logged',
    defaultValue: undefined,
    parse: smtpUrl,
  },
  { key: 'emailFrom', flag: '--email-from', description: 'sender address of $.send.email messages', defaultValue: 'tributary@localhost', parse: emailAddress },
  {
    key: 's3Endpoint',
    flag: '--s3-endpoint',
    description: 'S3-compatible endpoint for $.send.s3, e.g. http://127.0.0.1:9000; when unset, AWS S3 in --s3-region',
    defaultValue: undefined,
    defaultText: '(AWS S3)',
    parse: optionalUrl,
  },
  { key: 's3Region', flag: '--s3-region', description: 'region of the S3 store', defaultValue: 'us-east-1', parse: text },
  {
    key: 's3AccessKeyId',
    flag: '--s3-access-key-id',
    description: 'access key of the S3 store; $.send.s3 is available when it and --s3-secret-access-key are set',
    defaultValue: undefined,
    parse: optionalText,
  },
  {
    key: 's3SecretAccessKey',
    flag: '--s3-secret-access-key',
    description: 'secret key of the S3 store; never logged',
    defaultValue: undefined,
    parse: optionalText,
  },
  {
    key: 's3ForcePathStyle',
    flag: '--s3-force-path-style',
    description: 'address buckets in the path (endpoint/bucket/key) rather than the host name',
    defaultValue: (c) => c.s3Endpoint !== undefined,
    defaultText: 'true with --s3-endpoint, else false',
    parse: bool,
  },
];

/** `--data-dir` → `TRIBUTARY_DATA_DIR`. */
export function envName(flag: string): string {
  return `TRIBUTARY_${flag.replace(/^--/, '').replace(/-/g, '_').toUpperCase()}`;
}

/** Commander options for every setting; commander reads the TRIBUTARY_* variable when the flag is absent. */
export function settingOptions(): Option[] {
  return SETTINGS.map((s) => {
    const isBool = s.parse === bool;
    // In the description: commander shows only defaults it sets itself, and resolveConfig must fill them (some depend on others).
    const shown = s.defaultText ?? (s.defaultValue === undefined || typeof s.defaultValue === 'function' ? undefined : String(s.defaultValue));
    const description = shown === undefined ? s.description : `${s.description} (default: ${shown.replace(/^\((.*)\)$/, '$1')})`;
    const option = new Option(isBool ? `${s.flag} [value]` : `${s.flag} <value>`, description).env(envName(s.flag));
    option.argParser((raw: string | undefined) => (raw === undefined ? true : wrapParse(s, raw)));
    if (isBool) option.preset('true');
    return option;
  });
}

function wrapParse(s: SettingSpec<keyof Config>, raw: string): unknown {
  try {
    return s.parse(raw);
  } catch (error) {
    throw new ConfigError(`${s.flag} (${envName(s.flag)}): ${(error as Error).message}`);
  }
}

/** Builds a frozen Config from the given values, filling defaults and resolving the data directory. */
export function resolveConfig(values: Partial<Config> = {}): Config {
  const out: Record<string, unknown> = {};
  for (const s of SETTINGS) if (values[s.key] !== undefined && !(values[s.key] === '' && emptyMeansUnset(s.parse))) out[s.key] = values[s.key];
  for (const s of SETTINGS) {
    if (out[s.key] !== undefined) continue;
    out[s.key] = typeof s.defaultValue === 'function' ? s.defaultValue(out as Partial<Config>) : s.defaultValue;
  }
  out.dataDir = path.resolve(String(out.dataDir));
  out.publicUrl = String(out.publicUrl).replace(/\/+$/, '');
  if (out.workerCaFile !== undefined) out.workerCaFile = checkWorkerCaFile(String(out.workerCaFile), String(out.workerUser));
  if (out.secretKey !== undefined && out.secretKeyFile !== undefined) {
    throw new ConfigError('--secret-key and --secret-key-file both name the key that seals secrets: set one of them');
  }
  if (out.secretKeyFile !== undefined) out.secretKeyFile = checkSecretKeyFile(String(out.secretKeyFile));
  const config = out as unknown as Config;
  checkS3(config);
  if (config.role !== 'all' && config.databaseUrl === undefined) {
    throw new ConfigError(
      `--role ${config.role} needs --database-url: nodes of a cluster share a PostgreSQL database; on SQLite one process does everything (--role all)`,
    );
  }
  return Object.freeze(config);
}

/** Sets the port `--port 0` picked once it is known, and the default public URL with it (a given one is kept). */
export function withListeningPort(config: Config, port: number, publicUrlWasGiven: boolean): Config {
  if (config.port === port) return config;
  return resolveConfig({ ...config, port, publicUrl: publicUrlWasGiven ? config.publicUrl : (undefined as unknown as string) });
}
