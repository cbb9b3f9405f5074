// IP addresses and ranges read by hand, with the few built-ins it needs pinned when it loads, so that component code that
// changes prototypes or globals (RegExp.prototype.exec, which net.isIP calls; net.BlockList) cannot change a decision.

/** `text.charCodeAt(index)` whatever component code does to `String.prototype` later. */
const charCodeAt = Function.prototype.call.bind(String.prototype.charCodeAt) as (text: string, index: number) => number;
const Bytes = Uint16Array;

/** An address as eight 16-bit groups; an IPv4 address is the IPv4-mapped `::ffff:a.b.c.d`, its `family` 4. */
export interface IpAddress {
  family: 4 | 6;
  groups: Uint16Array;
}

/** A range: the first `prefix` bits of `groups` (an IPv4 range's prefix counts from the mapped address's bit 96). */
export interface IpRange {
  family: 4 | 6;
  groups: Uint16Array;
  prefix: number;
}

const DOT = 0x2e;
const COLON = 0x3a;
const PERCENT = 0x25;

function digit(code: number): number {
  return code >= 0x30 && code <= 0x39 ? code - 0x30 : -1;
}

function hexDigit(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  if (code >= 0x61 && code <= 0x66) return code - 0x61 + 10;
  if (code >= 0x41 && code <= 0x46) return code - 0x41 + 10;
  return -1;
}

/** Dotted decimal from `start` to `end` (four parts, 0 to 255, no leading zeros, as net.isIPv4): the 32 bits, or -1. */
function readIPv4(text: string, start: number, end: number): number {
  let value = 0;
  let parts = 0;
  let i = start;
  while (parts < 4) {
    let part = 0;
    let digits = 0;
    const first = i;
    while (i < end && digit(charCodeAt(text, i)) !== -1) {
      part = part * 10 + digit(charCodeAt(text, i));
      digits++;
      i++;
    }
    if (digits === 0 || digits > 3 || part > 255 || (digits > 1 && charCodeAt(text, first) === 0x30)) return -1;
    value = value * 256 + part;
    parts++;
    if (parts < 4) {
      if (i >= end || charCodeAt(text, i) !== DOT) return -1;
      i++;
    }
  }
  return i === end ? value : -1;
}

/** The groups of an IPv6 address from `start` to `end` (`::` once at most, a dotted IPv4 tail allowed), or undefined. */
function readIPv6(text: string, start: number, end: number): Uint16Array | undefined {
  const head = new Bytes(8);
  const tail = new Bytes(8);
  let heads = 0;
  let tails = 0;
  let gap = false;
  let i = start;
  if (end - start >= 2 && charCodeAt(text, i) === COLON && charCodeAt(text, i + 1) === COLON) {
    gap = true;
    i += 2;
  }
  while (i < end) {
    const count = heads + tails;
    // A dotted IPv4 tail takes the last two groups.
    let dotted = false;
    for (let j = i; j < end && charCodeAt(text, j) !== COLON; j++) if (charCodeAt(text, j) === DOT) dotted = true;
    if (dotted) {
      const v4 = readIPv4(text, i, end);
      if (v4 === -1 || count > 6) return undefined;
      const high = v4 >>> 16;
      const low = v4 & 0xffff;
      if (gap) {
        tail[tails++] = high;
        tail[tails++] = low;
      } else {
        head[heads++] = high;
        head[heads++] = low;
      }
      i = end;
      break;
    }
    let group = 0;
    let digits = 0;
    while (i < end && hexDigit(charCodeAt(text, i)) !== -1) {
      group = group * 16 + hexDigit(charCodeAt(text, i));
      digits++;
      i++;
    }
    if (digits === 0 || digits > 4 || count >= 8) return undefined;
    if (gap) tail[tails++] = group;
    else head[heads++] = group;
    if (i === end) break;
    if (charCodeAt(text, i) !== COLON) return undefined;
    i++;
    if (i < end && charCodeAt(text, i) === COLON) {
      if (gap) return undefined;
      gap = true;
      i++;
    } else if (i === end) return undefined;
  }
  if (gap ? heads + tails > 7 : heads !== 8) return undefined;
  const groups = new Bytes(8);
  for (let k = 0; k < heads; k++) groups[k] = head[k]!;
  for (let k = 0; k < tails; k++) groups[8 - tails + k] = tail[k]!;
  return groups;
}

/** Reads an IP address (IPv6 with a zone `%eth0` allowed), or undefined for anything else, as net.isIP would. */
export function parseIpAddress(text: unknown): IpAddress | undefined {
  if (typeof text !== 'string' || text.length === 0 || text.length > 100) return undefined;
  const v4 = readIPv4(text, 0, text.length);
  if (v4 !== -1) {
    const groups = new Bytes(8);
    groups[5] = 0xffff;
    groups[6] = v4 >>> 16;
    groups[7] = v4 & 0xffff;
    return { family: 4, groups };
  }
  let end = text.length;
  for (let i = 0; i < text.length; i++) {
    if (charCodeAt(text, i) === PERCENT) {
      if (i === text.length - 1) return undefined;
      end = i;
      break;
    }
  }
  const groups = readIPv6(text, 0, end);
  return groups ? { family: 6, groups } : undefined;
}

/**
 * The IPv4 address an IPv6 address reaches through a known form, as a mapped address: mapped `::ffff:a.b.c.d`,
 * translated `::ffff:0:a.b.c.d`, compatible `::a.b.c.d` (with `::` and `::1` as 0.0.0.0 and 0.0.0.1), NAT64
 * `64:ff9b::/96` and 6to4 `2002:AABB:CCDD::/48`. Such an address is judged as the IPv4 one: an IPv6-only host behind
 * DNS64 reaches every public IPv4 service through NAT64, and none of the private ones.
 */
export function embeddedIPv4(address: IpAddress): IpAddress | undefined {
  if (address.family === 4) return undefined;
  const g = address.groups;
  const zeros = (from: number, to: number) => {
    for (let i = from; i < to; i++) if (g[i] !== 0) return false;
    return true;
  };
  const mapped = (high: number, low: number): IpAddress => {
    const groups = new Bytes(8);
    groups[5] = 0xffff;
    groups[6] = high;
    groups[7] = low;
    return { family: 4, groups };
  };
  if (zeros(0, 5) && (g[5] === 0xffff || g[5] === 0)) return mapped(g[6]!, g[7]!);
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return mapped(g[6]!, g[7]!);
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return mapped(g[6]!, g[7]!);
  if (g[0] === 0x2002) return mapped(g[1]!, g[2]!);
  return undefined;
}

/** A range from its first address and prefix length (of the address's own family); undefined when either is invalid. */
export function ipRange(text: string, prefix: number): IpRange | undefined {
  const address = parseIpAddress(text);
  if (!address || typeof prefix !== 'number' || prefix % 1 !== 0 || prefix < 0 || prefix > (address.family === 4 ? 32 : 128)) return undefined;
  return { family: address.family, groups: address.groups, prefix: address.family === 4 ? 96 + prefix : prefix };
}

/** Whether `address` is in `range` (both of the same family; the caller judges embedded IPv4 addresses first). */
export function inRange(range: IpRange, address: IpAddress): boolean {
  if (range.family !== address.family) return false;
  let bits = range.prefix;
  for (let i = 0; i < 8 && bits > 0; i++, bits -= 16) {
    const shift = bits >= 16 ? 0 : 16 - bits;
    if (range.groups[i]! >>> shift !== address.groups[i]! >>> shift) return false;
  }
  return true;
}

/** Whether `address` is in any of `ranges`, an IPv6 address carrying an IPv4 one being judged by that address. */
export function inAnyRange(ranges: readonly IpRange[], address: IpAddress): boolean {
  const judged = embeddedIPv4(address) ?? address;
  for (let i = 0; i < ranges.length; i++) if (inRange(ranges[i]!, judged)) return true;
  return false;
}
