// Which network destinations component code may reach: public addresses, plus what the operator opened. It lives in
// worker/ because the worker process loads it (a worker may read only that folder); the server checks settings with it.
import net from 'node:net';

/**
 * Loopback, private (RFC 1918, RFC 4193), link-local (with the 169.254.169.254 metadata service), carrier-grade
 * NAT, benchmarking, documentation, protocol-assignment, multicast, reserved and unspecified ranges (RFC 6890), and
 * Teredo and local-use NAT64, whose IPv4 address inside cannot be read. IPv6 forms that carry an IPv4 address in a
 * known place (mapped, translated, compatible, NAT64, 6to4) are judged by that address instead: see embeddedIPv4.
 */
const PRIVATE = new net.BlockList();
for (const [address, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  PRIVATE.addSubnet(address, prefix, 'ipv4');
}
for (const [address, prefix] of [
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  PRIVATE.addSubnet(address, prefix, 'ipv6');
}

/** The eight 16-bit groups of an IPv6 address (a zone `%eth0` and a trailing dotted IPv4 allowed). */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.replace(/%.*$/, '');
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const bytes = dotted[1]!.split('.').map(Number);
    text = `${text.slice(0, -dotted[1]!.length)}${((bytes[0]! << 8) | bytes[1]!).toString(16)}:${((bytes[2]! << 8) | bytes[3]!).toString(16)}`;
  }
  const [head, tail, extra] = text.split('::');
  if (extra !== undefined) return undefined;
  const part = (s: string | undefined) => (s ? s.split(':').map((g) => Number.parseInt(g, 16)) : []);
  const left = part(head);
  const right = part(tail);
  const groups = tail === undefined ? left : [...left, ...new Array(8 - left.length - right.length).fill(0), ...right];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

/**
 * The IPv4 address an IPv6 address reaches through a known form: mapped `::ffff:a.b.c.d`, translated
 * `::ffff:0:a.b.c.d`, compatible `::a.b.c.d` (with `::` and `::1` as 0.0.0.0 and 0.0.0.1), NAT64 `64:ff9b::/96`
 * and 6to4 `2002:AABB:CCDD::/48`. Such an address is judged as the IPv4 one: an IPv6-only host behind DNS64 reaches
 * every public IPv4 service through NAT64, and none of the private ones.
 */
export function embeddedIPv4(address: string): string | undefined {
  if (net.isIP(address) !== 6) return undefined;
  const g = ipv6Groups(address);
  if (!g) return undefined;
  const v4 = (high: number, low: number) => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && (g[5] === 0xffff || g[5] === 0)) return v4(g[6]!, g[7]!);
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return v4(g[6]!, g[7]!);
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return v4(g[6]!, g[7]!);
  if (g[0] === 0x2002) return v4(g[1]!, g[2]!);
  return undefined;
}

/** Whether `list` holds an IP address, one carrying an IPv4 address inside being judged by that address. */
function listed(list: net.BlockList, address: string): boolean {
  const inside = embeddedIPv4(address);
  if (inside !== undefined) return list.check(inside, 'ipv4');
  return list.check(address, net.isIP(address) === 6 ? 'ipv6' : 'ipv4');
}

/** True for an IP address (v4 or v6) in a range the service keeps component code and webhooks away from. */
export function isPrivateAddress(address: string): boolean {
  return net.isIP(address) !== 0 && listed(PRIVATE, address);
}

/** What the operator allows: everything (`--allow-private-network`), or public addresses and the listed exceptions. */
export interface EgressPolicy {
  allowPrivateNetwork: boolean;
  /** `--egress-allow` entries: `10.1.2.0/24`, `192.168.1.5`, `api.internal`, `api.internal:443`, `[fd00::1]:8080`. */
  allow: string[];
}

interface AllowRule {
  /** Set for address ranges. */
  subnet?: net.BlockList;
  /** Set for host names, lower case. */
  host?: string;
  port?: number;
}

/** Parses one `--egress-allow` entry; throws a TypeError naming it when it is neither a range nor a host[:port]. */
function parseRule(entry: string): AllowRule {
  const text = entry.trim();
  const cidr = /^([^/]+)\/(\d{1,3})$/.exec(text);
  if (cidr) {
    const family = net.isIP(cidr[1]!);
    const prefix = Number(cidr[2]);
    if (family === 0 || prefix > (family === 4 ? 32 : 128)) throw new TypeError(`egress allow entry "${entry}" is not a valid address range`);
    const subnet = new net.BlockList();
    subnet.addSubnet(cidr[1]!, prefix, family === 4 ? 'ipv4' : 'ipv6');
    return { subnet };
  }
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  const [host, port] = bracketed ? [bracketed[1]!, bracketed[2]] : net.isIP(text) === 6 ? [text, undefined] : (text.split(/:(?=\d+$)/) as [string, string?]);
  if (port !== undefined && (!/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65535)) {
    throw new TypeError(`egress allow entry "${entry}" has an invalid port`);
  }
  const family = net.isIP(host);
  if (family !== 0) {
    const subnet = new net.BlockList();
    subnet.addAddress(host, family === 4 ? 'ipv4' : 'ipv6');
    return { subnet, ...(port !== undefined && { port: Number(port) }) };
  }
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i.test(host)) {
    throw new TypeError(`egress allow entry "${entry}" is neither an address, a range nor a host name`);
  }
  return { host: host.toLowerCase(), ...(port !== undefined && { port: Number(port) }) };
}

/** Checks `--egress-allow` entries; the message names the first bad one. */
export function checkEgressAllow(entries: string[]): void {
  for (const entry of entries) parseRule(entry);
}

/** One connection attempt: the name the code asked for (when it asked by name) and the address it resolved to. */
export interface Destination {
  host: string;
  address: string;
  port: number;
}

/** Decides connection attempts under one policy. */
export class EgressRules {
  private readonly rules: AllowRule[];

  constructor(private readonly policy: EgressPolicy) {
    this.rules = policy.allow.map(parseRule);
  }

  /** Undefined when allowed; otherwise why not, naming the destination and the setting that would open it. */
  refusal(destination: Destination): string | undefined {
    if (this.policy.allowPrivateNetwork || !isPrivateAddress(destination.address)) return undefined;
    if (this.rules.some((rule) => this.matches(rule, destination))) return undefined;
    const named = destination.host === destination.address ? destination.address : `${destination.host} (${destination.address})`;
    return (
      `egress refused: ${named} port ${destination.port} is a loopback, private, link-local or otherwise internal address, ` +
      'which component code may not reach; the operator can open it with --egress-allow (an address, a range or host[:port]) ' +
      'or, for development, --allow-private-network'
    );
  }

  /** Undefined when allowed; for a Unix socket path, which reaches local services only. */
  socketPathRefusal(socketPath: string): string | undefined {
    if (this.policy.allowPrivateNetwork) return undefined;
    return `egress refused: the Unix socket ${socketPath} is a local service, which component code may not reach; --allow-private-network opens it for development`;
  }

  private matches(rule: AllowRule, destination: Destination): boolean {
    if (rule.port !== undefined && rule.port !== destination.port) return false;
    if (rule.host !== undefined) return rule.host === destination.host.toLowerCase();
    return listed(rule.subnet!, destination.address);
  }
}
