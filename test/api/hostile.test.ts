// A hostile tenant on an ordinary account of a default server: every attack fails, a victim account's source in the
// same server keeps working, and the server stays up. One test per attack, each through the real API and endpoints.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import dgram from 'node:dgram';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, request } from '../helpers/client.js';
import { DIALECTS, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

type Api = ReturnType<typeof client>;

/** A package.json: its name and version, and the dependency fields an author may write. */
type Manifest = { name: string; version: string } & Record<string, unknown>;

/**
 * An npm registry on a local port that serves one package, as a hostile author could publish it to the real one:
 * `manifest` packed by npm. Closed with `close()`.
 */
async function packageRegistry(manifest: Manifest) {
  const dir = tempDir();
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(manifest));
  fs.writeFileSync(path.join(dir, 'index.js'), 'module.exports = 1;\n');
  const file = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: dir, encoding: 'utf8' }).trim();
  const tarball = fs.readFileSync(path.join(dir, file));
  const integrity = `sha512-${createHash('sha512').update(tarball).digest('base64')}`;
  const shasum = createHash('sha1').update(tarball).digest('hex');
  const server = http.createServer((req, res) => {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    if (req.url === `/${manifest.name}`) {
      const dist = { tarball: `${base}/${manifest.name}/-/${file}`, integrity, shasum };
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ name: manifest.name, 'dist-tags': { latest: manifest.version }, versions: { [manifest.version]: { ...manifest, dist } } }));
    } else if (req.url === `/${manifest.name}/-/${file}`) res.end(tarball);
    else res.writeHead(404).end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, close: () => new Promise((resolve) => server.close(resolve)) };
}

/** Runs `use` with npm's registry set to a local one serving `manifest` (packageRegistry), then sets it back. */
async function withPackageRegistry(manifest: Manifest, use: () => Promise<void>) {
  const registry = await packageRegistry(manifest);
  const previous = process.env.npm_config_registry;
  process.env.npm_config_registry = registry.url;
  try {
    await use();
  } finally {
    if (previous === undefined) delete process.env.npm_config_registry;
    else process.env.npm_config_registry = previous;
    await registry.close();
  }
}

/** What a run left behind: the events it emitted, or the error on its $errors stream. */
interface Aftermath {
  emitted: unknown[];
  error?: { name: string; message: string; code?: string };
}

describe.each(DIALECTS)('hostile components on %s', (dialect) => {
  let server: TestServer;
  let attacker: Api;
  let victim: Api;
  let victimEndpoint: string;
  let victimSourceId: string;
  let victimRuns = 0;

  beforeAll(async () => {
    // 6 s: only the endless loop waits it out, while filling 64 MB to its limit (or 9 MB of rewritten results) took
    // past 2 s on a slow CI machine, which then reported a timeout instead of what the test checks.
    server = await startTestServer(dialect, { allowPrivateNetwork: false, runTimeout: 6, workerMemory: 64 });
    attacker = client(server.url, (await server.createUser()).apiKey);
    victim = client(server.url, (await server.createUser()).apiKey);
    const code = `module.exports = { name: "victim", version: "1.0.0", props: { http: "$.interface.http", db: "$.service.db" },
      async run(event) { const n = (this.db.get("n") ?? 0) + 1; this.db.set("n", n); this.$emit({ n, polluted: ({}).polluted ?? null }); } };`;
    const created = await victim.post('/v1/sources', { component_code: code });
    victimSourceId = created.body.data.id;
    victimEndpoint = created.body.data.configured_props.http.endpoint_url;
  });
  afterAll(() => server?.destroy());

  /**
   * Deploys `body` as the run of an attacker's HTTP source (`prelude` at the top of its module, run when it loads),
   * triggers it once, and waits for what it left.
   */
  async function attack(body: string, prelude = ''): Promise<Aftermath> {
    const code = `${prelude}\nmodule.exports = { name: "attacker", version: "1.0.0", props: { http: "$.interface.http" }, async run(event) { ${body} } };`;
    const created = await attacker.post('/v1/sources', { component_code: code });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const { id } = created.body.data;
    expect((await request('POST', created.body.data.configured_props.http.endpoint_url, { body: {} })).status).toBe(200);
    const settled = await waitFor(
      async () => {
        const [events, errors] = await Promise.all([
          attacker.get(`/v1/sources/${id}/event_summaries?expand=event`),
          attacker.get(`/v1/sources/${id}/$errors/event_summaries?expand=event`),
        ]);
        return { emitted: events.body.data.map((e: { event: unknown }) => e.event), errors: errors.body.data };
      },
      (r) => r.emitted.length > 0 || r.errors.length > 0,
      { what: 'the attack to finish' },
    );
    return { emitted: settled.emitted, error: settled.errors[0]?.event.error };
  }

  /** Deploys `code` (an HTTP source) for the attacker; when it deploys, runs it once and takes what it emitted first. */
  async function deployAndRunOnce(code: string): Promise<{ created: { status: number; body: { error?: string } }; emitted: unknown }> {
    const created = await attacker.post('/v1/sources', { component_code: code });
    if (created.status !== 200) return { created, emitted: undefined };
    await request('POST', created.body.data.configured_props.http.endpoint_url, { body: {} });
    const events = await waitFor(
      () => attacker.get(`/v1/sources/${created.body.data.id}/event_summaries?expand=event`),
      (r) => r.body.data?.length > 0,
      { what: 'the attack to run' },
    );
    return { created, emitted: events.body.data[0].event };
  }

  /** The victim's source still runs, keeps its db, and sees no pollution; the server is healthy. */
  async function victimUnharmed(): Promise<void> {
    victimRuns++;
    expect((await request('POST', victimEndpoint, { body: {} })).status).toBe(200);
    const events = await waitFor(
      () => victim.get(`/v1/sources/${victimSourceId}/event_summaries?expand=event`),
      (r) => r.body.data?.[0]?.event.n === victimRuns,
      { what: "the victim's run" },
    );
    expect(events.body.data[0].event).toEqual({ n: victimRuns, polluted: null });
    expect((await request('GET', `${server.url}/healthz`)).status).toBe(200);
  }

  it("cannot call the server's own API or any loopback service", async () => {
    const result = await attack(`await fetch(${JSON.stringify(`${server.url}/v1/users/me`)}); this.$emit("reached");`);
    expect(result.emitted).toEqual([]);
    expect(result.error?.message).toMatch(/egress refused: 127\.0\.0\.1/);
    await victimUnharmed();
  });

  it('cannot accept connections on the server’s host', async () => {
    const result = await attack(`
      const listen = (server, ...args) => new Promise((resolve) => { server.once("error", (e) => resolve(e.code)); server.listen(...args, () => { resolve("listening " + server.address().port); server.close(); }); });
      this.$emit({
        http: await listen(require("http").createServer((q, a) => a.end("hi")), 0, "0.0.0.0"),
        tcp: await listen(require("net").createServer(), 0, "127.0.0.1"),
      });`);
    expect(result.emitted).toEqual([{ http: 'EACCES', tcp: 'EACCES' }]);
    await victimUnharmed();
  });

  it('cannot sway the egress guard by changing built-ins or the guard’s own module', async () => {
    // Each change, made alone and undone after: one the rules called (Array.prototype.some), the standard ways of
    // reading addresses (net.isIP's regular expressions, net.BlockList), and the rules' class, imported from the
    // worker's own folder.
    const url = `${server.url}/healthz`;
    const result = await attack(`
      const net = require("net");
      const reach = async () => { try { return (await fetch(${JSON.stringify(url)})).status; } catch (e) { return e.cause?.code ?? e.code ?? e.name; } };
      const tried = async (target, name, value) => { const before = target[name]; target[name] = value(before); try { return await reach(); } finally { target[name] = before; } };
      const rules = await import(process.argv[1].replace(/main.js$/, "egress-rules.js"));
      this.$emit({
        some: await tried(Array.prototype, "some", () => function () { return true; }),
        exec: await tried(RegExp.prototype, "exec", (exec) => function (text) { return String(text).startsWith("127.") ? null : exec.call(this, text); }),
        blockList: await tried(net.BlockList.prototype, "check", () => () => false),
        isIP: await tried(net, "isIP", () => () => 0),
        rules: await tried(rules.EgressRules.prototype, "refusal", () => () => undefined),
      });`);
    const refused = 'EGRESS_REFUSED';
    expect(result.emitted).toEqual([{ some: refused, exec: refused, blockList: refused, isIP: refused, rules: refused }]);
    await victimUnharmed();
  });

  it('cannot reach loopback through raw socket handles of its own', async () => {
    // A handle's class is any socket's `_handle.constructor`; its request class is caught as net fills a request in.
    const port = new URL(server.url).port;
    const result = await attack(`
      const net = require("net"), dgram = require("dgram"), dns = require("dns");
      let ConnectWrap;
      Object.defineProperty(Object.prototype, "oncomplete", { configurable: true, set(value) {
        if (this.constructor?.name === "TCPConnectWrap") ConnectWrap ??= this.constructor;
        Object.defineProperty(this, "oncomplete", { value, writable: true, configurable: true, enumerable: true }); } });
      const decoy = net.connect(9, "1.1.1.1"); decoy.on("error", () => {});
      const Tcp = decoy._handle.constructor;
      await new Promise((resolve) => setImmediate(resolve));
      delete Object.prototype.oncomplete; decoy.destroy();
      const request = new ConnectWrap(); const handle = new Tcp(0);
      const tcp = await new Promise((resolve) => { request.oncomplete = (status) => resolve(status); const error = handle.connect(request, "127.0.0.1", ${port}); if (error) resolve(error); });
      let response = null;
      if (tcp === 0) {
        const socket = new net.Socket({ handle, readable: true, writable: true });
        response = await new Promise((resolve) => { let text = ""; socket.on("data", (d) => { text += d; }); socket.on("end", () => resolve(text.split("\\r\\n")[0]));
          socket.on("error", (e) => resolve(e.code)); socket.write("GET /healthz HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n"); });
      }
      const udpSocket = dgram.createSocket("udp4"); const state = Object.getOwnPropertySymbols(udpSocket).find((s) => s.description === "state symbol");
      const udp = udpSocket[state].handle.connect("127.0.0.1", 53); udpSocket.close();
      let resolver; try { resolver = new dns.Resolver()._handle.setServers([[4, "127.0.0.1", 53]]); } catch (e) { resolver = e.code; }
      this.$emit({ tcp, response, udp, resolver });`);
    expect(result.emitted).toEqual([{ tcp: -13, response: null, udp: -13, resolver: 'EGRESS_REFUSED' }]);
    await victimUnharmed();
  });

  it("cannot read the server's environment through /proc/self/environ or /proc/<server>/environ", async () => {
    const result = await attack(`
      const fs = require("fs");
      const read = (file) => { try { return fs.readFileSync(file, "utf8"); } catch (error) { return error.code; } };
      this.$emit({ self: read("/proc/self/environ"), server: read("/proc/" + process.ppid + "/environ"), env: Object.keys(process.env).sort() });`);
    expect(result.emitted).toEqual([{ self: 'ERR_ACCESS_DENIED', server: 'ERR_ACCESS_DENIED', env: ['NODE_ENV', 'TZ'] }]);
    await victimUnharmed();
  });

  it("cannot read another account's code, the database or the secret key", async () => {
    const dataDir = server.dataDir;
    const result = await attack(`
      const fs = require("fs");
      const read = (file) => { try { fs.readFileSync(file); return "read"; } catch (error) { return error.code; } };
      const list = (dir) => { try { return fs.readdirSync(dir).length; } catch (error) { return error.code; } };
      this.$emit({ accounts: list(${JSON.stringify(`${dataDir}/code/accounts`)}), code: list(${JSON.stringify(`${dataDir}/code`)}),
        db: read(${JSON.stringify(`${dataDir}/tributary.db`)}), key: read(${JSON.stringify(`${dataDir}/secret.key`)}) });`);
    expect(result.emitted).toEqual([{ accounts: 'ERR_ACCESS_DENIED', code: 'ERR_ACCESS_DENIED', db: 'ERR_ACCESS_DENIED', key: 'ERR_ACCESS_DENIED' }]);
    await victimUnharmed();
  });

  it('cannot tell whether an account saved a given code, or ran any', async () => {
    // Node's permission model answers fs.realpathSync, require.resolve and import() with found or not found for
    // paths the worker may not read: bundles named by their code's SHA-256 (and account folders by their id's) would
    // say whether some account saved a code (a known component with its credentials written in, say).
    const dataDir = fs.realpathSync(server.dataDir);
    const saved = `module.exports = { name: "victim secret", version: "1.0.0", async run() { this.$emit("${process.pid}"); } };`;
    expect((await victim.post('/v1/sources', { component_code: saved })).status).toBe(200);
    const never = saved.replace('victim secret', 'never saved');
    const victimId = (await victim.get('/v1/users/me')).body.data.id as string;
    const sha = (text: string) => createHash('sha256').update(text).digest('hex');
    const probes = {
      saved: `${dataDir}/code/${sha(saved)}.cjs`,
      never: `${dataDir}/code/${sha(never)}.cjs`,
      account: `${dataDir}/code/accounts/${sha(victimId).slice(0, 32)}`,
      noAccount: `${dataDir}/code/accounts/${sha('u_nobody').slice(0, 32)}`,
    };
    const result = await attack(`
      const fs = require("fs");
      const answer = async (file) => {
        const out = [];
        for (const probe of [() => fs.realpathSync(file), () => require.resolve(file), () => import(file)]) {
          try { await probe(); out.push("found"); } catch (error) { out.push(error.code); }
        }
        return out.join(" ");
      };
      const probes = ${JSON.stringify(probes)};
      const answers = {};
      for (const [name, file] of Object.entries(probes)) answers[name] = await answer(file);
      this.$emit(answers);`);
    const answers = result.emitted[0] as Record<keyof typeof probes, string>;
    expect({ saved: answers.saved, account: answers.account }).toEqual({ saved: answers.never, account: answers.noAccount });
    await victimUnharmed();
  });

  it('cannot take a port on the server’s host (TCP or UDP) or join a multicast group to hear its network', async () => {
    const free = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => free.bind(0, '127.0.0.1', resolve));
    const { port } = free.address();
    await new Promise<void>((resolve) => free.close(() => resolve()));
    // A sender on the host, as anyone who can reach it: what a worker holding the port would hear.
    const sender = dgram.createSocket('udp4');
    const sending = setInterval(() => sender.send('from the host', port, '127.0.0.1'), 20);
    try {
      const result = await attack(`
        const dgram = require("dgram");
        const outcome = (fn) => new Promise((resolve) => { const socket = dgram.createSocket({ type: "udp4", reuseAddr: true });
          socket.on("error", (error) => { socket.close(); resolve(error.code); });
          socket.on("message", (message) => { socket.close(); resolve("heard: " + message); }); fn(socket); });
        const bound = await outcome((socket) => socket.bind(${port}, "127.0.0.1"));
        const joined = await outcome((socket) => socket.bind(0, () => { try { socket.addMembership("239.255.255.250"); socket.emit("error", { code: "joined" }); } catch (error) { socket.emit("error", error); } }));
        // A TCP port held by a socket that never listens (its raw handle's bind): a port taken from the host's services.
        const decoy = require("net").connect(9, "1.1.1.1"); decoy.on("error", () => {}); const Tcp = decoy._handle.constructor; decoy.destroy();
        const held = new Tcp(0).bind("127.0.0.1", ${port});
        this.$emit({ bound, joined, held: held === 0 ? "held" : require("os").constants.errno.EACCES === -held ? "EACCES" : held });`);
      expect(result.emitted).toEqual([{ bound: 'EACCES', joined: 'EACCES', held: 'EACCES' }]);
    } finally {
      clearInterval(sending);
      sender.close();
    }
    await victimUnharmed();
  });

  it('cannot read outside its sandbox through an npm package whose dependency links out of the package cache', async () => {
    // npm installs a `file:<folder>` dependency of a published package as a link to that folder, and the permission
    // model lets the worker follow a link in a folder it may read. /etc here, whose passwd anyone may read; a server
    // that does not run as root runs its workers as its own user, and the same link to its data folder opens the
    // database and the secret key.
    const name = `tributary-links-out-${dialect}`;
    await withPackageRegistry({ name, version: '1.0.0', dependencies: { 'system-folder': 'file:/etc' } }, async () => {
      const link = path.join(fs.realpathSync(server.dataDir), 'packages', `${name}@1.0.0`, 'node_modules', 'system-folder');
      const code = `require("${name}@1.0.0"); const fs = require("fs");
        module.exports = { name: "attacker", version: "1.0.0", props: { http: "$.interface.http" }, async run() {
          const read = (file) => { try { return fs.readFileSync(file, "utf8").includes("root:"); } catch (error) { return error.code; } };
          this.$emit({ direct: read("/etc/passwd"), linked: read(${JSON.stringify(`${link}/passwd`)}) }); } };`;
      const { created, emitted } = await deployAndRunOnce(code);
      expect({ status: created.status, emitted }).toEqual({ status: 422, emitted: undefined });
      expect(created.body.error).toBe(
        `could not install npm package "${name}@1.0.0": its node_modules/system-folder links outside its install folder, where components may not read (a file: dependency?)`,
      );
      expect(fs.existsSync(path.dirname(path.dirname(link)))).toBe(false);
    });
    await victimUnharmed();
  });

  it.each([
    'archive',
    'repository',
  ] as const)("cannot read a file of the server's through an npm package whose dependency comes from the server's disk (%s)", async (kind) => {
    // npm unpacks a `file:<archive>` dependency of a published package into the install folder, which the worker may
    // read, and clones a `git+file:<repository>` one there: any archive or repository on the server whose path the
    // author guesses (a backup, npm's own cache, a checkout) would be opened.
    const sourceDir = tempDir();
    const files = kind === 'archive' ? path.join(sourceDir, 'package') : sourceDir;
    fs.mkdirSync(files, { recursive: true });
    fs.writeFileSync(path.join(files, 'package.json'), JSON.stringify({ name: 'server-archive', version: '1.0.0' }));
    fs.writeFileSync(path.join(files, 'secret.txt'), 'server secret');
    let spec: string;
    if (kind === 'archive') {
      const archive = path.join(sourceDir, 'backup.tgz');
      execFileSync('tar', ['czf', archive, '-C', sourceDir, 'package']);
      spec = `file:${archive}`;
    } else {
      const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.test', ...args], { cwd: sourceDir });
      git('init', '-q');
      git('add', '-A');
      git('commit', '-qm', 'server files');
      spec = `git+file://${sourceDir}`;
    }
    const name = `tributary-unpacks-${kind}-${dialect}`;
    await withPackageRegistry({ name, version: '1.0.0', dependencies: { 'server-archive': spec } }, async () => {
      const folder = path.join(fs.realpathSync(server.dataDir), 'packages', `${name}@1.0.0`);
      const code = `require("${name}@1.0.0"); const fs = require("fs");
        module.exports = { name: "attacker", version: "1.0.0", props: { http: "$.interface.http" }, async run() {
          let read; try { read = fs.readFileSync(${JSON.stringify(`${folder}/node_modules/server-archive/secret.txt`)}, "utf8"); } catch (error) { read = error.code; }
          this.$emit({ read }); } };`;
      const { created, emitted } = await deployAndRunOnce(code);
      expect({ status: created.status, emitted }).toEqual({ status: 422, emitted: undefined });
      // git may not even clone it (it may use no transport during installs); an archive is unpacked, then refused.
      expect(created.body.error).toBe(
        kind === 'archive'
          ? `could not install npm package "${name}@1.0.0": its node_modules/server-archive is not from the registry but from a file on the server (a file: or git+file: dependency)`
          : `could not install npm package "${name}@1.0.0": a package in its dependency tree is a git repository (file), not from the registry (only registry packages are installed)`,
      );
      expect(fs.existsSync(folder)).toBe(false);
    });
    await victimUnharmed();
  });

  it.each([
    ['a tarball URL', (port: number) => `http://127.0.0.1:${port}/internal-data/-/internal-data-1.0.0.tgz`],
    ['a git+http URL', (port: number) => `git+http://127.0.0.1:${port}/internal-data.git`],
    ['a git:// URL', (port: number) => `git://127.0.0.1:${port}/internal-data.git`],
    ['a git+ssh URL', (port: number) => `git+ssh://git@127.0.0.1:${port}/internal-data.git`],
  ])('cannot make the server connect to a host of its network through an npm package whose dependency is %s there', async (_kind, specFor) => {
    // npm fetches a dependency declared as a URL (or clones a git one) from the server's own network, past the guard
    // that keeps components from private addresses: a blind request to an internal host (a cloud metadata service, an
    // admin page) by any account that imports the package. Here the internal host is a loopback port counting every
    // connection made to it; the registry is another.
    let connections = 0;
    const internal = net.createServer((socket) => {
      connections++;
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    });
    await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
    const spec = specFor((internal.address() as AddressInfo).port);
    const name = `tributary-fetches-${createHash('sha1').update(spec).digest('hex').slice(0, 8)}-${dialect}`;
    try {
      await withPackageRegistry({ name, version: '1.0.0', dependencies: { 'internal-data': spec } }, async () => {
        const code = `const data = require("${name}@1.0.0"); module.exports = { name: "attacker", version: "1.0.0", async run() { this.$emit(data); } };`;
        const created = await attacker.post('/v1/sources', { component_code: code });
        expect({ status: created.status, connections }).toEqual({ status: 422, connections: 0 });
        expect(created.body.error).toMatch(
          new RegExp(
            `^could not install npm package "${name}@1\\.0\\.0": a package in its dependency tree is (fetched from "[^"]+"|a git repository \\([\\w+-]+\\)), not from the registry \\(only registry packages are installed\\)$`,
          ),
        );
        expect(fs.existsSync(path.join(fs.realpathSync(server.dataDir), 'packages', `${name}@1.0.0`))).toBe(false);
      });
    } finally {
      await new Promise((resolve) => internal.close(resolve));
    }
    await victimUnharmed();
  });

  it('quotes a dependency declared from elsewhere cut to its first 100 characters, never half an emoji', async () => {
    // An optional peer dependency is not installed, so npm fetches nothing; the record still declares it. Odd-length
    // text before the emoji put a cut by UTF-16 units in the middle of one.
    const spec = `git+https://example.invalid/a${'🎉'.repeat(150)}`;
    const name = `tributary-declares-elsewhere-${dialect}`;
    const manifest = { name, version: '1.0.0', peerDependencies: { 'internal-data': spec }, peerDependenciesMeta: { 'internal-data': { optional: true } } };
    await withPackageRegistry(manifest, async () => {
      const code = `const data = require("${name}@1.0.0"); module.exports = { name: "attacker", version: "1.0.0", async run() { this.$emit(data); } };`;
      const created = await attacker.post('/v1/sources', { component_code: code });
      expect(created.status).toBe(422);
      expect(created.body.error).toBe(
        `could not install npm package "${name}@1.0.0": its node_modules/${name} depends on internal-data from ` +
          `"git+https://example.invalid/a${'🎉'.repeat(71)}"… (179 characters), not from the registry (only registry packages are installed)`,
      );
      expect(fs.existsSync(path.join(fs.realpathSync(server.dataDir), 'packages', `${name}@1.0.0`))).toBe(false);
    });
  });

  it('cannot start processes or threads, WASI, native addons or the inspector', async () => {
    const result = await attack(`
      const attempt = (fn) => { try { fn(); return "started"; } catch (error) { return error.code; } };
      const cp = require("child_process");
      this.$emit({ spawn: attempt(() => cp.spawnSync("id")), fork: attempt(() => cp.fork("/bin/true")), exec: attempt(() => cp.execSync("id")),
        thread: attempt(() => new (require("worker_threads").Worker)("1", { eval: true })),
        wasi: attempt(() => new (require("wasi").WASI)({ version: "preview1", preopens: { "/": "/" } })),
        addon: attempt(() => process.dlopen({ exports: {} }, "/nonexistent.node")),
        inspector: attempt(() => require("inspector").open(0)) });`);
    const outcome = result.emitted[0] as Record<string, string>;
    expect(Object.values(outcome).every((v) => v.startsWith('ERR_'))).toBe(true);
    expect(outcome).toMatchObject({ spawn: 'ERR_ACCESS_DENIED', wasi: 'ERR_ACCESS_DENIED', addon: 'ERR_DLOPEN_DISABLED', inspector: 'ERR_ACCESS_DENIED' });
    await victimUnharmed();
  });

  it('cannot signal the server', async () => {
    const result = await attack(
      `let code; try { process.kill(process.ppid, "SIGTERM"); code = "sent"; } catch (error) { code = error.code; } this.$emit(code);`,
    );
    expect(result.emitted).toEqual(['EPERM']);
    await victimUnharmed();
  });

  it('pollutes only its own worker when it changes shared prototypes', async () => {
    const result = await attack('Object.prototype.polluted = "yes"; this.$emit({ mine: ({}).polluted });');
    expect(result.emitted).toEqual([{ mine: 'yes' }]);
    // Replacing built-ins the runtime itself uses breaks nothing of the runtime's (replaced-builtins.test.ts).
    const broken = await attack('Array.prototype.push = () => 0; JSON.stringify = () => "{"; this.$emit(1);');
    expect(broken).toEqual({ emitted: [1], error: undefined });
    await victimUnharmed();
  });

  it('fails alone when it loops forever', async () => {
    const result = await attack('for (;;) {}');
    expect(result.error).toMatchObject({ name: 'TimeoutError', code: 'timeout' });
    await victimUnharmed();
  });

  it('fails alone when it exhausts its memory', async () => {
    const result = await attack('const hold = []; for (;;) hold.push(new Array(1e6).fill(Math.random()));');
    expect(result.error).toMatchObject({ name: 'OutOfMemoryError', code: 'out_of_memory' });
    await victimUnharmed();
  });

  it('cannot grow its worker past the memory limit between runs, with a timer the run leaves behind', async () => {
    // Buffers live outside the heap limit; 384 MB of them, past the worker's 64 * 2 + 128 MB, allocated after the run.
    const result = await attack(`
      const kept = []; setInterval(() => { if (kept.length < 24) kept.push(Buffer.alloc(16 * 1024 * 1024, 1)); }, 10);
      this.$emit(process.pid);`);
    const [pid] = result.emitted as number[];
    const alive = () => {
      try {
        process.kill(pid!, 0);
        return true;
      } catch {
        return false;
      }
    };
    await waitFor(
      async () => alive(),
      (running) => !running,
      { what: 'the worker to be stopped for its memory' },
    );
    await victimUnharmed();
  });

  it('cannot compute for free after its run, in a timer its worker runs until it ends', async () => {
    // A fresh free-plan account, whose compute so far is this test's alone.
    const tenant = client(server.url, (await server.createUser({ plan: 'free' })).apiKey);
    const deploy = async (run: string) => {
      const created = await tenant.post('/v1/sources', {
        component_code: `module.exports = { name: "spender", version: "1.0.0", props: { http: "$.interface.http" }, async run() { ${run} } };`,
      });
      expect(created.status, created.text).toBe(200);
      expect((await request('POST', created.body.data.configured_props.http.endpoint_url, { body: {} })).status).toBe(200);
      const events = await waitFor(
        () => tenant.get(`/v1/sources/${created.body.data.id}/event_summaries?expand=event`),
        (r) => r.body.data?.length > 0,
        { what: 'the run to emit' },
      );
      return events.body.data[0].event;
    };
    // 0.5 s of CPU on a timer that fires once the run has been reported, then the worker ends itself. (Workers run at a
    // lower priority than the server: on a loaded machine half a second of their CPU can take many seconds to get.)
    const pid = (await deploy(`setTimeout(() => { const start = process.cpuUsage(); while (process.cpuUsage(start).user < 500000) {} process.exit(0); }, 0);
      this.$emit(process.pid);`)) as number;
    await waitFor(
      async () => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      },
      (alive) => !alive,
      // At its lower priority, on a machine another test suite keeps busy, its half second took over 20 s to get.
      { what: 'the worker to end itself', timeoutMs: 90_000 },
    );
    // The account's next run carries what that worker computed after its last call.
    expect(await deploy('this.$emit("next");')).toBe('next');
    const me = await tenant.get('/v1/users/me');
    expect(me.body.data.daily_compute_time_used).toBeGreaterThanOrEqual(300);
    await victimUnharmed();
  }, 150_000);

  it('cannot emit huge or endlessly deep data', async () => {
    const huge = await attack('this.$emit("x".repeat(2 * 1024 * 1024));');
    expect(huge.error?.name).toBe('RangeError');
    const deep = await attack('let v = 1; for (let i = 0; i < 100000; i++) v = [v]; this.$emit(v);');
    expect(deep.emitted).toEqual([]);
    expect(deep.error).toBeDefined();
    await victimUnharmed();
  });

  it('cannot forge the runtime’s messages on the IPC descriptor', async () => {
    const result = await attack(`
      const v8 = require("v8"); const s = new v8.DefaultSerializer(); s.writeHeader();
      s.writeValue({ t: "outcomes", id: 1, index: 0, done: true, results: [{ outcome: { emits: [{ event: "forged" }], logs: [], durationMs: 0 }, dbWrites: {} }] });
      const body = s.releaseBuffer(); const length = Buffer.alloc(4); length.writeUInt32BE(body.length);
      require("fs").writeSync(3, Buffer.concat([length, body]));
      await new Promise((resolve) => setTimeout(resolve, 500));`);
    expect(result.emitted).toEqual([]);
    expect(result.error).toMatchObject({ name: 'WorkerProtocolError', code: 'protocol_error' });
    await victimUnharmed();
  });

  it("cannot fill the server's memory with a frame it announces on the IPC descriptor", async () => {
    // A frame header announcing 2 GB, then its first bytes: Node's own reader would keep them all until the 2 GB came.
    const result = await attack(`
      const fs = require("fs"); const head = Buffer.alloc(4); head.writeUInt32BE(0x7ffffff0); fs.writeSync(3, head);
      try { fs.writeSync(3, Buffer.alloc(64 * 1024, 1)); } catch {}
      await new Promise(() => {});`);
    expect(result.emitted).toEqual([]);
    expect(result.error).toMatchObject({
      name: 'WorkerProtocolError',
      code: 'protocol_error',
      message: 'malformed worker message: a frame of 2147483632 bytes, over the limit of 100663296',
    });
    await victimUnharmed();
  });

  it('cannot read the channel token from a heap snapshot to forge messages', async () => {
    // The snapshot names the property holding each string, so the token is the 24-character string under `token`;
    // the id of the request in progress comes from a listener of the server's messages set up at load.
    const prelude = 'process.on("message", (m) => { if (m && typeof m.id === "number") globalThis.requestId = m.id; });';
    const result = await attack(
      `
      const v8 = require("v8");
      let tokens;
      try {
        const chunks = []; for await (const chunk of v8.getHeapSnapshot()) chunks.push(chunk);
        const { snapshot: { meta }, nodes, edges, strings } = JSON.parse(Buffer.concat(chunks).toString());
        const nodeFields = meta.node_fields.length, edgeFields = meta.edge_fields.length;
        const edgeCount = meta.node_fields.indexOf("edge_count"), nodeName = meta.node_fields.indexOf("name");
        const found = new Set(); let edge = 0;
        for (let node = 0; node < nodes.length; node += nodeFields) {
          for (let k = 0; k < nodes[node + edgeCount]; k++, edge += edgeFields) {
            if (meta.edge_types[0][edges[edge]] !== "property" || strings[edges[edge + 1]] !== "token") continue;
            const value = strings[nodes[edges[edge + 2] + nodeName]];
            if (/^[A-Za-z0-9_-]{24}$/.test(value)) found.add(value);
          }
        }
        tokens = [...found];
      } catch (error) { this.$emit({ refused: error.code }); return; }
      if (tokens.length !== 1) { this.$emit({ tokens }); return; }
      const s = new v8.DefaultSerializer(); s.writeHeader();
      s.writeValue([tokens[0], { t: "outcomes", id: globalThis.requestId, index: 0, done: true,
        results: [{ outcome: { emits: [{ event: "forged" }], logs: [], durationMs: 0 }, dbWrites: {} }] }]);
      const body = s.releaseBuffer(); const length = Buffer.alloc(4); length.writeUInt32BE(body.length);
      require("fs").writeSync(3, Buffer.concat([length, body]));
      await new Promise((resolve) => setTimeout(resolve, 500));`,
      prelude,
    );
    expect(result.emitted).toEqual([{ refused: 'ERR_ACCESS_DENIED' }]);
    const others = await attack(`const v8 = require("v8"); const codes = [];
      for (const name of ["queryObjects", "setFlagsFromString", "writeHeapSnapshot"]) { try { v8[name](Object); codes.push("ran"); } catch (e) { codes.push(e.code); } }
      try { Object.defineProperty(v8, "getHeapSnapshot", { value: () => null }); } catch (e) { codes.push(e.name); }
      const esm = await import("node:v8"); try { esm.getHeapSnapshot(); codes.push("ran"); } catch (e) { codes.push(e.code); }
      this.$emit(codes);`);
    expect(others.emitted).toEqual([['ERR_ACCESS_DENIED', 'ERR_ACCESS_DENIED', 'ERR_ACCESS_DENIED', 'TypeError', 'ERR_ACCESS_DENIED']]);
    await victimUnharmed();
  });

  it('cannot break its commit with a million empty log lines', async () => {
    // Empty lines cost no characters of the 1 MB, but each is a $logs event: a million of them overflowed the stack
    // of the commit, which then failed and was retried for ever (with this test's 64 MB workers, the worker ran out
    // of memory holding them first).
    const result = await attack('for (let i = 0; i < 1000000; i++) console.log(""); this.$emit("done");');
    expect(result).toEqual({ emitted: ['done'], error: undefined });
    await victimUnharmed();
  });

  it('cannot pass the limits by rewriting what its worker reports', async () => {
    // The worker's report is turned into text by JSON.stringify, which calls any `toJSON` on Object.prototype: a component
    // that puts one there edits its own outcome after the worker's checks, so the server checks again.
    const rewrite = (edit: string) =>
      attack(`Object.defineProperty(Object.prototype, "toJSON", { configurable: true, writable: true, value: function () {
          const value = this;
          if (value.t === "outcomes" && value.results.length) { delete Object.prototype.toJSON; const result = value.results[0]; ${edit} }
          return value;
        } });
        this.$emit("small");`);
    const cases: Array<[string, string]> = [
      ['result.outcome.emits = [{ event: "x".repeat(2 * 1024 * 1024) }];', 'an event may be at most 1048576 bytes'],
      ['result.outcome.emits = [{ event: 1, summary: "s".repeat(2 * 1024 * 1024) }];', 'an event may be at most 1048576 bytes'],
      ['result.outcome.emits = Array.from({ length: 9 }, (_, i) => ({ event: i, id: "i".repeat(1000000) }));', 'may total at most 8388608 bytes'],
      ['result.outcome.emits = Array.from({ length: 20000 }, (_, i) => ({ event: i }));', 'one call may emit at most 10000 events'],
      ['result.dbWrites = { big: "y".repeat(2 * 1024 * 1024) };', 'a $.service.db value may be at most 1048576 bytes'],
      ['result.dbWrites = { [\'a"b\']: "y".repeat(2 * 1024 * 1024) };', 'a $.service.db value may be at most 1048576 bytes of JSON; "a\\"b" would be 2097154'],
      [
        'result.dbWrites = Object.fromEntries(Array.from({ length: 9 }, (_, i) => ["k" + i, "z".repeat(1000000)]));',
        'one call may write at most 8388608 bytes',
      ],
      ['result.outcome.logs = Array.from({ length: 40 }, () => ({ k: "log", ts: 0, msg: "w".repeat(60000) }));', 'log output of one call'],
      ['result.outcome.logs = Array.from({ length: 20000 }, () => ({ k: "log", ts: 0, msg: "" }));', 'at most 10000 lines'],
      ['result.outcome.emits = [{ event: "forged", name: "$errors" }];', '$emit name "$errors" is reserved'],
      // Keys the worker refuses as they are written: too long for PostgreSQL's index, or stored as another key.
      ['result.dbWrites = { ["k".repeat(3000)]: 1 };', '$.service.db keys may have at most 2048 bytes of UTF-8; this one has 3000'],
      ['result.dbRemovals = ["k".repeat(3000)];', '$.service.db keys may have at most 2048 bytes of UTF-8; this one has 3000'],
      ['result.dbWrites = { ["a\\uD800b"]: 1 };', '$.service.db keys may not contain an unpaired UTF-16 surrogate'],
    ];
    for (const [edit, message] of cases) {
      const result = await rewrite(edit);
      expect(result.emitted, edit).toEqual([]);
      expect(result.error, edit).toMatchObject({ name: 'RangeError', message: expect.stringContaining(message) });
    }
    await victimUnharmed();
  });

  it('gains nothing from an endless options() method: the server never runs it unasked', async () => {
    // options() runs only when a client asks for a prop's choices (issue 19); until then saving, deploying and
    // running such a component must not call it.
    const code = `module.exports = { name: "looping options", version: "1.0.0",
      props: { http: "$.interface.http", choice: { type: "string", optional: true, options() { for (;;) {} } },
        other: { type: "string", optional: true, async options() { for (;;) await null; } } },
      async run() { this.$emit("ran"); } };`;
    const saved = await attacker.post('/v1/components', { component_code: code });
    expect(saved.status).toBe(200);
    expect(saved.body.data.configurable_props.map((p: { name: string; remoteOptions?: boolean }) => [p.name, p.remoteOptions ?? false])).toEqual([
      ['http', false],
      ['choice', true],
      ['other', true],
    ]);
    const created = await attacker.post('/v1/sources', { component_id: saved.body.data.id });
    expect(created.status).toBe(200);
    expect((await request('POST', created.body.data.configured_props.http.endpoint_url, { body: {} })).status).toBe(200);
    await waitFor(
      () => attacker.get(`/v1/sources/${created.body.data.id}/event_summaries`),
      (r) => r.body.data?.length === 1,
      { what: 'the run to emit' },
    );
    await victimUnharmed();
  });

  it("cannot hold the server's memory with the headers of its response, nor fail it with headers Node refuses", async () => {
    // Nothing bounded respond()'s headers: 70 MB of them (past any client's limit) held ~370 MB of the server's memory
    // for each response. A character outside Latin-1 made the server's own write of the answer fail with a bare 500.
    const respondWith = async (headers: string) => {
      const code = `module.exports = { name: "headers", version: "1.0.0", props: { http: { type: "$.interface.http", customResponse: true } },
        async run() { this.http.respond({ status: 200, headers: ${headers}, body: "hi" }); this.$emit("answered"); } };`;
      const created = await attacker.post('/v1/sources', { component_code: code });
      expect(created.status, created.text).toBe(200);
      const answer = await request('POST', created.body.data.configured_props.http.endpoint_url, { body: {} });
      const errors = await waitFor(
        () => attacker.get(`/v1/sources/${created.body.data.id}/$errors/event_summaries?expand=event`),
        (r) => r.body.data?.length > 0,
        { what: 'the run to fail' },
      );
      const { name, message } = errors.body.data[0].event.error;
      return { status: answer.status, body: answer.body, error: { name, message } };
    };
    const tooMany = 'respond(): the headers (names and values) may be at most 65536 bytes; these are more';
    expect(await respondWith('Object.fromEntries(Array.from({ length: 100 }, (_, i) => ["x-" + i, "v".repeat(1000)]))')).toEqual({
      status: 500,
      body: { error: `the source failed before responding: ${tooMany}`, code: 'run_failed' },
      error: { name: 'RangeError', message: tooMany },
    });
    expect((await respondWith('{ "set-cookie": Array.from({ length: 100 }, () => "c".repeat(1000)) }')).error).toEqual({
      name: 'RangeError',
      message: tooMany,
    });
    const invalid = 'respond(): header "x-a" holds a character HTTP does not allow in a header (tab, printable ASCII and Latin-1 only)';
    expect(await respondWith('{ "x-a": "\u20ac" }')).toEqual({
      status: 500,
      body: { error: `the source failed before responding: ${invalid}`, code: 'run_failed' },
      error: { name: 'TypeError', message: invalid },
    });
    await victimUnharmed();
  });

  it('cannot store a description of any size that its module builds as it loads', async () => {
    // Code is at most 2 MB, but what it exports is built as it loads: a 30 MB name or 200,000 props were stored with the
    // component and listed with it (~450 MB of the server's memory for one save).
    const save = (exported: string) =>
      attacker.post('/v1/components', { component_code: `module.exports = { version: "1.0.0", async run() {}, ${exported} };` });
    const name = await save('name: "n".repeat(2 * 1024 * 1024)');
    expect({ status: name.status, body: name.body }).toEqual({
      status: 422,
      body: {
        error: "the component's description (name, version, key, description and props) is 2097267 bytes of JSON; it may be at most 1048576",
        code: 'component_invalid',
        details: [{ reason: 'load_failed' }],
      },
    });
    const props = await save(
      'name: "n", props: Object.fromEntries(Array.from({ length: 20000 }, (_, i) => ["p" + i, { type: "string", label: "l".repeat(100) }]))',
    );
    expect(props.status).toBe(422);
    expect(props.body.error).toMatch(
      /^the component's description \(name, version, key, description and props\) is \d+ bytes of JSON; it may be at most 1048576$/,
    );
    await victimUnharmed();
  });

  it('cannot flood its worker with timers', async () => {
    const result = await attack('for (let i = 0; i < 5000; i++) setInterval(() => {}, 1e6);');
    expect(result.error).toMatchObject({ name: 'RangeError' });
    expect(result.error?.message).toContain('at most 1000 pending timers');
    await victimUnharmed();
  });
});
