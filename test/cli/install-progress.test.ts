// The client saying the server's npm installs as they happen: `deploy`, `deploy --workflow` and `dev` print a line per
// install step from the progress routes, a package already installed says so, a failed install exits 2 with the
// server's error, and an older server without the routes (404) gets the plain save. npm's registry is real.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { BundleError, bundleFile } from '../../src/client/bundle.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../helpers/client.js';
import { runCli, startCli } from '../helpers/cli.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/** `tributary` prints times; a line's pattern with them left open. */
const secs = '\\d+\\.\\d s';
const ms = '\\d+ ms';
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Stands in front of the server as an older Tributary would: it knows no progress route, so it answers them 404 as
 * any unknown route (the registered body), and passes everything else to the real server. It notes what it was asked.
 */
async function olderServer(upstream: string): Promise<{ url: string; asked: string[]; close: () => Promise<void> }> {
  const asked: string[] = [];
  const proxy = http.createServer((req, res) => {
    asked.push(`${req.method} ${req.url}`);
    if (/\/stream\/?$/.test(req.url!.split('?')[0]!)) {
      req.resume();
      res.writeHead(404, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify({ error: `route ${req.method} ${req.url} not found`, code: 'not_found' }));
      return;
    }
    const forwarded = http.request(new URL(req.url!, upstream), { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(res);
    });
    req.pipe(forwarded);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const { port } = proxy.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    asked,
    close: () => new Promise((resolve) => proxy.close(() => resolve())),
  };
}

describe('tributary shows npm installs as the server takes them', () => {
  let server: TestServer;
  let key: string;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    key = (await server.createUser()).apiKey;
    dir = tempDir('tributary-install-progress-');
    env = { PATH: process.env.PATH ?? '', HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'config'), TRIBUTARY_URL: server.url, TRIBUTARY_KEY: key };
    fs.writeFileSync(path.join(dir, 'shape.mjs'), 'export const shape = (odd) => ({ odd });\n');
    fs.writeFileSync(
      path.join(dir, 'odd.mjs'),
      'import isOdd from "is-odd@3.0.1";\nimport { shape } from "./shape.mjs";\nexport default { name: "odd", version: "0.1.0", props: { http: "$.interface.http" }, async run(e) { this.$emit(shape(isOdd(e.body.n))); } };\n',
    );
  });
  afterAll(async () => {
    await server?.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const tributary = (args: string[], extra: Record<string, string> = {}) => runCli(args, { env: { ...env, ...extra }, cwd: dir });
  const saving = 'saving the component \\(the server installs is-odd@3\\.0\\.1\\)';

  it('deploy prints each install step, then says the package is already installed on the next deploy', async () => {
    const first = await tributary(['deploy', 'odd.mjs']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^deployed dc_\w+ "odd"\nendpoint: /);
    expect(first.stderr).toMatch(
      new RegExp(
        `^${saving} …\n  installing is-odd@3\\.0\\.1 \\(1/1\\)… ${secs}\n  installed is-odd@3\\.0\\.1 \\(1/1\\) in ${secs}\n${saving}: done in ${ms}\ndeploying odd …$`,
        'm',
      ),
    );

    const second = await tributary(['deploy', 'odd.mjs', '--json']);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toMatch(new RegExp(`^${saving} …\n  is-odd@3\\.0\\.1 \\(1/1\\) is already installed\n${saving}: done in ${ms}$`, 'm'));
    expect(second.stderr).not.toContain('installing');
    // The source runs with the installed package.
    const source = JSON.parse(second.stdout);
    const ran = await client(server.url, key).post(`/v1/sources/${source.id}/run`, { body: { n: 3 } });
    expect(ran.status).toBe(202);
  });

  it('does not name @pipedream/platform among the packages the server installs: the server has its own copy', async () => {
    const file = path.join(dir, 'platform-only.mjs');
    fs.writeFileSync(
      file,
      'import { axios, ConfigurationError } from "@pipedream/platform";\nimport isOdd from "is-odd@3.0.1";\nexport default { name: "p", version: "0.1.0", async run() { this.$emit({ a: typeof axios, c: typeof ConfigurationError, o: isOdd(1) }); } };\n',
    );
    expect((await bundleFile(file)).packages).toEqual(['is-odd@3.0.1']);
  });

  it('refuses a file that require()s npm packages and awaits at the top level, saying why and where', async () => {
    const file = path.join(dir, 'tla-cjs.js');
    fs.writeFileSync(file, 'const axios = require("axios");\nawait Promise.resolve();\nmodule.exports = { name: "tla", version: "0.1.0", async run() {} };\n');
    const refused = await bundleFile(file).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(BundleError);
    const lines = (refused as BundleError).lines;
    expect(lines[0]).toMatch(/tla-cjs\.js:2:\d+: Top-level await is currently not supported with the "cjs" output format/);
    expect(lines.at(-1)).toMatch(
      /tla-cjs\.js: it require\(\)s npm packages, so it is bundled as CommonJS, which cannot hold this; import the packages instead$/,
    );
  });

  it('deploys a CommonJS component whose relative and npm requires are bundled: the server installs the packages it requires', async () => {
    // The shape of the reference registry's older sources: `require` of the app file beside it and of npm packages.
    fs.writeFileSync(
      path.join(dir, 'odd.app.js'),
      'const isOdd = require("is-odd@3.0.1");\nmodule.exports = { type: "app", app: "odd", methods: { odd: (n) => isOdd(n) } };\n',
    );
    fs.writeFileSync(
      path.join(dir, 'odd-cjs.js'),
      [
        'const odd = require("./odd.app.js");',
        'const crypto = require("crypto");',
        'module.exports = {',
        '  name: "odd cjs", version: "0.1.0", props: { odd, http: "$.interface.http" },',
        '  async run(e) { this.$emit({ odd: this.odd.odd(e.body.n), hash: crypto.createHash("md5").update("x").digest("hex").length }); },',
        '};',
        '',
      ].join('\n'),
    );
    const deployed = await tributary(['deploy', 'odd-cjs.js', '--json']);
    expect(deployed.code, deployed.stderr).toBe(0);
    // The package it requires, and not the built-in crypto, is what the server installs.
    expect(deployed.stderr).toMatch(new RegExp(`^${saving} …$`, 'm'));
    const source = JSON.parse(deployed.stdout);
    const api = client(server.url, key);
    expect((await api.post(`/v1/sources/${source.id}/run`, { body: { n: 3 } })).status).toBe(202);
    const events = await waitFor(
      () => api.get(`/v1/sources/${source.id}/event_summaries?expand=event`),
      (r) => r.body.data.length === 1,
    );
    expect(events.body.data[0].event).toEqual({ odd: true, hash: 32 });
  });

  it('a failed install exits 2 with the steps taken, then the error the server gave and its details', async () => {
    const missing = 'tributary-no-such-package-a1b2c3';
    fs.writeFileSync(
      path.join(dir, 'missing.mjs'),
      `import x from "${missing}";\nexport default { name: "missing", version: "0.1.0", async run() { x(); } };\n`,
    );
    const failed = await tributary(['deploy', 'missing.mjs']);
    expect(failed.code).toBe(2);
    expect(failed.stdout).toBe('');
    expect(failed.stderr).toMatch(new RegExp(`^  resolving ${literal(missing)}@latest \\(1/1\\)… ${secs}$`, 'm'));
    expect(failed.stderr).toMatch(new RegExp(`^error: could not install npm package "${literal(missing)}": .+ \\(422 component_invalid\\)$`, 'm'));
    expect(failed.stderr).toContain(`  reason: package_install_failed, import: ${missing}\n`);
  });

  it("deploy --workflow prints the installs of each step's code, naming the step", async () => {
    fs.writeFileSync(
      path.join(dir, 'even.mjs'),
      'import isEven from "is-even@1.0.0";\nexport default defineComponent({ async run({ steps }) { return isEven(steps.trigger.event.n); } });\n',
    );
    fs.writeFileSync(path.join(dir, 'even.yaml'), 'name: even\nsteps:\n  - name: check\n    path: ./even.mjs\n');
    const created = await tributary(['deploy', '--workflow', 'even.yaml']);
    expect(created.code, created.stderr).toBe(0);
    const creating = 'creating the workflow \\(1 step\\)';
    expect(created.stderr).toMatch(
      new RegExp(
        `^${creating} …\n  step "check": installing is-even@1\\.0\\.0 \\(1/1\\)… ${secs}\n  step "check": installed is-even@1\\.0\\.0 \\(1/1\\) in ${secs}\n${creating}: done in ${ms}$`,
        'm',
      ),
    );
    const id = /created workflow (p_\w+) "even"/.exec(created.stdout)![1]!;

    const updated = await tributary(['deploy', '--workflow', 'even.yaml']);
    expect(updated.code, updated.stderr).toBe(0);
    const updating = `updating ${id} \\(1 step\\)`;
    expect(updated.stderr).toMatch(
      new RegExp(`^${updating} …\n  step "check": is-even@1\\.0\\.0 \\(1/1\\) is already installed\n${updating}: done in ${ms}$`, 'm'),
    );
  });

  it('dev prints the installs of the first deploy and of each save', async () => {
    const file = path.join(dir, 'dev-odd.mjs');
    const code = (imports: string, emitted: string) =>
      `${imports}export default { name: "dev odd", version: "0.1.0", props: { http: "$.interface.http" }, async run(e) { this.$emit(${emitted}); } };\n`;
    fs.writeFileSync(file, code('import isOdd from "is-odd@3.0.1";\n', 'isOdd(e.body.n)'));
    const dev = startCli(['dev', 'dev-odd.mjs', '--delete-on-exit'], { env, cwd: dir });
    try {
      await dev.waitForOutput(/^ {2}is-odd@3\.0\.1 \(1\/1\) is already installed\n/m, 'stderr');
      const [, id] = await dev.waitForOutput(/deployed (dc_\w+) "dev-odd-dev"/);
      await dev.waitForOutput(/following dc_\w+: events, logs and errors/, 'stderr');

      fs.writeFileSync(file, code('import isOdd from "is-odd@3.0.1";\nimport isNumber from "is-number@7.0.0";\n', '[isOdd(e.body.n), isNumber(e.body.n)]'));
      await dev.waitForOutput(new RegExp(`updated ${id} in place`));
      const saved = dev.stderr().slice(dev.stderr().indexOf('change seen'));
      expect(saved).toMatch(
        new RegExp(
          `^ {2}is-odd@3\\.0\\.1 \\(1/2\\) is already installed\n {2}installing is-number@7\\.0\\.0 \\(2/2\\)… ${secs}\n {2}installed is-number@7\\.0\\.0 \\(2/2\\) in ${secs}\n`,
          'm',
        ),
      );
    } finally {
      dev.child.kill('SIGINT');
    }
    expect(await dev.exit).toBe(0);
    expect(dev.stderr()).toMatch(/deleted dc_\w+/);
  });

  it('an older server without the progress routes gets the plain save, and the client says it cannot show installs', async () => {
    const older = await olderServer(server.url);
    try {
      const deployed = await tributary(['deploy', 'odd.mjs', '--url', older.url]);
      expect(deployed.code, deployed.stderr).toBe(0);
      expect(deployed.stderr).toMatch(
        new RegExp(`^${saving} …\n  this server does not report install progress; a first install may take a minute\n${saving}: done in ${ms}$`, 'm'),
      );
      expect(deployed.stderr).not.toContain('already installed');
      expect(older.asked.filter((line) => line.startsWith('POST'))).toEqual([
        'POST /v1/components/stream',
        'POST /v1/components',
        expect.stringMatching(/^POST \/v1\/components\/sc_\w+\/props\/reload$/),
        'POST /v1/sources',
      ]);

      const workflow = await tributary(['deploy', '--workflow', 'even.yaml', '--url', older.url]);
      expect(workflow.code, workflow.stderr).toBe(0);
      expect(workflow.stderr).toContain('  this server does not report install progress; it installs the npm imports of steps');
      expect(older.asked.filter((line) => line.startsWith('PUT'))).toEqual([
        expect.stringMatching(/^PUT \/v1\/workflows\/p_\w+\/stream$/),
        expect.stringMatching(/^PUT \/v1\/workflows\/p_\w+$/),
      ]);
    } finally {
      await older.close();
    }
  });
});
