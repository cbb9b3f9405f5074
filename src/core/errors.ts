// Every error a request can end in, each with a stable code and HTTP status, in one registry.
// Core services throw these; the API's single error handler turns them into `{ error, code, details }`.

const ERRORS = {
  invalid_request: 400,
  invalid_cursor: 400,
  unauthorized: 401,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  component_invalid: 422,
  props_invalid: 422,
  hook_failed: 422,
  rate_limited: 429,
  quota_exceeded: 429,
  internal_error: 500,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERRORS;

export class ServiceError extends Error {
  override name = 'ServiceError';
  readonly status: number;
  constructor(
    readonly code: ErrorCode | string,
    message: string,
    readonly details?: unknown[],
    status?: number,
  ) {
    super(message);
    this.status = status ?? ERRORS[code as ErrorCode] ?? 500;
  }
}

export function notFound(what: string): ServiceError {
  return new ServiceError('not_found', `${what} not found`);
}

export function invalid(message: string, details?: unknown[]): ServiceError {
  return new ServiceError('invalid_request', message, details);
}
