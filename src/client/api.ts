// A small client of a Tributary server's REST API for the CLI: JSON in and out, API errors as ApiError.

/** The server refused a request (or could not be reached: status 0); `code` is its registered error code. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The error body's `details` (a 422's invalid props, …). */
    readonly details: unknown[] = [],
  ) {
    super(message);
  }
}

export interface ServerAddress {
  /** Base URL of the server, e.g. http://localhost:3000. */
  url: string;
  key: string;
}

/** The list endpoints' envelope. */
export interface PageBody<T> {
  data: T[];
  page_info: { total_count: number; count: number; start_cursor: string | null; end_cursor: string | null };
}

export class ApiClient {
  constructor(readonly server: ServerAddress) {}

  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await fetch(this.url(path), {
        method,
        headers: { authorization: `Bearer ${this.server.key}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (error) {
      const cause = (error as { cause?: { message?: string } }).cause?.message;
      throw new ApiError(0, 'unreachable', `cannot reach ${this.server.url}: ${cause ?? (error as Error).message}`);
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      throw new ApiError(
        response.status,
        'not_json',
        `${method} ${path} answered ${response.status} with a body that is not JSON; is ${this.server.url} a Tributary server?`,
      );
    }
    if (!response.ok) {
      const error = parsed as { error?: string; code?: string; details?: unknown[] } | undefined;
      throw new ApiError(response.status, error?.code ?? 'http_error', error?.error ?? `${method} ${path} answered ${response.status}`, error?.details ?? []);
    }
    return parsed as T;
  }

  get<T>(path: string): Promise<T> {
    return this.call<T>('GET', path);
  }

  /** Every item of a paginated list, following `after` cursors (newest first, as the server lists). */
  async all<T>(path: string, at_most = 10_000): Promise<T[]> {
    const items: T[] = [];
    let after: string | null = null;
    const separator = path.includes('?') ? '&' : '?';
    do {
      const page: PageBody<T> = await this.get(`${path}${separator}limit=100${after ? `&after=${encodeURIComponent(after)}` : ''}`);
      items.push(...page.data);
      after = page.data.length === 100 ? page.page_info.end_cursor : null;
    } while (after && items.length < at_most);
    return items;
  }

  url(path: string): string {
    return `${this.server.url.replace(/\/+$/, '')}${path}`;
  }
}
