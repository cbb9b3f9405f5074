// A server with an account and a saved component, started before a test file's cases and destroyed after them, for the
// tests of prop configuration (options(), reload) and of the deploys that go by it.
import { afterAll, beforeAll, expect } from 'vitest';
import type { Config } from '../../src/config.js';
import { type ApiResponse, client } from './client.js';
import { type Dialect, startTestServer, type TestServer } from './server.js';

type Api = ReturnType<typeof client>;

export interface ComponentServer {
  readonly server: TestServer;
  /** A client with the account's key. */
  readonly api: Api;
  /** The id of the component the file started with. */
  readonly componentId: string;
  /** Saves `code` as another component of the account (a 200, or the case fails with the answer); its id. */
  save(code: string): Promise<string>;
  /** `POST /v1/components/{id}/props/{prop}/options`, of the file's component unless `componentId` is given. */
  options(prop: string, body?: object, componentId?: string): Promise<ApiResponse>;
  /** `POST /v1/components/{id}/props/reload`, of the file's component unless `componentId` is given. */
  reload(body?: object, componentId?: string): Promise<ApiResponse>;
}

/**
 * Registers the enclosing block's beforeAll, which starts a server on `dialect` (with `overrides`, such as a short
 * `loadTimeout`), makes an account and saves `code` as its component, and the afterAll that destroys it all. The
 * fields of what it returns are read once beforeAll has run, that is in the cases.
 */
export function componentServer(dialect: Dialect, code: string, overrides: Partial<Config> = {}): ComponentServer {
  let server: TestServer | undefined;
  let api: Api | undefined;
  let componentId: string | undefined;
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('componentServer: read in a case, after its beforeAll has run');
    return value;
  };
  const save = async (source: string) => {
    const saved = await started(api).post('/v1/components', { component_code: source });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    return saved.body.data.id as string;
  };
  beforeAll(async () => {
    server = await startTestServer(dialect, overrides);
    api = client(server.url, (await server.createUser()).apiKey);
    componentId = await save(code);
  });
  afterAll(async () => {
    await server?.destroy();
  });
  return {
    get server() {
      return started(server);
    },
    get api() {
      return started(api);
    },
    get componentId() {
      return started(componentId);
    },
    save,
    options: (prop, body = {}, id = started(componentId)) => started(api).post(`/v1/components/${id}/props/${prop}/options`, body),
    reload: (body = {}, id = started(componentId)) => started(api).post(`/v1/components/${id}/props/reload`, body),
  };
}
