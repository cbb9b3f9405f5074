// What the client commands say and exit with when the server, the key or the arguments refuse them: a server that is
// down or a key that is refused ends `dev` as it ends `deploy`, a key rotated under `events -f` gets the login hint,
// and flags or files that cannot work are refused in the command's own words.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, runCli, startCli } from '../helpers/cli.js';
import { client } from '../helpers/client.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';

const SOURCE = 'export default { name: "plain", version: "0.1.0", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body); } };\n';

describe('tributary client commands refused', () => {
  let server: TestServer;
  let key: string;
  let dir: string;
  let env: Record<string, string>;
  /** The address of a server that stopped: nothing listens there. */
  let downUrl: string;

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    key = (await server.createUser()).apiKey;
    const gone = await startTestServer('sqlite');
    downUrl = gone.url;
    await gone.destroy();
    dir = tempDir('tributary-refusals-');
    env = { PATH: process.env.PATH ?? '', HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'config'), TRIBUTARY_URL: server.url, TRIBUTARY_KEY: key };
    fs.writeFileSync(path.join(dir, 'plain.mjs'), SOURCE);
  });
  afterAll(async () => {
    await server?.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const tributary = (args: string[], extra: Record<string, string> = {}): Promise<CliResult> => runCli(args, { env: { ...env, ...extra }, cwd: dir });
  const sourceCount = async () => (await client(server.url, key).get('/v1/users/me/sources')).body.page_info.total_count;

  it('dev ends with exit 5 when the server cannot be reached, and 4 when the key is refused, instead of waiting for a save', async () => {
    // Both waited for a save of the file, saying "fix the file and save it again to deploy" of a file that was fine.
    const down = await tributary(['dev', 'plain.mjs', '--keep'], { TRIBUTARY_URL: downUrl });
    expect([down.code, down.stdout, down.stderr.split('\n').slice(1)]).toEqual([
      5,
      '',
      [
        expect.stringMatching(new RegExp(`^error: cannot reach ${downUrl}: .*\\(unreachable\\)$`)),
        'hint: is the server running there? check the URL with tributary whoami, or pass --url',
        '',
      ],
    ]);
    const refused = await tributary(['dev', 'plain.mjs', '--keep'], { TRIBUTARY_KEY: 'trb_not-a-key' });
    expect([refused.code, refused.stdout, refused.stderr]).toEqual([
      4,
      '',
      'saving the component …\nerror: invalid API key (401 unauthorized)\nhint: the key was refused: check it, or log in again with tributary login --url … --key …\n',
    ]);
    expect(await sourceCount()).toBe(0);
  });

  it('dev says a save that could not reach the server without a status of 0, and keeps watching', async () => {
    const own = await startTestServer('sqlite');
    const ownKey = (await own.createUser()).apiKey;
    fs.writeFileSync(path.join(dir, 'watched.mjs'), SOURCE);
    const dev = startCli(['dev', 'watched.mjs', '--keep'], { env: { ...env, TRIBUTARY_URL: own.url, TRIBUTARY_KEY: ownKey }, cwd: dir });
    try {
      const [, id] = await dev.waitForOutput(/deployed (dc_\w+) "watched-dev"/);
      await dev.waitForOutput(/following dc_\w+: events, logs and errors/, 'stderr');
      await own.stop();
      fs.writeFileSync(path.join(dir, 'watched.mjs'), SOURCE.replace('"plain"', '"plain again"'));
      await dev.waitForOutput(/still runs the previous code/, 'stderr');
      const said = dev.stderr().split('\n');
      const failed = said.findIndex((line) => line.startsWith('error: cannot reach'));
      // Was "(0 unreachable)": the 0 read as a status code the server never sent.
      expect(said[failed]).toMatch(new RegExp(`^error: cannot reach ${own.url}: .*\\(unreachable\\)$`));
      expect(said[failed + 1]).toBe(`${id} still runs the previous code`);
      dev.child.kill('SIGINT');
      expect(await dev.exit).toBe(0);
      expect(dev.stderr()).toContain(`kept ${id}; delete it with tributary delete ${id}`);
    } finally {
      if (dev.child.exitCode === null) dev.child.kill('SIGKILL');
      await own.destroy();
    }
  });

  it('events -f whose key is rotated meanwhile ends with exit 4 and the hint to log in again', async () => {
    const own = await startTestServer('sqlite');
    try {
      const ownKey = (await own.createUser()).apiKey;
      const created = await client(own.url, ownKey).post('/v1/sources', { component_code: SOURCE });
      expect(created.status).toBe(200);
      const id: string = created.body.data.id;
      const follow = startCli(['events', id, '-f'], { env: { ...env, TRIBUTARY_URL: own.url, TRIBUTARY_KEY: ownKey }, cwd: dir });
      await follow.waitForOutput(/following dc_\w+ \(Ctrl-C to stop\)/, 'stderr');
      expect((await client(own.url, ownKey).post('/v1/users/me/api_key')).status).toBe(200);
      expect(await follow.exit, follow.stderr()).toBe(4);
      // Was "answered 401: Non-200 status code (401) (401 http_error)", with no hint.
      expect(follow.stderr().split('\n').slice(-3)).toEqual([
        `error: the live stream of ${id} answered 401: the key was refused (rotated or deleted meanwhile?) (401 unauthorized)`,
        'hint: the key was refused: check it, or log in again with tributary login --url … --key …',
        '',
      ]);
    } finally {
      await own.destroy();
    }
  });

  it('dev refuses --keep with --delete-on-exit, which deleted the source on Ctrl-C', async () => {
    const both = await tributary(['dev', 'plain.mjs', '--keep', '--delete-on-exit']);
    expect([both.code, both.stdout, both.stderr.split('\n')[0]]).toEqual([2, '', "error: option '--keep' cannot be used with option '--delete-on-exit'"]);
    expect(await sourceCount()).toBe(0);
  });

  it('delete of a connected account in use names the --force flag, not the query parameter alone', async () => {
    const api = client(server.url, key);
    const account = await api.post('/v1/accounts', { app: 'mastodon', name: 'mine', credentials: { access_token: 'x' } });
    expect(account.status).toBe(200);
    const accountId: string = account.body.data.id;
    const used = await api.post('/v1/sources', {
      component_code: 'export default { name: "uses", version: "0.1.0", props: { mastodon: { type: "app", app: "mastodon" } }, async run() {} };',
      configured_props: { mastodon: { authProvisionId: accountId } },
    });
    expect(used.status, JSON.stringify(used.body)).toBe(200);
    const refused = await tributary(['delete', accountId]);
    expect([refused.code, refused.stdout, refused.stderr.split('\n').at(-2)]).toEqual([
      2,
      '',
      `hint: tributary delete ${accountId} --force deactivates what uses it, then deletes it`,
    ]);
    const forced = await tributary(['delete', accountId, '--force']);
    expect([forced.code, forced.stdout, forced.stderr]).toEqual([0, `deleted ${accountId}\n`, '']);
    expect((await api.delete(`/v1/sources/${used.body.data.id}`)).status).toBe(204);
  });

  it('delete and describe of a subscription id (as list subscriptions shows it) say how to see and remove one', async () => {
    const api = client(server.url, key);
    const emitter = await api.post('/v1/sources', { component_code: SOURCE });
    const listener = await api.post('/v1/sources', { component_code: SOURCE, name: 'listener' });
    const made = await api.post(`/v1/subscriptions?emitter_id=${emitter.body.data.id}&listener_id=${listener.body.data.id}`);
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const subscriptions = await api.get('/v1/users/me/subscriptions');
    const subscriptionId: string = subscriptions.body.data[0].id;
    // Was `"sub_…" is not an id the client knows: dc_… (sources), …` for the very id `tributary list subscriptions` prints.
    const said =
      `error: "${subscriptionId}" is a subscription, which the API names by its emitter, listener and stream, not by its id: ` +
      'see them with tributary list subscriptions (or auto-subscriptions), and remove one with tributary unsubscribe ' +
      '<emitter_id> <listener_id> [--event <name>] (or tributary auto-unsubscribe <listener_id> [--event <name>])\n';
    for (const command of ['delete', 'describe']) {
      const refused = await tributary([command, subscriptionId]);
      expect([refused.code, refused.stdout, refused.stderr]).toEqual([2, '', said]);
    }
    expect((await api.get('/v1/users/me/subscriptions')).body.data).toEqual(subscriptions.body.data);
    for (const source of [emitter, listener]) expect((await api.delete(`/v1/sources/${source.body.data.id}`)).status).toBe(204);
  });

  it('deploy --workflow names a folder given as the file, and a step file that is not there, as deploy names a component file', async () => {
    fs.mkdirSync(path.join(dir, 'flows', 'steps'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'flows', 'flow.yaml'), 'name: missing step\nsteps:\n  - name: parse\n    path: ./steps/parse.mjs\n');
    const folder = await tributary(['deploy', '--workflow', 'flows']);
    // Was "cannot read flows: EISDIR: illegal operation on a directory, read".
    expect([folder.code, folder.stdout, folder.stderr]).toEqual([
      2,
      '',
      'reading and bundling flows\nerror: cannot read flows: it is a folder, not a workflow file\n',
    ]);
    const missing = await tributary(['deploy', '--workflow', 'flows/flow.yaml']);
    // Was esbuild's `cannot bundle ./steps/parse.mjs: Could not resolve "/tmp/…/flows/steps/parse.mjs"`.
    expect([missing.code, missing.stdout, missing.stderr]).toEqual([
      2,
      '',
      `reading and bundling flows/flow.yaml\nerror: flows/flow.yaml: steps[0] ("parse"): path ${path.join('flows', 'steps', 'parse.mjs')}: no such file\n`,
    ]);
    expect((await client(server.url, key).get('/v1/users/me/workflows')).body.page_info.total_count).toBe(0);
  });

  it("says an https:// URL of a plain HTTP server in one line that names the scheme, not in OpenSSL's words", async () => {
    const tls = server.url.replace(/^http:/, 'https:');
    const wrong = await tributary(['whoami'], { TRIBUTARY_URL: tls });
    // Was two lines: "…:error:0A00010B:SSL routines:ssl3_get_record:wrong version number:../deps/openssl/…:" then " (unreachable)".
    expect([wrong.code, wrong.stdout, wrong.stderr]).toEqual([
      5,
      '',
      `error: cannot reach ${tls}: it does not speak TLS there: is the server http://, not https://? (unreachable)\nhint: is the server running there? check the URL with tributary whoami, or pass --url\n`,
    ]);
  });

  it('asks again for an answer outside a static option list, and takes numbers for a list prop as a list', async () => {
    fs.writeFileSync(
      path.join(dir, 'picky.mjs'),
      'export default { name: "picky", version: "0.1.0", props: { channel: { type: "string", options: ["general", "random"] }, tags: { type: "string[]", options: ["a", "b", "c"] }, limit: "integer" }, async run() {} };\n',
    );
    // "9" of two choices was sent as the value "9", and "2" of a string[] prop as the string "b": both a 422 after
    // every question was answered. "ten" was refused as "--prop limit=ten", a flag nobody typed.
    const asked = await runCli(['deploy', 'picky.mjs', '--interactive', '--json'], { env, cwd: dir, input: '9\n2\nz\n1, 3\nten\n10\n' });
    expect(asked.code, asked.stderr).toBe(0);
    expect(JSON.parse(asked.stdout).configured_props).toEqual({ channel: 'random', tags: ['a', 'c'], limit: 10 });
    expect(asked.stderr.split('\n').filter((line) => line.startsWith('"'))).toEqual([
      '"9" is not one of the choices: answer 1 to 2, or one of their values',
      '"z" is not one of the choices: answer 1 to 3, or one of their values',
      '"ten": limit is an integer; try again',
    ]);
    const one = await runCli(['deploy', 'picky.mjs', '--interactive', '--json'], { env, cwd: dir, input: 'general\n2\n1\n' });
    expect(one.code, one.stderr).toBe(0);
    expect(JSON.parse(one.stdout).configured_props).toEqual({ channel: 'general', tags: ['b'], limit: 1 });
    for (const id of [JSON.parse(asked.stdout).id, JSON.parse(one.stdout).id])
      expect((await client(server.url, key).delete(`/v1/sources/${id}`)).status).toBe(204);
  });
});
