// How each setting's text becomes a typed value, and the checks that stop a start on a value that cannot work.
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { type AccountLimits, DEFAULT_ACCOUNT_LIMITS, LIMITED_RESOURCES, type LimitedResource } from './model/account-limits.js';
import { MAX_TIMER_INTERVAL_SECONDS } from './model/schedules.js';
import { notADirectory } from './lib/data-dir.js';
import { readKeyFile } from './lib/secrets.js';
import { checkEgressAllow } from './runtime/worker/egress-rules.js';
import { FIRST_ACCOUNT_UID, firstUnreachable, resolveWorkerUser } from './runtime/worker-user.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function integer(min: number, max = Number.MAX_SAFE_INTEGER) {
  return (raw: string): number => {
    const value = Number(raw);
    if (!/^-?\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
      throw new ConfigError(`expected an integer from ${min} to ${max}, got "${raw}"`);
    }
    return value;
  };
}

/** A timer interval in seconds: from 1 s to the longest interval a timer may have (365 days). */
export const timerSecs = integer(1, MAX_TIMER_INTERVAL_SECONDS);

/** An integer, or undefined for an empty value (a setting that is off unless given). */
export function optionalInteger(min: number, max = Number.MAX_SAFE_INTEGER) {
  const parse = integer(min, max);
  return (raw: string): number | undefined => (raw.trim() === '' ? undefined : parse(raw));
}

export function bool(raw: string): boolean {
  const value = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on', ''].includes(value)) return true;
  if (['0', 'false', 'no', 'off'].includes(value)) return false;
  throw new ConfigError(`expected true or false, got "${raw}"`);
}

export function text(raw: string): string {
  return raw;
}

/** How a listen host is written in the default public URL: an IPv6 address bracketed, or the URL cannot be read. */
export function hostInUrl(host: string): string {
  return host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
}

/**
 * An interface to listen on. Never empty: Node's listen() takes an empty host as every interface, so
 * `TRIBUTARY_METRICS_HOST=` would have opened the metrics to the network. An IPv6 address may come bracketed.
 */
export function listenHost(raw: string): string {
  const host = /^\[.*\]$/.test(raw.trim()) ? raw.trim().slice(1, -1) : raw.trim();
  if (host === '') throw new ConfigError('expected an address or host name to listen on, got an empty value');
  if (/[\s/]/.test(host) || (host.includes(':') && isIP(host) !== 6)) {
    throw new ConfigError(`expected an address or host name to listen on (127.0.0.1, ::1, 0.0.0.0, localhost), got "${raw}"`);
  }
  return host;
}

/**
 * A folder's path, never empty: path.resolve('') is the current folder, so `--data-dir "$DIR"` with DIR unset would put
 * (or restore) a database wherever the command happens to run. Never a file either, nor below one.
 */
export function folderPath(raw: string): string {
  if (raw.trim() === '') throw new Error('expected the path of a folder, got an empty value');
  const problem = notADirectory(raw);
  if (problem !== undefined) throw new Error(problem);
  return raw;
}

const DEFAULT_DATA_DIR = './data';

/**
 * The data directory's default, refused as a given one is when a file stands there: commander parses only what was
 * given, and the database would otherwise be the first to say so, with exit 1 and no word of the default.
 */
export const dataDirDefault = {
  defaultValue(): string {
    const problem = notADirectory(DEFAULT_DATA_DIR);
    if (problem !== undefined) throw new ConfigError(`--data-dir (TRIBUTARY_DATA_DIR): ${problem} (${DEFAULT_DATA_DIR}, the default when neither is set)`);
    return DEFAULT_DATA_DIR;
  },
  defaultText: DEFAULT_DATA_DIR,
};

/**
 * Whether a setting's parser takes an empty value as "not set". Commander stores '' where such a parser answered
 * undefined (TRIBUTARY_METRICS_PORT= set to nothing), which resolveConfig must then take as unset too.
 */
export function emptyMeansUnset(parse: (raw: string) => unknown): boolean {
  try {
    return parse('') === undefined;
  } catch {
    return false;
  }
}

/**
 * A key file's path, never empty: `--secret-key-file "$KEY_FILE"` with KEY_FILE unset would otherwise fall back to
 * the data directory's key, or make a new one that opens none of the secrets sealed with the key meant.
 */
export function keyFilePath(raw: string): string {
  if (raw.trim() === '') throw new ConfigError('expected the path of a key file, got an empty value');
  return raw;
}

export function optionalText(raw: string): string | undefined {
  return raw === '' ? undefined : raw;
}

export function logLevel(raw: string): LogLevel {
  if (!LOG_LEVELS.includes(raw as LogLevel)) throw new ConfigError(`expected one of ${LOG_LEVELS.join(', ')}, got "${raw}"`);
  return raw as LogLevel;
}

export type LogFormat = 'auto' | 'json' | 'pretty';
export const LOG_FORMATS: readonly LogFormat[] = ['auto', 'json', 'pretty'];

export function logFormat(raw: string): LogFormat {
  if (!LOG_FORMATS.includes(raw as LogFormat)) throw new ConfigError(`expected one of ${LOG_FORMATS.join(', ')}, got "${raw}"`);
  return raw as LogFormat;
}

export type NodeRole = 'all' | 'api' | 'worker';
export const NODE_ROLES: readonly NodeRole[] = ['all', 'api', 'worker'];

export function nodeRole(raw: string): NodeRole {
  if (!NODE_ROLES.includes(raw as NodeRole)) throw new ConfigError(`expected one of ${NODE_ROLES.join(', ')}, got "${raw}"`);
  return raw as NodeRole;
}

export function url(raw: string): string {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`expected an absolute URL, got "${raw}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(`expected an http or https URL, got "${raw}"`);
  }
  return raw.replace(/\/+$/, '');
}

export const optionalUrl = (raw: string): string | undefined => (raw === '' ? undefined : url(raw));

/** Comma-separated whole seconds, e.g. `5,300,1800`; empty for no retries. */
export function secondsList(raw: string): readonly number[] {
  if (raw.trim() === '') return Object.freeze([]);
  return Object.freeze(
    raw.split(',').map((part) => {
      const value = part.trim();
      if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) throw new ConfigError(`expected comma-separated whole seconds, got "${raw}"`);
      return Number(value);
    }),
  );
}

/** Checked now, so that a user that does not exist stops the start, not the first run. */
export function workerUserSetting(raw: string): string {
  const value = raw.trim();
  try {
    resolveWorkerUser(value);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  return value;
}

/** Comma-separated `--egress-allow` entries, each checked now so that a typo stops the start, not a run. */
export function egressList(raw: string): readonly string[] {
  const entries = raw
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  try {
    checkEgressAllow(entries);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  return Object.freeze(entries);
}

/** The raw value is not echoed in errors: it may hold a password. */
export function smtpUrl(raw: string): string | undefined {
  if (raw === '') return undefined;
  const parsed = URL.canParse(raw) ? new URL(raw) : undefined;
  if (!parsed || (parsed.protocol !== 'smtp:' && parsed.protocol !== 'smtps:') || parsed.hostname === '') {
    throw new ConfigError('expected an smtp:// or smtps:// URL with a host, such as smtp://user:password@mail.example.com:587');
  }
  return raw;
}

export function emailAddress(raw: string): string {
  const value = raw.trim();
  if (!/^[^\s@]+@[^\s@]+$/.test(value)) throw new ConfigError(`expected an email address such as tributary@example.com, got "${raw}"`);
  return value;
}

export function databaseUrl(raw: string): string | undefined {
  if (raw === '') return undefined;
  if (!/^postgres(ql)?:\/\//.test(raw)) {
    throw new ConfigError(`expected a postgres:// URL, got "${raw}"`);
  }
  return raw;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * Checks the `--worker-ca-file` now and returns its real path (the permission model compares real paths). Node only
 * warns, in a worker's stderr, about an extra CA file it cannot read or parse, and every HTTPS request would then
 * fail with a certificate error far from its cause: so a missing, unreadable or malformed file stops the start,
 * and so does one the worker user cannot reach.
 */
export function checkWorkerCaFile(given: string, workerUser: string): string {
  const fail = (why: string): never => {
    throw new ConfigError(`--worker-ca-file (TRIBUTARY_WORKER_CA_FILE): ${why}`);
  };
  const file = path.resolve(given);
  let content = '';
  let real = file;
  try {
    real = fs.realpathSync(file);
    if (!fs.statSync(real).isFile()) fail(`"${file}" is not a file`);
    content = fs.readFileSync(real, 'utf8');
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    fail(`cannot read "${file}": ${code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (error as Error).message}`);
  }
  const certificates = content.match(PEM_CERTIFICATE) ?? [];
  if (certificates.length === 0) fail(`"${file}" holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  for (const [i, pem] of certificates.entries()) {
    try {
      new X509Certificate(pem);
    } catch (error) {
      fail(`certificate ${i + 1} of "${file}" cannot be read: ${(error as Error).message}`);
    }
  }
  const user = resolveWorkerUser(workerUser);
  if (user !== undefined) {
    // An account's own user is nobody's owner or group: it reaches what "others" may.
    const probe = user === 'per-account' ? { uid: FIRST_ACCOUNT_UID - 1, gid: FIRST_ACCOUNT_UID - 1 } : user;
    const blocked = firstUnreachable(probe, [real]);
    if (blocked) {
      fail(
        `the worker user (uid ${probe.uid}) cannot read "${blocked}": make the file readable and its folders traversable by others, or pass --worker-user same`,
      );
    }
  }
  return real;
}

/** `sources=500,webhooks=0`: the resources named get these limits (0: none), the others keep their defaults. */
export function accountLimits(raw: string): AccountLimits {
  const limits: Record<LimitedResource, number> = { ...DEFAULT_ACCOUNT_LIMITS };
  const count = integer(0);
  for (const item of raw
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    const [name, value, ...rest] = item.split('=');
    if (!(LIMITED_RESOURCES as readonly string[]).includes(name?.trim() ?? '') || value === undefined || rest.length) {
      throw new ConfigError(`expected resource=count pairs of ${LIMITED_RESOURCES.join(', ')}, got "${item}"`);
    }
    limits[name!.trim() as LimitedResource] = count(value);
  }
  return Object.freeze(limits);
}

/** The S3 settings `checkS3` judges together. */
export interface S3Settings {
  readonly s3Endpoint: string | undefined;
  readonly s3AccessKeyId: string | undefined;
  readonly s3SecretAccessKey: string | undefined;
}

/** A key file that cannot be read, or holds no key, stops the start: a server must never seal with a key it was not given. */
export function checkSecretKeyFile(given: string): string {
  const file = path.resolve(given);
  try {
    readKeyFile(file);
  } catch (error) {
    throw new ConfigError(`--secret-key-file (TRIBUTARY_SECRET_KEY_FILE): ${(error as Error).message}`);
  }
  return file;
}

/** S3 settings that cannot work together stop the start, instead of failing each `$.send.s3` later. */
export function checkS3(config: S3Settings): void {
  const keys = [config.s3AccessKeyId, config.s3SecretAccessKey].filter((key) => key !== undefined).length;
  if (keys === 1) throw new ConfigError('--s3-access-key-id and --s3-secret-access-key go together: set both or neither');
  if (keys === 0 && config.s3Endpoint !== undefined) throw new ConfigError('--s3-endpoint needs --s3-access-key-id and --s3-secret-access-key');
}

/** Fastify's `trustProxy`: no proxy (false), any (true), or addresses and CIDR ranges. */
export type TrustProxy = boolean | string;

/** `false`, `true`, or `127.0.0.1,10.0.0.0/8,uniquelocal`: who may say the client's address in X-Forwarded-For. */
export function trustProxySetting(raw: string): TrustProxy {
  const value = raw.trim();
  if (/^(false|no|off|0)?$/i.test(value)) return false;
  if (/^(true|yes|on)$/i.test(value)) return true;
  const entries = value.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    // proxy-addr's names for the loopback, link-local and unique-local ranges.
    if (['loopback', 'linklocal', 'uniquelocal'].includes(entry)) continue;
    const [address, bits, ...rest] = entry.split('/');
    const maxBits = isIP(address ?? '') === 6 ? 128 : 32;
    if (!isIP(address ?? '') || rest.length || (bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= maxBits))) {
      throw new ConfigError(
        `expected false, true, or addresses, CIDR ranges (10.0.0.0/8) and loopback, linklocal or uniquelocal, comma-separated; got "${entry}"`,
      );
    }
  }
  return entries.join(',');
}
