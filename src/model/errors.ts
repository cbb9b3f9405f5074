// Every error a request can end in, each with a stable code, an HTTP status and what it means, in one registry.
// Services throw these; the API's single error handler turns them into `{ error, code, details }`.

/** The registry: code → HTTP status and the meaning the README's error table gives. */
export const ERRORS = {
  invalid_request: { status: 400, meaning: 'a malformed body, parameter or header, or a value the specification does not allow' },
  invalid_cursor: {
    status: 400,
    meaning: 'a `before`/`after` cursor that is no position in a list of this kind (a position is not tied to the list that gave it out)',
  },
  unauthorized: { status: 401, meaning: 'no API key, a malformed Authorization header or more than one, or an unknown key (with `WWW-Authenticate: Bearer`)' },
  not_found: { status: 404, meaning: "an unknown id, another account's resource, an unknown route, or no active source or workflow at an endpoint" },
  method_not_allowed: { status: 405, meaning: 'a method the path does not answer (with `Allow` naming those it does; `OPTIONS` answers 204 with it)' },
  conflict: { status: 409, meaning: "the request contradicts the resource's state (for example, running an inactive source)" },
  request_timeout: { status: 408, meaning: 'a request whose headers or body did not arrive in time; the connection is closed' },
  payload_too_large: { status: 413, meaning: 'a body over the limit (512 KiB for endpoints, `--body-limit` for the API)' },
  unsupported_media_type: { status: 415, meaning: 'an API request body that is not `application/json`' },
  component_invalid: { status: 422, meaning: 'component code that does not load, is not a source, or whose npm imports cannot be installed' },
  props_invalid: { status: 422, meaning: "`configured_props` that do not validate against the component's props" },
  limit_reached: {
    status: 409,
    meaning: 'the account holds the most sources, workflows, webhooks, subscriptions or connected accounts that `--account-limits` allows',
  },
  hook_failed: {
    status: 422,
    meaning: "a `deploy` or `activate` hook threw; the change was not made (an update restores what the old code's `deactivate` took down)",
  },
  headers_too_large: { status: 431, meaning: 'a request line and headers over 16 KiB; the connection is closed' },
  rate_limited: { status: 429, meaning: 'more API requests per minute than `--rate-limit` allows (with `Retry-After`)' },
  quota_exceeded: { status: 429, meaning: 'a free-plan daily quota is used up (with `Retry-After` until 00:00 UTC)' },
  too_many_streams: { status: 429, meaning: 'a live stream past the 1,000 one account may hold open on a node at once' },
  run_failed: { status: 500, meaning: 'a custom-response source or workflow failed before it called `respond()`' },
  internal_error: { status: 500, meaning: 'a fault of the server; the log has the details' },
  unavailable: { status: 503, meaning: 'the server is stopping or a dependency is unreachable (with `Retry-After`)' },
  insufficient_storage: { status: 507, meaning: "the data directory's disk is full; nothing was written (with `Retry-After`)" },
  no_response: { status: 504, meaning: 'a custom-response source or workflow did not call `respond()` before its run timeout (or its run ended)' },
} as const satisfies Record<string, { status: number; meaning: string }>;

export type ErrorCode = keyof typeof ERRORS;

export class ServiceError extends Error {
  override name = 'ServiceError';
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown[],
    /** Sent as `Retry-After` (429, 503). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.status = ERRORS[code].status;
  }
}

/**
 * The most problems one error answer names. A body of 200,000 unknown fields (or props) was answered with a complaint
 * for each: 10 times its size, built and sent on the event loop that every account shares, for a second or more.
 */
export const MAX_LISTED_PROBLEMS = 100;

/**
 * The first MAX_LISTED_PROBLEMS problems in words, joined by "; ", then how many more there are of `total` (by default
 * as many as given: a caller that read only the first ones gives their count).
 */
export function listProblems<T>(problems: readonly T[], words: (problem: T) => string, total = problems.length): string {
  const listed = problems.slice(0, MAX_LISTED_PROBLEMS).map(words).join('; ');
  const more = total - Math.min(problems.length, MAX_LISTED_PROBLEMS);
  return more > 0 ? `${listed}; and ${more} more` : listed;
}

export function notFound(what: string): ServiceError {
  return new ServiceError('not_found', `${what} not found`);
}

export function invalid(message: string, details?: unknown[]): ServiceError {
  return new ServiceError('invalid_request', message, details);
}

/** The 429 of an account over its quota, with the reason and the seconds until its counters reset. */
export function quotaExceeded(verdict: { reason?: string | undefined; retryAfterSeconds?: number | undefined }): ServiceError {
  return new ServiceError('quota_exceeded', verdict.reason ?? 'quota exceeded', undefined, verdict.retryAfterSeconds);
}

/**
 * The 503 of a custom-response request whose wait for `respond()` ended while the database was unreachable: its run
 * was queued before the outage (`what` names it) and runs once the database is back (or ran on another node, whose
 * answer could not be relayed), but no one hears its answer.
 */
export function awaitedThroughOutage(what: string): ServiceError {
  return new ServiceError(
    'unavailable',
    `the database is unreachable: this request was queued before it went away, but its response could not be awaited; its ${what} runs (or ran, on another node) without its response reaching anyone (sending the request again runs it again)`,
    undefined,
    5,
  );
}
