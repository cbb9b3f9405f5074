// A --url that names a path on the server rather than the server itself (its docs, its console, a mistyped prefix):
// every route the client asks for is then unknown there, which is a bad flag to fix, not a missing id to look for.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';

describe('tributary --url with a path', () => {
  let server: TestServer;
  let key: string;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    key = (await server.createUser()).apiKey;
    dir = tempDir('tributary-server-address-');
    env = { PATH: process.env.PATH ?? '', HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'config') };
  });
  afterAll(async () => {
    await server?.destroy();
  });

  const tributary = (args: string[]) => runCli(args, { env, cwd: dir });

  it('is a usage error naming the address to use, not a 404 with the hint for an unknown id', async () => {
    // Was exit code 3: `error: route GET /docs/v1/users/me not found (404 not_found)` and `hint: see what the account
    // has with tributary list …`, which sends the user looking for something that is not missing.
    const docs = await tributary(['login', '--url', `${server.url}/docs`, '--key', key]);
    expect([docs.code, docs.stdout, docs.stderr]).toEqual([
      2,
      '',
      `error: ${server.url}/docs is not the server's address (route GET /docs/v1/users/me not found): use --url ${server.url}\n`,
    ]);
    expect(fs.existsSync(path.join(dir, 'config', 'tributary', 'profiles.json'))).toBe(false);

    const list = await tributary(['list', '--url', `${server.url}/console/`, '--key', key]);
    expect([list.code, list.stdout, list.stderr]).toEqual([
      2,
      '',
      `error: ${server.url}/console is not the server's address (route GET /console/v1/users/me/sources not found): use --url ${server.url}\n`,
    ]);
  });

  it('names the server itself for an API base below a path, and keeps the answer of a route the server lacks', async () => {
    // The /v1 below another path was told to drop /v1 only, an address that fails again.
    const nested = await tributary(['whoami', '--url', `${server.url}/x/v1`, '--key', key]);
    expect([nested.code, nested.stderr]).toEqual([
      2,
      `error: ${server.url}/x/v1 is the API base, not the server's address (route GET /x/v1/v1/users/me not found): use --url ${server.url}\n`,
    ]);
    // At the server's own address an unknown id stays a 404 with its hint.
    const missing = await tributary(['describe', 'dc_missing', '--url', server.url, '--key', key]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain('error: source "dc_missing" not found (404 not_found)\nhint: see what the account has');
  });
});
