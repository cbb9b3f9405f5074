// Calls to the REST API under /v1 with the session's key as a Bearer header; errors become ApiError with the server's details.
import { clearKey, storedKey } from './session';

export interface Page<T> {
  page_info: { total_count: number; count: number; start_cursor: string; end_cursor: string };
  data: T[];
}

/** One problem the server listed in `details` (a 422 `props_invalid` names the prop; a 400 the field). */
export interface ErrorDetail {
  prop?: string;
  field?: string;
  message?: string;
  reason?: string;
  /** A 422 `hook_failed`'s: the hook and the console lines it logged, which nothing else keeps (the change was refused). */
  hook?: string;
  logs?: Array<{ k: string; msg: string }>;
}

/** The hook lines shown: the last, where it failed; a hook may log thousands. */
const SHOWN_HOOK_LINES = 20;

/** A failed hook's console lines as one sentence (`activate() logged: a · b`), or undefined when it logged none. */
export function hookLogText(detail: ErrorDetail): string | undefined {
  if (!detail.hook || !Array.isArray(detail.logs) || !detail.logs.length) return undefined;
  const shown = detail.logs.slice(-SHOWN_HOOK_LINES).map((line) => line.msg);
  const earlier = detail.logs.length - shown.length;
  return `${detail.hook}() logged: ${earlier ? `(${earlier} earlier lines) ` : ''}${shown.join(' · ')}`;
}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
    readonly details: ErrorDetail[] = [],
  ) {
    super(message);
  }
}

type UnauthorizedHandler = (message: string) => void;
let onUnauthorized: UnauthorizedHandler = () => {};

/** Who hears that the key stopped working (revoked, rotated elsewhere): the app, which returns to sign-in. */
export function whenUnauthorized(handler: UnauthorizedHandler): void {
  onUnauthorized = handler;
}

export function authHeaders(key = storedKey()): Record<string, string> {
  return key ? { authorization: `Bearer ${key}` } : {};
}

/** `path` is relative to /v1; `key` overrides the stored one (signing in tries a key before keeping it). */
export async function api<T>(method: string, path: string, body?: unknown, key?: string): Promise<T> {
  const headers: Record<string, string> = { ...authHeaders(key ?? storedKey()), accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(`/v1${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      // The key travels in the header only: no cookies, and nothing cached that a later user of the browser could read.
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch {
    // The browser says only "Failed to fetch" (or "NetworkError…"): no answer came at all.
    throw new ApiError(UNREACHABLE, 0, 'unreachable');
  }
  const text = await response.text();
  const parsed = text ? safeJson(text) : undefined;
  if (response.ok) return parsed as T;
  throw refusal(response.status, response.statusText, parsed, key === undefined);
}

/**
 * The ApiError of an answer that is not a success; a 401 to the stored key also signs out. An answer that is not the
 * server's JSON error (a proxy's HTML 502 page, say) has no message nor code: its message says the status it came with,
 * and its code is empty, so that describeError does not say the status twice (`502 Bad Gateway (502 unknown)`).
 */
export function refusal(status: number, statusText: string, parsed: unknown, withStoredKey = true): ApiError {
  const error = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as { error?: unknown; code?: unknown; details?: unknown };
  const answered = `the server answered ${status}${statusText ? ` ${statusText}` : ''}`;
  const code = typeof error.code === 'string' ? error.code : '';
  const message = typeof error.error !== 'string' ? answered : code ? error.error : `${error.error} (${answered})`;
  const failure = new ApiError(message, status, code, Array.isArray(error.details) ? (error.details as ErrorDetail[]) : []);
  if (status === 401 && withStoredKey) signOutBecause(failure.message);
  return failure;
}

/** Reading a response's text as JSON when it is JSON. */
export function parseAnswer(text: string): unknown {
  return text ? safeJson(text) : undefined;
}

/** The stored key was refused (here or on a stream): it is forgotten, and the app returns to sign-in saying why. */
export function signOutBecause(message: string): void {
  clearKey();
  onUnauthorized(`Signed out: ${message}.`);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export const get = <T>(path: string) => api<T>('GET', path);
export const post = <T>(path: string, body?: unknown) => api<T>('POST', path, body);
export const patch = <T>(path: string, body?: unknown) => api<T>('PATCH', path, body);
export const put = <T>(path: string, body?: unknown) => api<T>('PUT', path, body);
export const del = <T = void>(path: string) => api<T>('DELETE', path);

/** Most of a list the pickers read: past this many they are suggestions to search, not the list (an id still types in). */
export const PICKER_AT_MOST = 1000;

/** The first items of a paged list, and how many the whole list holds. */
export interface Span<T> {
  items: T[];
  total: number;
}

/**
 * The first `atMost` items of a paged list (`path` without a query; `params` its filters), page after page: a list
 * paged in the console reads again the span it shows (a refresh, a poll) with one call.
 */
export async function getFirst<T>(path: string, atMost: number, params: Record<string, string | undefined> = {}): Promise<Span<T>> {
  const items: T[] = [];
  let after: string | undefined;
  let total = 0;
  while (items.length < atMost) {
    const limit = Math.min(100, atMost - items.length);
    const page = await get<Page<T>>(`${path}${query({ ...params, limit, after })}`);
    items.push(...page.data);
    total = page.page_info.total_count;
    // Not `< limit`: a page of large workflow runs may hold fewer than asked though more follow.
    if (page.data.length === 0 || items.length >= total) break;
    after = page.page_info.end_cursor;
  }
  return { items: items.slice(0, atMost), total };
}

/**
 * Every item of a paged list (`path` without a query), page after page, up to `atMost`: the pickers' suggestions and
 * the names shown for ids, which the first page alone left short for an account of more than 100.
 */
export async function getEveryPage<T>(path: string, atMost = PICKER_AT_MOST): Promise<T[]> {
  return (await getFirst<T>(path, atMost)).items;
}

/** A query string from the defined values only. */
export function query(params: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) search.set(name, String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
}

/** What a request that got no answer says. */
export const UNREACHABLE = 'Cannot reach the server: it may be stopped or restarting, or the network is down. Try again in a moment.';

/**
 * A failure as the console says it, wherever it shows one: the server's message, then its status and code once
 * (`… (422 component_invalid)`; an answer without a code says its status in its message), then the console lines of a
 * failed hook and `extra` (more the server listed), joined by dashes. Details' bare `reason`s are codes: not repeated.
 */
export function describeError(error: unknown, extra: string[] = []): string {
  if (error instanceof ApiError) {
    const said = error.status === 0 || !error.code ? error.message : `${error.message} (${error.status} ${error.code})`;
    return [said, ...error.details.map(hookLogText).filter((text) => text !== undefined), ...extra].join(' — ');
  }
  return [error instanceof Error ? error.message : String(error), ...extra].join(' — ');
}

/** `describeError` followed by the messages the server listed in `details` and did not say already. */
export function describeErrorWithDetails(error: unknown): string {
  if (!(error instanceof ApiError)) return describeError(error);
  // A 400 repeats in `details` what its message says already ("timeout_seconds must be <= 900", then "must be <= 900").
  const details = error.details
    .map((d) => d.message)
    .filter((text): text is string => typeof text === 'string' && text !== '' && !error.message.includes(text));
  return describeError(error, details);
}

/**
 * The first field of a form a 400 names in its details, with the refusal said under the field's label ("Name must NOT
 * have more than 200 characters"), not as the API's "invalid querystring: name …", which names a part of the request
 * the user never sees. Undefined for another failure, or a 400 that names none of `labels`' fields.
 */
export function refusedField<F extends string>(failure: unknown, labels: Record<F, string>): { field: F; said: string } | undefined {
  if (!(failure instanceof ApiError) || failure.status !== 400) return undefined;
  const detail = failure.details.find((d) => d.field !== undefined && Object.hasOwn(labels, d.field));
  if (!detail) return undefined;
  const field = detail.field as F;
  return { field, said: detail.message ? `${labels[field]} ${detail.message}` : failure.message };
}
