// A --url that names a path on the server rather than the server itself (its docs, its console, a mistyped prefix):
// every route the client asks for is then unknown there, which is a bad flag to fix, not a missing id to look for.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { clientFixture } from '../helpers/cli.js';

describe('tributary --url with a path', () => {
  const cli = clientFixture('tributary-server-address-', { signedIn: false });
  const tributary = (args: string[]) => cli.run(args);

  it('is a usage error naming the address to use, not a 404 with the hint for an unknown id', async () => {
    // Was exit code 3: `error: route GET /docs/v1/users/me not found (404 not_found)` and `hint: see what the account
    // has with tributary list …`, which sends the user looking for something that is not missing.
    const docs = await tributary(['login', '--url', `${cli.server.url}/docs`, '--key', cli.key]);
    expect([docs.code, docs.stdout, docs.stderr]).toEqual([
      2,
      '',
      `error: ${cli.server.url}/docs is not the server's address (route GET /docs/v1/users/me not found): use --url ${cli.server.url}\n`,
    ]);
    expect(fs.existsSync(path.join(cli.dir, 'config', 'tributary', 'profiles.json'))).toBe(false);

    const list = await tributary(['list', '--url', `${cli.server.url}/console/`, '--key', cli.key]);
    expect([list.code, list.stdout, list.stderr]).toEqual([
      2,
      '',
      `error: ${cli.server.url}/console is not the server's address (route GET /console/v1/users/me/sources not found): use --url ${cli.server.url}\n`,
    ]);
  });

  it('names the server itself for an API base below a path, and keeps the answer of a route the server lacks', async () => {
    // The /v1 below another path was told to drop /v1 only, an address that fails again.
    const nested = await tributary(['whoami', '--url', `${cli.server.url}/x/v1`, '--key', cli.key]);
    expect([nested.code, nested.stderr]).toEqual([
      2,
      `error: ${cli.server.url}/x/v1 is the API base, not the server's address (route GET /x/v1/v1/users/me not found): use --url ${cli.server.url}\n`,
    ]);
    // At the server's own address an unknown id stays a 404 with its hint.
    const missing = await tributary(['describe', 'dc_missing', '--url', cli.server.url, '--key', cli.key]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain('error: source "dc_missing" not found (404 not_found)\nhint: see what the account has');
  });
});
