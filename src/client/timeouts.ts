// How long the client waits on a server (--timeout, TRIBUTARY_TIMEOUT): to connect, for its first answer and through
// pauses in an answer, by what the request waits on; and the words for a wait that ran out.
import { UsageError } from './usage-error.js';

/** Seconds a request waits for the server's answer when neither --timeout nor TRIBUTARY_TIMEOUT says. */
export const DEFAULT_TIMEOUT_SECONDS = 30;
/** The most --timeout takes (a day); past it, 0 says "no limit" plainly. */
const MAX_TIMEOUT_SECONDS = 86_400;
/** A connection not made in 10 s will not be (undici's own limit); a shorter --timeout shortens it too. */
const CONNECT_MS = 10_000;
/**
 * Unless a timeout is given, a request that waits on the component's own code waits this long (undici's default for
 * every request before --timeout): a deploy runs its deploy() and activate() hooks, each allowed the server's
 * --run-timeout (60 s unless set), and cutting it short leaves a source made that the user, told it failed, deploys again.
 */
export const CODE_WAIT_SECONDS = 300;
const CODE_WAIT_MS = CODE_WAIT_SECONDS * 1000;
/** The progress and live streams send a comment every 15 s: a minute without a byte is a connection gone. */
const STREAM_SILENCE_MS = 60_000;

/**
 * What a request waits on: `answer`, the server alone (every read, most writes); `code`, component code the server
 * runs before it answers (a source's hooks, a prop's options(), additionalProps(), a save that installs npm packages
 * without telling its progress); `stream`, a progress or live stream, open as long as its work or the user's wish.
 */
export type Wait = 'answer' | 'code' | 'stream';

/** Milliseconds allowed for each phase of a request; 0 waits without limit. */
export interface Limits {
  connectMs: number;
  /** From the request sent to the answer's status and headers. */
  headersMs: number;
  /** The longest pause between two pieces of the answer's body. */
  bodyMs: number;
}

/**
 * The limits of a request of `wait` under the timeout given, in milliseconds (0: no limit on the answer; undefined:
 * none given, the defaults). A timeout given holds for every answer, as the user asked; a stream's answer is its first
 * bytes, after which it runs as long as its work or the user's wish, held only to the server's heartbeat.
 */
export function limitsFor(timeoutMs: number | undefined, wait: Wait): Limits {
  const connectMs = timeoutMs ? Math.min(timeoutMs, CONNECT_MS) : CONNECT_MS;
  const answerMs = timeoutMs ?? (wait === 'code' ? CODE_WAIT_MS : DEFAULT_TIMEOUT_SECONDS * 1000);
  if (wait !== 'stream') return { connectMs, headersMs: answerMs, bodyMs: answerMs };
  return { connectMs, headersMs: answerMs, bodyMs: timeoutMs === 0 ? 0 : Math.max(answerMs, STREAM_SILENCE_MS) };
}

/** --timeout's value, else TRIBUTARY_TIMEOUT's (empty counts as unset, as for the other variables), in milliseconds. */
export function resolveTimeout(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): number | undefined {
  if (flag !== undefined) return parseTimeout(flag, '--timeout');
  if (env.TRIBUTARY_TIMEOUT) return parseTimeout(env.TRIBUTARY_TIMEOUT, 'TRIBUTARY_TIMEOUT');
  return undefined;
}

function parseTimeout(raw: string, name: string): number {
  const seconds = /^\d+(\.\d+)?$/.test(raw.trim()) ? Number(raw) : Number.NaN;
  if (!(seconds <= MAX_TIMEOUT_SECONDS)) {
    throw new UsageError(`${name} takes seconds, from 0 (no limit) to ${MAX_TIMEOUT_SECONDS}, not "${raw}"`);
  }
  // Undici cannot time a wait below a millisecond; 0.0001 would otherwise read as "no limit".
  return seconds === 0 ? 0 : Math.max(1, Math.round(seconds * 1000));
}

/** Which limit an undici error says ran out, found along its causes (fetch wraps it in `fetch failed` or `terminated`). */
export function timeoutOf(error: unknown): 'connect' | 'headers' | 'body' | undefined {
  for (let e = error as { code?: string; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (e.code === 'UND_ERR_CONNECT_TIMEOUT') return 'connect';
    if (e.code === 'UND_ERR_HEADERS_TIMEOUT') return 'headers';
    if (e.code === 'UND_ERR_BODY_TIMEOUT') return 'body';
  }
  return undefined;
}

/** `1 s`, `0.5 s`, `300 s`: a limit as the user would give it to --timeout. */
export function secondsOf(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))} s`;
}

/** The way out of a limit, said with every timeout. */
export const LONGER = 'wait longer with --timeout <seconds> or TRIBUTARY_TIMEOUT, 0 for no limit';
