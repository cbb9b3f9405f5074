// A small client of a Tributary server's REST API for the CLI: JSON in and out, API errors as ApiError.

/** The server refused a request; `code` is its registered error code. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface ServerAddress {
  /** Base URL of the server, e.g. http://localhost:3000. */
  url: string;
  key: string;
}

export class ApiClient {
  constructor(private readonly server: ServerAddress) {}

  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await fetch(`${this.server.url.replace(/\/+$/, '')}${path}`, {
        method,
        headers: { authorization: `Bearer ${this.server.key}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (error) {
      const cause = (error as { cause?: { message?: string } }).cause?.message;
      throw new ApiError(0, 'unreachable', `cannot reach ${this.server.url}: ${cause ?? (error as Error).message}`);
    }
    const text = await response.text();
    const parsed = text ? (JSON.parse(text) as unknown) : undefined;
    if (!response.ok) {
      const error = parsed as { error?: string; code?: string } | undefined;
      throw new ApiError(response.status, error?.code ?? 'http_error', error?.error ?? `${method} ${path} answered ${response.status}`);
    }
    return parsed as T;
  }
}
