// Component code may not reach loopback or private addresses by any path out of the worker, unless the operator opens them.
import dgram from 'node:dgram';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EgressPolicy, EgressRules, checkEgressAllow } from '../../src/runtime/worker/egress-rules.js';
import { createRuntime, runCode, source, type TestRuntime } from './helpers.js';

/** A local HTTP server standing in for the services of the host (its API, a database, a metadata service). */
let target: http.Server;
let port: number;
let hits = 0;

beforeAll(async () => {
  target = http.createServer((_request, response) => {
    hits++;
    response.end('reached');
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  port = (target.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => target.close(() => resolve())));

/** Runs `body` as a source's run() under `egress`; the run emits what the attempt gave, or fails. */
async function attempt(t: TestRuntime, body: string) {
  const result = await runCode(t.runtime, 'acct_egress', source(body), { timeoutMs: 5_000 });
  return result.outcomes[0]!;
}

describe('the egress policy', () => {
  it('refuses internal addresses, names the destination and the setting, and opens what is allowed', () => {
    const closed = new EgressRules({ allowPrivateNetwork: false, allow: [] });
    for (const address of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      // Azure's host service (WireServer): public, but it speaks for the VM the server runs on.
      '168.63.129.16',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '::1',
      'fd00::1',
      'fe80::1',
      '::ffff:127.0.0.1',
      '::',
      // Documentation and protocol-assignment ranges, which some hosts use for their own interfaces.
      '192.0.0.1',
      '192.0.2.2',
      '198.51.100.7',
      '203.0.113.9',
      // IPv6 forms that carry a private IPv4 address inside, Teredo, and the documentation range.
      '::127.0.0.1',
      '::ffff:0:7f00:1',
      '64:ff9b::a00:1',
      '2002:7f00:1::',
      '2001:db8::1',
      '2001::1',
    ]) {
      expect(closed.refusal({ host: address, address, port: 80 }), address).toMatch(/^egress refused: .* --egress-allow .* --allow-private-network$/);
    }
    expect(closed.refusal({ host: 'example.com', address: '93.184.215.14', port: 443 })).toBeUndefined();
    expect(closed.refusal({ host: 'dns.google', address: '2001:4860:4860::8888', port: 443 })).toBeUndefined();
    // Behind DNS64, a public IPv4 service comes as NAT64 (or a 6to4 address): judged by the IPv4 address inside.
    expect(closed.refusal({ host: 'v4only.example', address: '64:ff9b::5db8:d70e', port: 443 })).toBeUndefined();
    expect(closed.refusal({ host: 'v4only.example', address: '2002:5db8:d70e::1', port: 443 })).toBeUndefined();
    expect(closed.refusal({ host: 'db.internal', address: '10.0.0.5', port: 5432 })).toContain('db.internal (10.0.0.5) port 5432');
    const open = new EgressRules({ allowPrivateNetwork: false, allow: ['10.1.2.0/24', 'api.internal:443', '[fd00::1]:8080', '192.168.1.5'] });
    expect(open.refusal({ host: '10.1.2.9', address: '10.1.2.9', port: 1 })).toBeUndefined();
    expect(open.refusal({ host: '10.1.3.9', address: '10.1.3.9', port: 1 })).toBeDefined();
    expect(open.refusal({ host: 'API.internal', address: '10.9.9.9', port: 443 })).toBeUndefined();
    expect(open.refusal({ host: 'api.internal', address: '10.9.9.9', port: 80 })).toBeDefined();
    expect(open.refusal({ host: 'fd00::1', address: 'fd00::1', port: 8080 })).toBeUndefined();
    expect(open.refusal({ host: '192.168.1.5', address: '::ffff:192.168.1.5', port: 22 })).toBeUndefined();
    expect(open.refusal({ host: '10.1.2.9', address: '64:ff9b::a01:209', port: 1 })).toBeUndefined();
    expect(new EgressRules({ allowPrivateNetwork: true, allow: [] }).refusal({ host: 'x', address: '127.0.0.1', port: 1 })).toBeUndefined();
  });

  it.each([['10.0.0.0/33'], ['not a host!'], ['api.internal:99999'], ['1.2.3.4/x']])('rejects the allow entry %s', (entry) => {
    expect(() => checkEgressAllow([entry])).toThrow(`egress allow entry "${entry}"`);
  });
});

describe('component code on a default server', () => {
  let t: TestRuntime;
  beforeAll(() => {
    t = createRuntime({ poolSize: 1 });
  });
  afterAll(() => t.close());

  const tries = (): Array<[string, string]> => [
    ['fetch to 127.0.0.1', `await fetch("http://127.0.0.1:${port}/")`],
    ['fetch to localhost', `await fetch("http://localhost:${port}/")`],
    ['fetch to [::ffff:127.0.0.1]', `await fetch("http://[::ffff:127.0.0.1]:${port}/")`],
    ['http.get to 127.1', `await new Promise((ok, fail) => require("http").get("http://127.1:${port}/", ok).on("error", fail))`],
    ['http.get to 0x7f000001', `await new Promise((ok, fail) => require("http").get("http://0x7f000001:${port}/", ok).on("error", fail))`],
    ['http.get to 2130706433', `await new Promise((ok, fail) => require("http").get("http://2130706433:${port}/", ok).on("error", fail))`],
    [
      'net.connect with a lookup that lies',
      `await new Promise((ok, fail) => require("net").connect({ host: "public.example", port: ${port}, lookup: (h, o, cb) => o && o.all ? cb(null, [{ address: "127.0.0.1", family: 4 }]) : cb(null, "127.0.0.1", 4) }, ok).on("error", fail))`,
    ],
    ['tls.connect to 127.0.0.1', `await new Promise((ok, fail) => require("tls").connect({ host: "127.0.0.1", port: ${port} }, ok).on("error", fail))`],
    ['http2.connect to 127.0.0.1', `await new Promise((ok, fail) => require("http2").connect("http://127.0.0.1:${port}").on("connect", ok).on("error", fail))`],
    ['a Unix socket', `await new Promise((ok, fail) => require("net").connect("/var/run/postgresql/.s.PGSQL.5432", ok).on("error", fail))`],
    ['a DNS server on loopback', `require("dns").setServers(["127.0.0.1"])`],
    ['a DNS resolver on loopback', `new (require("dns").promises.Resolver)().setServers(["127.0.0.1:5353"])`],
    [
      'putting back the original connect',
      `const net = require("net"); net.Socket.prototype.connect = function () { throw new Error("replaced") }; await fetch("http://127.0.0.1:${port}/")`,
    ],
  ];

  it('refuses every path to a loopback service; the error and the run log name the destination', async () => {
    for (const [what, code] of tries()) {
      const outcome = await attempt(t, `${code}; this.$emit({ reached: true });`);
      expect(outcome.emits, what).toEqual([]);
      expect(outcome.error, what).toBeDefined();
      const said = `${outcome.error!.message}\n${outcome.logs.map((line) => line.msg).join('\n')}`;
      expect(said, what).toMatch(/egress refused|Cannot assign to read only property|Cannot redefine/);
    }
    expect(hits).toBe(0);
  });

  it('says which setting opens the destination', async () => {
    const outcome = await attempt(t, `await fetch("http://127.0.0.1:${port}/")`);
    expect(outcome.logs.map((line) => line.msg)).toContainEqual(expect.stringContaining(`egress refused: 127.0.0.1 port ${port}`));
    expect(outcome.logs.map((line) => line.msg)).toContainEqual(expect.stringContaining('--egress-allow'));
    expect(outcome.error!.message).toMatch(new RegExp(`^fetch failed: egress refused: 127\\.0\\.0\\.1 port ${port} `));
  });

  it('refuses UDP datagrams to loopback', async () => {
    const receiver = dgram.createSocket('udp4');
    let received = 0;
    receiver.on('message', () => received++);
    await new Promise<void>((resolve) => receiver.bind(0, '127.0.0.1', resolve));
    const udpPort = receiver.address().port;
    try {
      const outcome = await attempt(
        t,
        `const s = require("dgram").createSocket("udp4"); await new Promise((ok, fail) => s.send("x", ${udpPort}, "127.0.0.1", (e) => (e ? fail(e) : ok()))); s.close();`,
      );
      expect(outcome.error?.message).toContain(`egress refused: 127.0.0.1 port ${udpPort}`);
      expect(received).toBe(0);
    } finally {
      receiver.close();
    }
  });
});

describe('component code on a server that opens destinations', () => {
  const reach = (t: TestRuntime) => attempt(t, `const r = await fetch("http://127.0.0.1:${port}/"); this.$emit({ body: await r.text() });`);
  const started: TestRuntime[] = [];
  const runtimeWith = (egress: EgressPolicy) => {
    const t = createRuntime({ poolSize: 1, egress });
    started.push(t);
    return t;
  };
  afterAll(() => Promise.all(started.map((t) => t.close())));

  it('reaches an address on the allow list, and only on its port', async () => {
    const allowed = await reach(runtimeWith({ allowPrivateNetwork: false, allow: [`127.0.0.1:${port}`] }));
    expect(allowed.error).toBeUndefined();
    expect(allowed.emits).toEqual([{ event: { body: 'reached' } }]);
    const otherPort = await reach(runtimeWith({ allowPrivateNetwork: false, allow: [`127.0.0.1:${port + 1}`] }));
    expect(otherPort.error).toBeDefined();
  });

  it('reaches a host name on the allow list, though the socket handle sees only its address', async () => {
    const byName = runtimeWith({ allowPrivateNetwork: false, allow: [`localhost:${port}`] });
    const named = await attempt(byName, `const r = await fetch("http://localhost:${port}/"); this.$emit({ body: await r.text() });`);
    expect(named.error).toBeUndefined();
    expect(named.emits).toEqual([{ event: { body: 'reached' } }]);
    // The address alone is not on the list.
    expect((await reach(byName)).error).toBeDefined();
  });

  it("resolves a host name on the allow list with the system's resolver, not a lookup the code passes", async () => {
    const byName = runtimeWith({ allowPrivateNetwork: false, allow: [`allowed.invalid:${port}`] });
    const lying = await attempt(
      byName,
      `await new Promise((ok, fail) => require("net").connect({ host: "allowed.invalid", port: ${port}, lookup: (h, o, cb) => o && o.all ? cb(null, [{ address: "127.0.0.1", family: 4 }]) : cb(null, "127.0.0.1", 4) }, ok).on("error", fail)); this.$emit({ reached: true });`,
    );
    expect(lying.emits).toEqual([]);
    expect(lying.error).toMatchObject({ code: expect.stringMatching(/^(ENOTFOUND|EAI_AGAIN)$/) });
  });

  it('reaches anything with --allow-private-network', async () => {
    const open = await reach(runtimeWith({ allowPrivateNetwork: true, allow: [] }));
    expect(open.emits).toEqual([{ event: { body: 'reached' } }]);
  });
});
