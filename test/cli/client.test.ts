// The client commands of the real `tributary` binary against a real server: login and profiles, deploy (props typed,
// asked for, or listed as missing), update in place, list, describe, run, delete, (auto-)subscribe and unsubscribe,
// events and logs (-f live over SSE), dev (a save updates the source in place), and the exit codes scripts rely on.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api.js';
import { missingProps, typedValue } from '../../src/client/props-input.js';
import { UsageError } from '../../src/client/usage-error.js';
import { client, request } from '../helpers/client.js';
import { emitterSource } from '../helpers/components.js';
import { BIN, createAccount, freshStorage, killHard, serve } from '../helpers/processes.js';
import { createTestDatabase, DIALECTS, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { proxyInFrontOf } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait.js';
import { type CliResult, type RunningCli, runCli, startCli } from '../helpers/cli.js';

describe('tributary client commands', () => {
  let server: TestServer;
  let key: string;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    key = (await server.createUser()).apiKey;
    dir = tempDir('tributary-client-');
    // Every test but the login one talks to the server through the variables; that one through a profile.
    env = { PATH: process.env.PATH ?? '', HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'config'), TRIBUTARY_URL: server.url, TRIBUTARY_KEY: key };
    fs.writeFileSync(path.join(dir, 'format.mjs'), 'export const format = (body) => ({ got: body, shape: "v1" });\n');
    fs.writeFileSync(
      path.join(dir, 'source.mjs'),
      [
        'import { format } from "./format.mjs";',
        'export default {',
        '  name: "cli source", version: "0.0.1",',
        '  props: {',
        '    http: "$.interface.http",',
        '    channel: { type: "string", label: "Channel", options: ["general", "random"] },',
        '    limit: { type: "integer", min: 1, max: 100 },',
        '    verbose: { type: "boolean", optional: true },',
        '  },',
        '  async run(event) {',
        '    console.log("got", this.channel, this.limit);',
        '    if (event.body?.fail) throw new Error("asked to fail");',
        '    this.$emit({ ...format(event.body), channel: this.channel, limit: this.limit }, { summary: "event " + (event.body?.n ?? "") });',
        '  },',
        '};',
        '',
      ].join('\n'),
    );
  });
  afterAll(async () => {
    await server?.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const tributary = (args: string[], extra: Record<string, string> = {}, input?: string): Promise<CliResult> =>
    runCli(args, { env: { ...env, ...extra }, cwd: dir, ...(input === undefined ? {} : { input }) });
  const start = (args: string[]): RunningCli => startCli(args, { env, cwd: dir });

  const api = () => client(server.url, key);

  it('logs in: checks the key, saves the profile 0600, and whoami uses it; flags and variables override it', async () => {
    const profileOnly = { TRIBUTARY_URL: '', TRIBUTARY_KEY: '' };
    const refused = await tributary(['login', '--url', server.url, '--key', 'trb_wrong'], profileOnly);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain('(401 unauthorized)');
    expect(refused.stderr).toContain('hint: the key was refused');

    const nothing = await tributary(['whoami'], profileOnly);
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toContain('no server to talk to: run tributary login');

    // The API base the server's banner prints, given as the server's address: was "route GET /v1/v1/users/me not
    // found", exit code 3 and the hint for an unknown id.
    const apiBase = await tributary(['login', '--url', `${server.url}/v1`, '--key', key], profileOnly);
    expect([apiBase.code, apiBase.stderr]).toEqual([
      2,
      `error: ${server.url}/v1 is the API base, not the server's address (route GET /v1/v1/users/me not found): use --url ${server.url}\n`,
    ]);
    expect(fs.existsSync(path.join(dir, 'config', 'tributary', 'profiles.json'))).toBe(false);

    const login = await tributary(['login', '--url', `${server.url}/`, '--key', key], profileOnly);
    expect(login.code, login.stderr).toBe(0);
    const file = path.join(dir, 'config', 'tributary', 'profiles.json');
    expect(login.stdout).toContain(`logged in to ${server.url} as `);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({ current: 'default', profiles: { default: { url: server.url, key } } });

    const me = await tributary(['whoami', '--json'], profileOnly);
    expect(JSON.parse(me.stdout)).toMatchObject({ url: server.url, profile: 'default', account: { id: expect.stringMatching(/^u_/) } });
    expect((await tributary(['whoami'], { TRIBUTARY_URL: '', TRIBUTARY_KEY: 'trb_other' })).code).toBe(4);
    const unknown = await tributary(['whoami', '--profile', 'staging'], profileOnly);
    expect([unknown.code, unknown.stderr]).toEqual([2, expect.stringContaining('no profile "staging"')]);
    const unreachable = await tributary(['whoami', '--url', 'http://127.0.0.1:1']);
    expect(unreachable.code).toBe(5);
    expect(unreachable.stderr).toContain('hint: is the server running there?');
    // A 429 says "later", as a 503 does: a script tells it from bad input (2) by its code.
    const limited = http.createServer((_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
      res.end(JSON.stringify({ error: 'rate limit exceeded, retry in 1 second', code: 'rate_limited' }));
    });
    await new Promise<void>((resolve) => limited.listen(0, '127.0.0.1', resolve));
    try {
      const refused = await tributary(['whoami', '--url', `http://127.0.0.1:${(limited.address() as net.AddressInfo).port}`, '--key', 'trb_x']);
      expect([refused.code, refused.stderr]).toEqual([
        5,
        'error: rate limit exceeded, retry in 1 second (429 rate_limited)\nhint: too many requests: wait a little and try again\n',
      ]);
    } finally {
      await new Promise((resolve) => limited.close(resolve));
    }

    // A profiles file that does not parse stops what needs a profile, not what the flags or variables say in full.
    const saved = fs.readFileSync(file, 'utf8');
    fs.writeFileSync(file, '{oops');
    try {
      expect((await tributary(['whoami'], profileOnly)).stderr).toContain('is not a profiles file');
      const flagsOnly = await tributary(['whoami', '--json', '--url', server.url, '--key', key], profileOnly);
      expect([flagsOnly.code, flagsOnly.stderr]).toEqual([0, '']);
      expect(JSON.parse(flagsOnly.stdout)).toMatchObject({ url: server.url, profile: null });
      expect((await tributary(['whoami'])).code).toBe(0);
    } finally {
      fs.writeFileSync(file, saved);
    }
  });

  it('deploys a file with its relative imports, typing --prop values, and lists the missing props when it cannot ask', async () => {
    const missing = await tributary(['deploy', 'source.mjs', '--prop', 'channel=general']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('missing required props');
    expect(missing.stderr).toContain('limit: integer');
    expect(missing.stderr).not.toContain('channel');

    const wrong = await tributary(['deploy', 'source.mjs', '--prop', 'limit=ten', '--prop', 'channel=general']);
    expect([wrong.code, wrong.stderr]).toEqual([2, expect.stringContaining('--prop limit=ten: limit is an integer')]);
    const refused = await tributary(['deploy', 'source.mjs', '--prop', 'limit=500', '--prop', 'channel=general']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('(422 props_invalid)');
    expect(refused.stderr).toContain('  limit: must be at most 100, got 500');

    const deployed = await tributary([
      'deploy',
      'source.mjs',
      '--name',
      'from cli',
      '--prop',
      'limit=5',
      '--prop',
      'channel=general',
      '--prop',
      'verbose=true',
    ]);
    expect(deployed.code, deployed.stderr).toBe(0);
    expect(deployed.stderr).toMatch(/bundling source\.mjs: done in \d+ ms/);
    const id = /deployed (dc_\w+) "from cli"/.exec(deployed.stdout)![1]!;
    const endpoint = /endpoint: (\S+)/.exec(deployed.stdout)![1]!;
    await request('POST', endpoint, { body: { n: 1 } });
    const events = await waitFor(
      () => api().get(`/v1/sources/${id}/event_summaries?expand=event`),
      (r) => r.body.data.length === 1,
    );
    expect(events.body.data[0].event).toEqual({ got: { n: 1 }, shape: 'v1', channel: 'general', limit: 5 });
  });

  /** Node's own words for the JSON, which differ between versions. */
  const brokenJson = (text: string) => {
    try {
      JSON.parse(text);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error(`${text} is JSON`);
  };

  it('refuses an unreadable --props-file or a --prop not written name=value before it bundles or saves anything', async () => {
    const saved = async () => (await api().get('/v1/users/me/components')).body.page_info.total_count;
    const before = await saved();
    fs.writeFileSync(path.join(dir, 'props-array.json'), '[1]');
    fs.writeFileSync(path.join(dir, 'props-broken.json'), '{"limit": 5,}');
    for (const [args, said] of [
      [['deploy', 'source.mjs', '--props-file', 'no-such.json'], 'error: cannot read --props-file no-such.json: no such file\n'],
      [['deploy', 'source.mjs', '--props-file', 'props-array.json'], 'error: --props-file props-array.json must hold a JSON object of prop values\n'],
      [['deploy', 'source.mjs', '--props-file', 'props-broken.json'], `error: --props-file props-broken.json is not JSON: ${brokenJson('{"limit": 5,}')}\n`],
      [['deploy', 'source.mjs', '--prop', 'limit'], 'error: --prop limit: write it as name=value\n'],
      [['update', 'dc_x', 'source.mjs', '--prop', '=5'], 'error: --prop =5: write it as name=value\n'],
      [['dev', 'source.mjs', '--prop', 'limit'], 'error: --prop limit: write it as name=value\n'],
    ] as const) {
      const refused = await tributary([...args]);
      expect({ args, code: refused.code, stderr: refused.stderr }).toEqual({ args, code: 2, stderr: said });
    }
    expect(await saved()).toBe(before);
  });

  it('dev exits 2 listing the missing props when it cannot ask, as deploy does, instead of waiting for a save', async () => {
    const sources = async () => (await api().get('/v1/users/me/sources')).body.page_info.total_count;
    const before = await sources();
    const missing = await tributary(['dev', 'source.mjs', '--prop', 'channel=general']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('missing required props');
    expect(missing.stderr).toContain('limit: integer');
    expect(missing.stderr).not.toContain('save it again');
    const wrong = await tributary(['dev', 'source.mjs', '--prop', 'limit=ten', '--prop', 'channel=general']);
    expect([wrong.code, wrong.stderr]).toEqual([2, expect.stringContaining('error: --prop limit=ten: limit is an integer')]);
    expect(await sources()).toBe(before);
  });

  it('sends an id as one path segment: a source id with ../ in it is a source not found, not another resource', async () => {
    const created = await api().post('/v1/workflows', {
      name: 'not to be deleted',
      steps: [{ name: 'a', component_code: 'export default defineComponent({ async run() { return 1; } });' }],
    });
    const workflowId: string = created.body.data.id;
    for (const args of [
      ['delete', `dc_x/../../workflows/${workflowId}`],
      ['describe', `dc_x/../../workflows/${workflowId}`],
      ['run', `dc_x/../../workflows/${workflowId}`],
      ['events', `dc_x/../../workflows/${workflowId}`],
    ]) {
      const refused = await tributary(args);
      expect({ args, code: refused.code, stderr: refused.stderr.split('\n')[0] }).toEqual({
        args,
        code: 3,
        stderr: `error: source "${args[1]}" not found (404 not_found)`,
      });
    }
    expect((await api().get(`/v1/workflows/${workflowId}`)).status).toBe(200);
  });

  it('refuses a component file that is not there, or a folder, naming it, before anything is sent (dev does not watch it)', async () => {
    const saved = async () => (await api().get('/v1/users/me/components')).body.page_info.total_count;
    const before = await saved();
    fs.mkdirSync(path.join(dir, 'a-folder'), { recursive: true });
    for (const [args, said] of [
      [['deploy', 'no-such.mjs'], 'error: no-such.mjs: no such file\n'],
      [['update', 'dc_x', 'no-such.mjs'], 'error: no-such.mjs: no such file\n'],
      [['dev', 'no-such.mjs'], 'error: no-such.mjs: no such file\n'],
      // Outside the working directory, as given: not ../../no-such.mjs.
      [['deploy', '/no-such.mjs'], 'error: /no-such.mjs: no such file\n'],
      [
        ['deploy', path.join(path.dirname(dir), 'elsewhere', 'no-such.mjs')],
        `error: ${path.join(path.dirname(dir), 'elsewhere', 'no-such.mjs')}: no such file\n`,
      ],
      [['deploy', 'a-folder'], `error: a-folder is a folder, not a component file: give the file, e.g. ${path.join('a-folder', 'index.mjs')}\n`],
    ] as const) {
      const refused = await tributary([...args]);
      expect({ args, code: refused.code, stderr: refused.stderr }).toEqual({ args, code: 2, stderr: said });
    }
    expect(await saved()).toBe(before);
  });

  it('never asks for a hidden prop (slack-send-message hides its bot settings until additionalProps() shows them)', () => {
    const props = [
      { name: 'text', type: 'string' },
      { name: 'username', type: 'string', hidden: true },
      { name: 'icon', type: 'string', hidden: false },
    ];
    expect(missingProps(props, {}).map((p) => p.name)).toEqual(['text', 'icon']);
  });

  it('reads an object prop given with --prop as JSON, and refuses what is not a JSON object before anything is sent', () => {
    const prop = { name: 'headers', type: 'object' };
    expect(typedValue(prop, '{"a": 1}')).toEqual({ a: 1 });
    for (const raw of ['[1', '[1]', 'text', 'null']) {
      expect(() => typedValue(prop, raw), raw).toThrow(new UsageError(`--prop headers=${raw}: headers is an object: give it as JSON, {"key": "value"}`));
    }
    // A prop of type any, or one the client does not know, still takes the text when it is not JSON.
    expect(typedValue({ name: 'x', type: 'any' }, '[1')).toBe('[1');
  });

  it('asks for missing props with --interactive, offering static options by number', async () => {
    const asked = await tributary(['deploy', 'source.mjs', '--interactive', '--json'], {}, '2\nmany\n7\n');
    expect(asked.code, asked.stderr).toBe(0);
    expect(asked.stderr).toContain('Channel (channel): string');
    expect(asked.stderr).toContain('  2) random');
    expect(asked.stderr).toContain('limit is an integer');
    expect(JSON.parse(asked.stdout).configured_props).toMatchObject({ channel: 'random', limit: 7 });

    // A prop whose choices come from its async options(): the first page, through the options API.
    fs.writeFileSync(
      path.join(dir, 'remote.mjs'),
      'export default { name: "remote", version: "0.0.1", props: { region: { type: "string", async options({ page }) { return [{ label: "Europe", value: "eu-" + page }, { label: "Asia", value: "ap-" + page }]; } } }, async run() {} };\n',
    );
    const remote = await tributary(['deploy', 'remote.mjs', '--interactive', '--json'], {}, '2\n');
    expect(remote.code, remote.stderr).toBe(0);
    expect(remote.stderr).toContain('  1) Europe\n  2) Asia');
    expect(JSON.parse(remote.stdout).configured_props).toEqual({ region: 'ap-0' });
    // Choices some of which options() gave unusable: the others are offered, and the note says what was left out.
    fs.writeFileSync(
      path.join(dir, 'partial.mjs'),
      'export default { name: "partial", version: "0.0.1", props: { region: { type: "string", async options() { return ["eu", null, "ap"]; } } }, async run() {} };\n',
    );
    const partial = await tributary(['deploy', 'partial.mjs', '--interactive', '--json'], {}, '2\n');
    expect(partial.code, partial.stderr).toBe(0);
    expect(partial.stderr).toContain(
      'note: 1 of the choices options() gave was left out: option 1 must be a string, a finite number, a boolean or { label, value }, not null\nregion: string\n  1) eu\n  2) ap\n',
    );
    expect(JSON.parse(partial.stdout).configured_props).toEqual({ region: 'ap' });
    const ended = await tributary(['deploy', 'remote.mjs', '--interactive'], {}, '');
    expect([ended.code, ended.stderr]).toEqual([2, expect.stringContaining('standard input ended before every question was answered')]);
  });

  it('asks for and types the props additionalProps() adds or unhides for the values given', async () => {
    fs.writeFileSync(
      path.join(dir, 'shaped.mjs'),
      [
        'export default {',
        '  name: "shaped", version: "0.0.1",',
        '  props: {',
        '    kind: { type: "string", options: ["plain", "counted"], reloadProps: true },',
        '    channel: { type: "string", hidden: true },',
        '  },',
        '  async additionalProps(previous) {',
        '    if (this.kind !== "counted") return {};',
        '    previous.channel.hidden = false;',
        '    return { count: { type: "integer", label: "Count" } };',
        '  },',
        '  async run() {},',
        '};',
        '',
      ].join('\n'),
    );
    // Nobody to ask: the props "counted" adds are listed as missing.
    const missing = await tributary(['deploy', 'shaped.mjs', '--prop', 'kind=counted']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('missing required props');
    expect(missing.stderr).toContain('  channel: string\n  Count (count): integer');
    // --prop values of added props are typed by them: count is the integer 3.
    const given = await tributary(['deploy', 'shaped.mjs', '--json', '--prop', 'kind=counted', '--prop', 'count=3', '--prop', 'channel=ops']);
    expect(given.code, given.stderr).toBe(0);
    expect(JSON.parse(given.stdout).configured_props).toEqual({ kind: 'counted', count: 3, channel: 'ops' });
    // Asked: the answer to kind brings the questions its added props need.
    const asked = await tributary(['deploy', 'shaped.mjs', '--interactive', '--json'], {}, '2\nops\n4\n');
    expect(asked.code, asked.stderr).toBe(0);
    expect(JSON.parse(asked.stdout).configured_props).toEqual({ kind: 'counted', channel: 'ops', count: 4 });
    const plain = await tributary(['deploy', 'shaped.mjs', '--json', '--prop', 'kind=plain']);
    expect(JSON.parse(plain.stdout).configured_props).toEqual({ kind: 'plain' });
  });

  it('reads a list page after page up to a bound, and knows how many it left out (list says so past 10,000)', async () => {
    const user = await server.createUser();
    const own = client(server.url, user.apiKey);
    const component = (await own.post('/v1/components', { component_code: 'module.exports = { name: "n", version: "1", async run() {} };' })).body.data;
    for (let i = 0; i < 105; i += 15) {
      const made = await Promise.all(
        Array.from({ length: Math.min(15, 105 - i) }, (_, j) => own.post('/v1/sources', { component_id: component.id, name: `n-${i + j}` })),
      );
      expect(made.every((res) => res.status === 200)).toBe(true);
    }
    const reader = new ApiClient({ url: server.url, key: user.apiKey });
    const bounded = await reader.all<{ id: string }>('/v1/users/me/sources', 100);
    expect([bounded.items.length, bounded.total]).toEqual([100, 105]);
    const whole = await reader.all<{ id: string }>('/v1/users/me/sources');
    expect([whole.items.length, whole.total, new Set(whole.items.map((s) => s.id)).size]).toEqual([105, 105, 105]);
  });

  it('lists auto-subscriptions as a table and as JSON lines, so that they can be seen and removed', async () => {
    // An account of its own: an auto-subscription would subscribe the sources other tests create.
    const own = (await server.createUser()).apiKey;
    const calls = client(server.url, own);
    const listener = (await calls.post('/v1/sources', { component_code: emitterSource() })).body.data.id;
    const as = { TRIBUTARY_KEY: own };
    const none = await tributary(['list', 'auto-subscriptions'], as);
    expect(none).toEqual({ code: 0, stdout: '', stderr: 'no auto-subscriptions\n' });
    const made: Array<{ id: string }> = [];
    for (const eventName of ['default', '$errors']) {
      const res = await calls.post(`/v1/auto_subscriptions?event_name=${eventName}&listener_id=${listener}`);
      expect(res.status).toBe(200);
      made.push(res.body.data);
    }
    const table = await tributary(['list', 'auto-subscriptions'], as);
    expect(table.code, table.stderr).toBe(0);
    const [header, ...rows] = table.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^ID {2,}LISTENER {2,}EVENTS {2,}CREATED$/);
    const created = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
    expect(rows.map((row) => row.split(/ {2,}/))).toEqual([
      [made[1]!.id, listener, '$errors', expect.stringMatching(created)],
      [made[0]!.id, listener, 'default', expect.stringMatching(created)],
    ]);
    // Aligned: each column starts where its header does.
    for (const row of rows) expect(row.indexOf(listener)).toBe(header!.indexOf('LISTENER'));
    const json = await tributary(['list', 'auto-subscriptions', '--json'], as);
    expect(
      json.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line)),
    ).toEqual((await calls.get('/v1/users/me/auto_subscriptions')).body.data);
    expect(await tributary(['list', 'subscriptions'], as)).toEqual({ code: 0, stdout: '', stderr: 'no subscriptions\n' });
    for (const eventName of ['default', '$errors']) {
      expect((await calls.delete(`/v1/auto_subscriptions?event_name=${eventName}&listener_id=${listener}`)).status).toBe(204);
    }
    expect(await tributary(['list', 'auto-subscriptions'], as)).toEqual({ code: 0, stdout: '', stderr: 'no auto-subscriptions\n' });

    // A list without pages (no page_info) of exactly 100, one full page's worth: read once, not followed to a cursor.
    for (let i = 0; i < 100; i++) expect((await calls.post(`/v1/auto_subscriptions?event_name=c${i}&listener_id=${listener}`)).status).toBe(200);
    const hundred = await tributary(['list', 'auto-subscriptions', '--json'], as);
    expect([hundred.code, hundred.stderr, hundred.stdout.trim().split('\n').length]).toEqual([0, '', 100]);
  });

  it('subscribes and unsubscribes: list shows it, the default stream under either spelling, the API refusals with their exit codes', async () => {
    // An account of its own: its subscriptions are the only ones list shows.
    const own = (await server.createUser()).apiKey;
    const calls = client(server.url, own);
    const emitter = (await calls.post('/v1/sources', { component_code: emitterSource() })).body.data.id;
    const listener = (await calls.post('/v1/sources', { component_code: emitterSource() })).body.data.id;
    const as = { TRIBUTARY_KEY: own };
    const listed = async () => (await calls.get('/v1/users/me/subscriptions')).body.data;

    const made = await tributary(['subscribe', emitter, listener], as);
    expect(made.code, made.stderr).toBe(0);
    const [first] = await listed();
    expect(first).toEqual({ id: expect.stringMatching(/^sub_/), emitter_id: emitter, listener_id: listener, event_name: '' });
    expect([made.stdout, made.stderr]).toEqual([`subscribed ${listener} to the default stream of ${emitter} (${first.id})\n`, '']);
    const table = await tributary(['list', 'subscriptions'], as);
    expect(table.stdout.trimEnd().split('\n')[1]!.split(/ {2,}/)).toEqual([first.id, emitter, listener, 'default']);

    // --json: the API's answer; a glob emitter and a $ stream go through the query intact.
    const json = await tributary(['subscribe', 'dc_*', listener, '--event', '$errors', '--json'], as);
    expect(json.code, json.stderr).toBe(0);
    const glob = JSON.parse(json.stdout);
    expect(glob).toEqual({ id: expect.stringMatching(/^sub_/), emitter_id: 'dc_*', listener_id: listener, event_name: '$errors' });
    expect(await listed()).toEqual(expect.arrayContaining([first, glob]));

    // "default" as the table shows it removes the one stored as "", and the reverse.
    const removed = await tributary(['unsubscribe', emitter, listener, '--event', 'default'], as);
    expect(removed).toEqual({ code: 0, stdout: `unsubscribed ${listener} from the default stream of ${emitter}\n`, stderr: '' });
    expect(await listed()).toEqual([glob]);
    expect((await tributary(['subscribe', emitter, listener, '--event', 'default'], as)).code).toBe(0);
    const removedJson = await tributary(['unsubscribe', emitter, listener, '--json'], as);
    // The server removes the one stream under either name: what was asked for is what is said.
    expect([removedJson.code, JSON.parse(removedJson.stdout)]).toEqual([0, { emitter_id: emitter, listener_id: listener, event_name: '' }]);
    const globRemoved = await tributary(['unsubscribe', 'dc_*', listener, '--event', '$errors'], as);
    expect(globRemoved).toEqual({ code: 0, stdout: `unsubscribed ${listener} from stream "$errors" of dc_*\n`, stderr: '' });
    expect(await listed()).toEqual([]);

    // The API's refusals, as every client command shows them.
    const ghost = 'wh_00000000000000000000000000';
    const missing = await tributary(['subscribe', emitter, ghost], as);
    expect([missing.code, missing.stdout, missing.stderr.split('\n')[0]]).toEqual([3, '', `error: listener "${ghost}" not found (404 not_found)`]);
    expect(missing.stderr).toContain('hint: see what the account has with tributary list');
    const globListener = await tributary(['subscribe', emitter, 'dc_*'], as);
    expect([globListener.code, globListener.stdout, globListener.stderr]).toEqual([
      2,
      '',
      'error: listener_id must be one source (dc_), workflow (p_) or webhook (wh_), not the glob "dc_*" (400 invalid_request)\n',
    ]);
    const gone = await tributary(['unsubscribe', emitter, listener, '--event', 'orders'], as);
    expect([gone.code, gone.stderr.split('\n')[0]]).toEqual([
      3,
      `error: subscription of "${listener}" to "${emitter}" with event_name "orders" not found (404 not_found)`,
    ]);
    // Neither spelling of the default stream: the refusal names what was asked for.
    const goneDefault = await tributary(['unsubscribe', emitter, listener], as);
    expect([goneDefault.code, goneDefault.stderr.split('\n')[0]]).toEqual([
      3,
      `error: subscription of "${listener}" to "${emitter}" with event_name "" not found (404 not_found)`,
    ]);
    expect((await tributary(['subscribe', emitter], as)).code).toBe(2);
    expect(await listed()).toEqual([]);
  });

  it('auto-subscribes a listener to the sources created afterwards, and auto-unsubscribes it', async () => {
    const own = (await server.createUser()).apiKey;
    const calls = client(server.url, own);
    const listener = (await calls.post('/v1/sources', { component_code: emitterSource() })).body.data.id;
    const as = { TRIBUTARY_KEY: own };

    const made = await tributary(['auto-subscribe', listener, '--event', 'orders'], as);
    expect(made.code, made.stderr).toBe(0);
    const [auto] = (await calls.get('/v1/users/me/auto_subscriptions')).body.data;
    expect(auto).toEqual({ id: expect.stringMatching(/^sub_/), listener_id: listener, event_name: 'orders', created_at: expect.any(Number) });
    expect(made.stdout).toBe(`subscribed ${listener} to stream "orders" of every source and workflow created from now on (${auto.id})\n`);
    const json = await tributary(['auto-subscribe', listener, '--json'], as);
    expect(JSON.parse(json.stdout)).toEqual({ id: expect.stringMatching(/^sub_/), listener_id: listener, event_name: '' });
    const table = await tributary(['list', 'auto-subscriptions'], as);
    expect(
      table.stdout
        .trimEnd()
        .split('\n')
        .slice(1)
        .map((row) => row.split(/ {2,}/).slice(0, 3)),
    ).toEqual([
      [JSON.parse(json.stdout).id, listener, 'default'],
      [auto.id, listener, 'orders'],
    ]);

    // What it is for: a source created now is subscribed.
    const later = (await calls.post('/v1/sources', { component_code: emitterSource() })).body.data.id;
    expect(
      (await calls.get('/v1/users/me/subscriptions')).body.data.map((s: { emitter_id: string; event_name: string }) => [s.emitter_id, s.event_name]),
    ).toEqual(
      expect.arrayContaining([
        [later, 'orders'],
        [later, ''],
      ]),
    );

    const removed = await tributary(['auto-unsubscribe', listener, '--event', 'orders'], as);
    expect(removed).toEqual({ code: 0, stdout: `unsubscribed ${listener} from stream "orders" of sources and workflows created from now on\n`, stderr: '' });
    expect((await tributary(['auto-unsubscribe', listener, '--event', 'default', '--json'], as)).stdout).toBe(
      `${JSON.stringify({ listener_id: listener, event_name: 'default' })}\n`,
    );
    expect(await tributary(['list', 'auto-subscriptions'], as)).toEqual({ code: 0, stdout: '', stderr: 'no auto-subscriptions\n' });
    const again = await tributary(['auto-unsubscribe', listener, '--event', 'orders'], as);
    expect([again.code, again.stderr.split('\n')[0]]).toEqual([
      3,
      `error: auto-subscription of "${listener}" with event_name "orders" not found (404 not_found)`,
    ]);
    const ghost = await tributary(['auto-subscribe', 'p_00000000000000000000000000'], as);
    expect([ghost.code, ghost.stderr.split('\n')[0]]).toEqual([3, 'error: listener "p_00000000000000000000000000" not found (404 not_found)']);
  });

  it("a 404's hint names every kind list takes, and list takes every kind the hint names", async () => {
    const ghost = await tributary(['describe', 'dc_00000000000000000000000000']);
    expect(ghost.code).toBe(3);
    const hint = /^hint: see what the account has with tributary list <([^>]+)>$/m.exec(ghost.stderr);
    expect(hint, ghost.stderr).not.toBeNull();
    const named = hint![1]!.split('|');
    expect(named).toEqual(['sources', 'workflows', 'webhooks', 'subscriptions', 'auto-subscriptions', 'components', 'accounts', 'data-stores']);
    // The kinds list itself accepts, in its own words.
    const refused = await tributary(['list', 'gadgets']);
    expect(refused.stderr).toBe(`error: unknown kind "gadgets": one of ${named.join(', ')}\n`);
    for (const kind of named) {
      const listed = await tributary(['list', kind, '--json']);
      expect([kind, listed.code, listed.stderr]).toEqual([kind, 0, expect.not.stringContaining('error')]);
    }
    const help = (await tributary(['list', '--help'])).stdout.replace(/\s+/g, ' ');
    expect(help).toContain(`list the account's sources (default), ${named.slice(1, -1).join(', ')} or data-stores`);
    // describe takes a data store's id (ds_…) as it takes the others', and its help says so.
    const describeHelp = (await tributary(['describe', '--help'])).stdout.replace(/\s+/g, ' ');
    expect(describeHelp).toContain('one source, workflow, webhook, component, connected account or data store, in full');
  });

  it('updates a source in place, lists, describes, runs, shows events and logs, and deletes', async () => {
    const deployed = await tributary(['deploy', 'source.mjs', '--json', '--prop', 'limit=2', '--prop', 'channel=random']);
    const source = JSON.parse(deployed.stdout);
    fs.writeFileSync(path.join(dir, 'format.mjs'), 'export const format = (body) => ({ got: body, shape: "v2" });\n');
    const updated = await tributary(['update', source.id, 'source.mjs']);
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.stdout).toContain(`updated ${source.id} "${source.name}"`);
    expect(updated.stdout).toContain(`endpoint: ${source.configured_props.http.endpoint_url}`);

    const table = await tributary(['list']);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+TYPE\s+ACTIVE\s+UPDATED$/);
    expect(table.stdout).toMatch(new RegExp(`${source.id}\\s+${source.name}\\s+http\\s+yes`));
    const lines = (await tributary(['list', 'sources', '--json'])).stdout.trim().split('\n');
    expect(lines.map((line) => JSON.parse(line).id)).toContain(source.id);
    // The API's component has no `key`: a KEY column would be empty on every row.
    const components = await tributary(['list', 'components']);
    expect(components.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+VERSION\s+CREATED$/);
    expect(components.stdout).toContain('cli source');
    const badKind = await tributary(['list', 'gadgets']);
    expect([badKind.code, badKind.stderr]).toEqual([2, expect.stringContaining('unknown kind "gadgets"')]);

    const described = await tributary(['describe', source.id]);
    expect(described.stdout).toContain(`id: ${source.id}`);
    expect(described.stdout).toContain('channel: random');
    const ghost = await tributary(['describe', 'dc_00000000000000000000000000']);
    expect(ghost.code).toBe(3);
    expect(ghost.stderr).toContain('hint: see what the account has');

    // Nothing to show is said on standard error; standard output stays empty for scripts.
    const none = await tributary(['events', source.id, '--json']);
    expect([none.code, none.stdout, none.stderr]).toEqual([0, '', `${source.id} has no events yet\n`]);
    expect((await tributary(['logs', source.id])).stderr).toBe(`${source.id} has no $logs lines yet\n`);

    const ran = await tributary(['run', source.id, '--event', '{"body":{"n":7}}']);
    expect(ran.code, ran.stderr).toBe(0);
    await waitFor(
      () => tributary(['events', source.id, '-n', '5', '--json']),
      (r) => r.stdout.trim().split('\n').filter(Boolean).length === 1,
    );
    const shown = JSON.parse((await tributary(['events', source.id, '-n', '1', '--json'])).stdout);
    expect(shown.event).toEqual({ got: { n: 7 }, shape: 'v2', channel: 'random', limit: 2 });
    expect((await tributary(['events', source.id])).stdout).toMatch(/Z {2}event 7 {2}\{"got":\{"n":7\},"shape":"v2"/);
    expect((await tributary(['logs', source.id])).stdout).toMatch(/Z {2}log +got random 2/);

    await tributary(['run', source.id, '--event', '{"body":{"fail":true}}']);
    const errors = await waitFor(
      () => tributary(['events', source.id, '--errors']),
      (r) => r.stdout.includes('asked to fail'),
    );
    expect(errors.stdout).toMatch(/ERROR {2}Error: asked to fail/);

    const deleted = await tributary(['delete', source.id]);
    expect(deleted.stdout).toBe(`deleted ${source.id}\n`);
    expect((await tributary(['describe', source.id])).code).toBe(3);
    expect((await tributary(['run', 'wh_x'])).code).toBe(2);
    // Asked of the sources, these answered 'source "wh_x" not found' and exit code 3.
    for (const [command, id] of [
      ['events', 'wh_x'],
      ['logs', 'sc_x'],
    ]) {
      const refused = await tributary([command!, id!]);
      expect([refused.code, refused.stderr]).toEqual([2, `error: ${command} takes a source (dc_…) or workflow (p_…) id, not "${id}"\n`]);
    }
  });

  it('events -f shows recent events, then a live one, and stops cleanly on Ctrl-C', async () => {
    const source = JSON.parse((await tributary(['deploy', 'source.mjs', '--json', '--prop', 'limit=3', '--prop', 'channel=general'])).stdout);
    const endpoint = source.configured_props.http.endpoint_url;
    await request('POST', endpoint, { body: { n: 'before' } });
    await waitFor(
      () => api().get(`/v1/sources/${source.id}/event_summaries`),
      (r) => r.body.data.length === 1,
    );
    const following = start(['events', source.id, '-f']);
    await following.waitForOutput(/event before/);
    await following.waitForOutput(/following dc_/, 'stderr');
    await request('POST', endpoint, { body: { n: 'live' } });
    await following.waitForOutput(/event live/);
    following.child.kill('SIGINT');
    expect(await following.exit).toBe(0);
    // Each event once: the recent one is not repeated by the stream's replay.
    expect(following.stdout().match(/event before/g)).toHaveLength(1);

    const logs = start(['logs', source.id, '-f', '-n', '0', '--json']);
    await logs.waitForOutput(/following dc_/, 'stderr');
    await request('POST', endpoint, { body: { n: 'logged' } });
    const line = await logs.waitForOutput(/^\{.*\}$/m);
    expect(JSON.parse(line[0]).event).toMatchObject({ k: 'log', msg: 'got general 3' });
    logs.child.kill('SIGINT');
    expect(await logs.exit).toBe(0);

    // A source deleted while followed ends the command with exit 3 and says so.
    const orphaned = start(['events', source.id, '-f']);
    await orphaned.waitForOutput(/following dc_/, 'stderr');
    expect((await api().delete(`/v1/sources/${source.id}`)).status).toBe(204);
    expect(await orphaned.exit).toBe(3);
    expect(orphaned.stderr()).toContain(
      `the live stream of ${source.id} answered 404: no source ${source.id} (deleted while followed, or never this account's)`,
    );
  });

  it('dev deploys, follows, updates in place on a save, reports a broken save with file and line, and deletes on exit', async () => {
    const file = path.join(dir, 'dev-source.mjs');
    const version = (tag: string) =>
      `export default { name: "dev source", version: "0.0.1", props: { http: "$.interface.http" },\n  async run(event) { console.log("seen ${tag}"); this.$emit({ tag: "${tag}", body: event.body }); } };\n`;
    fs.writeFileSync(file, version('one'));
    const dev = start(['dev', 'dev-source.mjs', '--delete-on-exit']);
    // The result on standard output, as deploy prints it; the progress on standard error.
    const [, id, endpoint] = await dev.waitForOutput(/^deployed (dc_\w+) "dev-source-dev"; endpoint: (\S+)$/m);
    expect(dev.stderr()).not.toContain('deployed');
    // The progress line names the source being made, not the component it runs.
    expect(dev.stderr()).toMatch(/^deploying dev-source-dev …$/m);
    await dev.waitForOutput(/following dc_\w+: events, logs and errors/, 'stderr');
    await request('POST', endpoint!, { body: { n: 1 } });
    await dev.waitForOutput(/\{"tag":"one","body":\{"n":1\}\}/);
    await dev.waitForOutput(/log +seen one/);

    fs.writeFileSync(file, version('two'));
    await dev.waitForOutput(new RegExp(`^updated ${id} in place \\(same id and endpoint\\)$`, 'm'));
    expect(dev.stderr()).not.toContain(`updated ${id}`);
    await request('POST', endpoint!, { body: { n: 2 } });
    await dev.waitForOutput(/\{"tag":"two","body":\{"n":2\}\}/);

    fs.writeFileSync(file, 'export default { name: "dev source", run( {\n');
    await dev.waitForOutput(/error: dev-source\.mjs:\d+:\d+: /, 'stderr');
    const sources = await api().get('/v1/users/me/sources?limit=100');
    expect(sources.body.data.filter((s: { id: string }) => s.id === id)).toHaveLength(1);

    dev.child.kill('SIGINT');
    expect(await dev.exit).toBe(0);
    expect(dev.stderr()).toContain(`deleted ${id}`);
    expect((await api().get(`/v1/sources/${id}`)).status).toBe(404);
  });

  it('dev ends by itself with exit 3 when its source is deleted elsewhere, instead of watching for saves that cannot land', async () => {
    fs.writeFileSync(
      path.join(dir, 'gone-source.mjs'),
      'export default { name: "gone", version: "0.0.1", props: { http: "$.interface.http" }, async run() {} };\n',
    );
    const dev = start(['dev', 'gone-source.mjs', '--delete-on-exit', '--json']);
    // With --json standard output holds JSON lines only: the source made is said with the progress.
    const [, id] = await dev.waitForOutput(/deployed (dc_\w+) "gone-source-dev"/, 'stderr');
    await dev.waitForOutput(/following dc_\w+: events, logs and errors/, 'stderr');
    expect((await api().delete(`/v1/sources/${id}`)).status).toBe(204);
    expect(await dev.exit, dev.stderr()).toBe(3);
    expect(dev.stderr()).toContain(`error: the live stream of ${id} answered 404: no source ${id} (deleted while followed, or never this account's)`);
    expect(dev.stderr()).not.toContain('stopped following');
    expect(dev.stdout()).toBe('');
  });

  it('prints each detail of a refusal as a line naming its field or prop, not as raw JSON', async () => {
    fs.writeFileSync(path.join(dir, 'noop.mjs'), 'export default defineComponent({ async run() {} });\n');
    fs.writeFileSync(
      path.join(dir, 'bad-timer.yaml'),
      'name: bad timer\ntrigger:\n  type: timer\n  interval_seconds: 0\nsteps:\n  - name: a\n    path: ./noop.mjs\n',
    );
    const refused = await tributary(['deploy', '--workflow', 'bad-timer.yaml']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      'error: invalid body: trigger.interval_seconds must be >= 1 (400 invalid_request)\n  trigger.interval_seconds: must be >= 1\n',
    );
    expect(refused.stderr).not.toContain('{"in"');

    // A component's refusal has a reason and no message: said as its fields, not as {"reason":"load_failed"}.
    fs.writeFileSync(path.join(dir, 'throws.mjs'), 'throw new Error("boom at load");\nexport default { name: "x", version: "1", async run() {} };\n');
    const threw = await tributary(['deploy', 'throws.mjs']);
    expect(threw.code).toBe(2);
    expect(threw.stderr).toContain('(422 component_invalid)\n  reason: load_failed\n');
  });

  it('prints the stack and console lines of a hook that refused a deploy, one a line, not as JSON', async () => {
    fs.writeFileSync(
      path.join(dir, 'hook-fails.mjs'),
      [
        'export default {',
        '  name: "hook fails", version: "0.0.1",',
        '  hooks: { async activate() { console.log("registering"); console.warn("no token"); throw new Error("cannot register"); } },',
        '  async run() {},',
        '};',
        '',
      ].join('\n'),
    );
    const refused = await tributary(['deploy', 'hook-fails.mjs']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /\nerror: activate\(\) hook failed: Error: cannot register \(422 hook_failed\)\n {2}Error: cannot register\n( {6}at .+\n)+ {2}activate\(\) logged:\n {4}log {4}registering\n {4}warn {3}no token\n$/,
    );
  });

  it("shows a workflow's events, errors and its runs' step logs", async () => {
    const step = path.join(dir, 'step.mjs');
    fs.writeFileSync(
      step,
      'export default defineComponent({ async run({ steps, $ }) { console.log("step ran", steps.trigger.event.n); return steps.trigger.event.n; } });\n',
    );
    fs.writeFileSync(path.join(dir, 'wf.yaml'), 'name: cli wf\nsteps:\n  - name: only\n    path: ./step.mjs\n');
    const deployed = await tributary(['deploy', '--workflow', 'wf.yaml']);
    expect(deployed.code, deployed.stderr).toBe(0);
    const id = /created workflow (p_\w+)/.exec(deployed.stdout)![1]!;
    await tributary(['run', id, '--event', '{"n":4}']);
    const logs = await waitFor(
      () => tributary(['logs', id]),
      (r) => r.stdout.includes('succeeded'),
    );
    expect(logs.stdout).toMatch(/Z {2}wr_\w+\/only {2}log +step ran 4\n.*Z {2}wr_\w+ {2}succeeded \(1 step, \d+ ms\)/);
    expect((await tributary(['list', 'workflows'])).stdout).toMatch(new RegExp(`${id}\\s+cli wf\\s+none\\s+1\\s+yes`));
  });
});

describe('tributary events -f across a server restart', () => {
  it('says the connection was lost, reconnects by itself and shows what came meanwhile, resuming after the last event', async () => {
    const storage = await freshStorage('sqlite');
    let server = await serve(storage.args);
    const port = new URL(server.url).port;
    const key = await createAccount(storage.args, 'follower');
    const api = client(server.url, key);
    const deployed = await api.post('/v1/sources', {
      component_code:
        'export default { name: "echo", version: "0.0.1", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body, { summary: "n=" + e.body.n }); } };',
    });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    const { id } = deployed.body.data;
    const endpoint = deployed.body.data.configured_props.http.endpoint_url;
    await request('POST', endpoint, { body: { n: 1 } });
    await waitFor(
      () => api.get(`/v1/sources/${id}/event_summaries`),
      (r) => r.body.data.length === 1,
    );

    const child = spawn(process.execPath, [BIN, 'events', id, '-f', '-n', '1'], {
      env: { PATH: process.env.PATH ?? '', HOME: tempDir('follower-home-'), TRIBUTARY_URL: server.url, TRIBUTARY_KEY: key },
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const seen = (what: () => string, text: string) =>
      waitFor(
        async () => what(),
        (out) => out.includes(text),
        { what: `"${text}"; stdout ${stdout}; stderr ${stderr}`, timeoutMs: 30_000 },
      );
    try {
      await seen(() => stderr, 'following dc_');
      await seen(() => stdout, 'n=1');
      await killHard(server.child);
      await seen(() => stderr, 'connection lost');
      server = await serve([...storage.args, '--port', port]);
      // Posted as soon as the server is back, perhaps before the client reconnects: Last-Event-ID replays it then.
      await request('POST', endpoint, { body: { n: 2 } });
      await seen(() => stdout, 'n=2');
      await seen(() => stderr, 'reconnected');
      expect(stdout.match(/n=1/g)).toHaveLength(1);
    } finally {
      child.kill('SIGINT');
      expect(await exit).toBe(0);
      if (server.child.exitCode === null && server.child.signalCode === null) await killHard(server.child);
      await storage.cleanup();
    }
  });
});

describe.skipIf(!DIALECTS.includes('postgres'))('tributary against a server that lost its database', () => {
  it('says 503 unavailable with its hint, and exits 5', async () => {
    const database = await createTestDatabase();
    const { proxy, url } = await proxyInFrontOf(database.url);
    const server = await startTestServer('postgres', { databaseUrl: url });
    const home = tempDir('unavailable-home-');
    try {
      const key = (await server.createUser()).apiKey;
      const env = { PATH: process.env.PATH ?? '', HOME: home, TRIBUTARY_URL: server.url, TRIBUTARY_KEY: key };
      expect((await runCli(['list', 'workflows'], { env, cwd: home })).code).toBe(0);
      proxy.cut();
      const refused = await waitFor(
        () => runCli(['list', 'workflows'], { env, cwd: home }),
        (r) => r.stderr.includes('(503 unavailable)'),
        { what: 'a 503 from the server', timeoutMs: 60_000 },
      );
      expect(refused.code).toBe(5);
      // The hint was keyed by a code the server never sends (service_unavailable), so a 503 came without one.
      expect(refused.stderr).toContain('hint: the server is stopping or cannot reach its database right now: try again shortly');
    } finally {
      proxy.restore();
      await server.destroy();
      await proxy.close();
      await database.drop();
    }
  });
});
