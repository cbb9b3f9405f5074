// Which network destinations component code may reach: public addresses, plus what the operator opened. It lives in
// worker/ because the worker process loads it (a worker may read only that folder); the server checks settings with it.
import { type IpAddress, type IpRange, inAnyRange, ipRange, parseIpAddress } from './ip-address.js';

/**
 * Loopback, private (RFC 1918, RFC 4193), link-local (with the 169.254.169.254 metadata service), Azure's host
 * service 168.63.129.16 (a public address that answers only the VM it runs under, with that host's agent), carrier-grade
 * NAT, benchmarking, documentation, protocol-assignment, multicast, reserved and unspecified ranges (RFC 6890), and
 * Teredo and local-use NAT64, whose IPv4 address inside cannot be read. IPv6 forms that carry an IPv4 address in a
 * known place (mapped, translated, compatible, NAT64, 6to4) are judged by that address instead: see embeddedIPv4.
 */
const PRIVATE: IpRange[] = [];
for (const [address, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['168.63.129.16', 32],
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
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  PRIVATE.push(ipRange(address, prefix)!);
}

/**
 * True for an IP address (v4 or v6) in a range the service keeps component code and webhooks away from. Decided by
 * ip-address.ts alone, so code in the worker that changes built-ins (net.isIP, net.BlockList, RegExp) cannot sway it.
 */
export function isPrivateAddress(address: string): boolean {
  const parsed = parseIpAddress(address);
  return parsed !== undefined && inAnyRange(PRIVATE, parsed);
}

/** What the operator allows: everything (`--allow-private-network`), or public addresses and the listed exceptions. */
export interface EgressPolicy {
  allowPrivateNetwork: boolean;
  /** `--egress-allow` entries: `10.1.2.0/24`, `192.168.1.5`, `api.internal`, `api.internal:443`, `[fd00::1]:8080`. */
  allow: string[];
}

/** Every field is the rule's own (undefined when unset): a field read through the prototype could be component code's. */
interface AllowRule {
  /** Set for address ranges. */
  subnet: IpRange | undefined;
  /** Set for host names, lower case. */
  host: string | undefined;
  port: number | undefined;
}

/** Parses one `--egress-allow` entry; throws a TypeError naming it when it is neither a range nor a host[:port]. */
function parseRule(entry: string): AllowRule {
  const text = entry.trim();
  const cidr = /^([^/]+)\/(\d{1,3})$/.exec(text);
  if (cidr) {
    const subnet = ipRange(cidr[1]!, Number(cidr[2]));
    if (!subnet) throw new TypeError(`egress allow entry "${entry}" is not a valid address range`);
    return { subnet, host: undefined, port: undefined };
  }
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  const [host, port] = bracketed
    ? [bracketed[1]!, bracketed[2]]
    : parseIpAddress(text)?.family === 6
      ? [text, undefined]
      : (text.split(/:(?=\d+$)/) as [string, string?]);
  if (port !== undefined && (!/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65535)) {
    throw new TypeError(`egress allow entry "${entry}" has an invalid port`);
  }
  const portNumber = port === undefined ? undefined : Number(port);
  const address = parseIpAddress(host);
  if (address) return { subnet: ipRange(host, address.family === 4 ? 32 : 128), host: undefined, port: portNumber };
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i.test(host)) {
    throw new TypeError(`egress allow entry "${entry}" is neither an address, a range nor a host name`);
  }
  return { subnet: undefined, host: host.toLowerCase(), port: portNumber };
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

/** `text.toLowerCase()` whatever component code does to `String.prototype` later. */
const toLowerCase = Function.prototype.call.bind(String.prototype.toLowerCase) as (text: string) => string;

/**
 * Decides connection attempts under one policy. What it reads when deciding was made before component code ran (its
 * rules, as own fields), or is pinned (ip-address.ts): the worker's guards stand on it.
 */
export class EgressRules {
  private readonly rules: AllowRule[];
  private readonly allowPrivateNetwork: boolean;

  constructor(policy: EgressPolicy) {
    this.allowPrivateNetwork = policy.allowPrivateNetwork === true;
    this.rules = policy.allow.map(parseRule);
  }

  /** Undefined when allowed; otherwise why not, naming the destination and the setting that would open it. */
  refusal(destination: Destination): string | undefined {
    const { host, address, port } = destination;
    if (this.allowPrivateNetwork) return undefined;
    const parsed = parseIpAddress(address);
    // Not an address at all: never what a resolver or a socket hands on, so nothing to let through.
    if (parsed !== undefined && !inAnyRange(PRIVATE, parsed)) return undefined;
    if (parsed !== undefined) {
      for (let i = 0; i < this.rules.length; i++) if (this.matches(this.rules[i]!, host, parsed, port)) return undefined;
    }
    const named = host === address ? address : `${host} (${address})`;
    return (
      `egress refused: ${named} port ${port} is a loopback, private, link-local or otherwise internal address, ` +
      'which component code may not reach; the operator can open it with --egress-allow (an address, a range or host[:port]) ' +
      'or, for development, --allow-private-network'
    );
  }

  /**
   * True when an entry allows `host` by its name: then the name's addresses are taken on trust, so they must come
   * from the system's resolver, not from a lookup component code passes.
   */
  allowsByName(host: string, port: number): boolean {
    for (let i = 0; i < this.rules.length; i++) {
      const rule = this.rules[i]!;
      if (rule.host !== undefined && rule.host === toLowerCase(host) && (rule.port === undefined || rule.port === port)) return true;
    }
    return false;
  }

  /** Undefined when allowed; for a Unix socket path, which reaches local services only. */
  socketPathRefusal(socketPath: string): string | undefined {
    if (this.allowPrivateNetwork) return undefined;
    return `egress refused: the Unix socket ${socketPath} is a local service, which component code may not reach; --allow-private-network opens it for development`;
  }

  private matches(rule: AllowRule, host: string, address: IpAddress, port: number): boolean {
    if (rule.port !== undefined && rule.port !== port) return false;
    if (rule.host !== undefined) return typeof host === 'string' && rule.host === toLowerCase(host);
    return rule.subnet !== undefined && inAnyRange([rule.subnet], address);
  }
}

// Component code can import this module (the worker may read its folder) and would otherwise patch the methods the
// guards call.
Object.freeze(EgressRules.prototype);
Object.freeze(EgressRules);
