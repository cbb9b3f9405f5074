// A small HTTP client for tests: real requests to the real server, returning status, headers and parsed body.

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  key?: string | null;
  body?: unknown;
  /** Raw body and content type, for tests of the body and content-type rules. */
  raw?: { body: string | Buffer; contentType?: string };
  headers?: Record<string, string>;
}

export async function request<T = any>(method: string, url: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: string | Buffer | undefined;
  if (options.raw) {
    body = options.raw.body;
    if (options.raw.contentType) headers['content-type'] = options.raw.contentType;
  } else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] = 'application/json';
  }
  const response = await fetch(url, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  if ((response.headers.get('content-type') ?? '').includes('application/json') && text) parsed = JSON.parse(text);
  return { status: response.status, headers: response.headers, body: parsed as T, text };
}

/** A client bound to one server and key: `api.get('/v1/users/me')`. */
export function client(baseUrl: string, key: string | null) {
  const call = <T = any>(method: string, p: string, options: Omit<RequestOptions, 'key'> = {}) => request<T>(method, `${baseUrl}${p}`, { ...options, key });
  return {
    get: <T = any>(p: string, options?: Omit<RequestOptions, 'key'>) => call<T>('GET', p, options),
    post: <T = any>(p: string, body?: unknown, options?: Omit<RequestOptions, 'key'>) => call<T>('POST', p, { ...options, body }),
    put: <T = any>(p: string, body?: unknown, options?: Omit<RequestOptions, 'key'>) => call<T>('PUT', p, { ...options, body }),
    patch: <T = any>(p: string, body?: unknown, options?: Omit<RequestOptions, 'key'>) => call<T>('PATCH', p, { ...options, body }),
    delete: <T = any>(p: string, options?: Omit<RequestOptions, 'key'>) => call<T>('DELETE', p, options),
  };
}

/** A live stream read as raw text (no reconnection, unlike EventSource): what it sent, and whether it has ended. */
export async function rawStream(url: string, key: string): Promise<{ text: () => string; ended: () => boolean; close: () => void }> {
  const controller = new AbortController();
  const response = await fetch(url, { headers: { authorization: `Bearer ${key}` }, signal: controller.signal });
  if (response.status !== 200) throw new Error(`stream answered ${response.status}: ${await response.text()}`);
  let text = '';
  let ended = false;
  void (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body!) text += decoder.decode(chunk as Uint8Array, { stream: true });
    } catch {
      // Aborted by close().
    }
    ended = true;
  })();
  return { text: () => text, ended: () => ended, close: () => controller.abort() };
}
