// Holds component code to the egress policy on every way out of the worker: TCP and TLS (so http, https, http2,
// fetch and WebSocket), Unix sockets, UDP and custom DNS servers, checked on the address actually connected to.
import dgram from 'node:dgram';
import dns from 'node:dns';
import net from 'node:net';
import { type EgressPolicy, EgressRules } from './egress-rules.js';
import { guardRawHandles } from './handle-guard.js';
import { parseIpAddress } from './ip-address.js';

/** The error a refused connection fails with; its message names the destination and the setting to change. */
export class EgressRefusedError extends Error {
  override name = 'EgressRefusedError';
  readonly code = 'EGRESS_REFUSED';
}

type LookupCallback = (error: Error | null, address: string | dns.LookupAddress[], family?: number) => void;
type Lookup = (hostname: string, options: dns.LookupOptions, callback: LookupCallback) => void;

/** Replaces a method for good: component code can neither put the original back nor delete the guard. */
function seal<T extends object, K extends keyof T>(target: T, key: K, value: T[K]): void {
  Object.defineProperty(target, key, { value, writable: false, configurable: false, enumerable: false });
}

/**
 * Installs the guard; must run before any component code. `onRefusal` hears each refusal (the run's log), since
 * libraries often wrap the error in one of their own ("fetch failed").
 */
export function installEgressGuard(policy: EgressPolicy, onRefusal: (message: string) => void): void {
  if (policy.allowPrivateNetwork) return;
  const rules = new EgressRules(policy);
  // Captured now: whatever component code later does to `dns.lookup`, resolution for the guard stays the system's.
  const systemLookup = dns.lookup.bind(dns) as unknown as Lookup;
  const refuse = (message: string): EgressRefusedError => {
    onRefusal(message);
    return new EgressRefusedError(message);
  };
  // First: it finds the handle classes through the original `net.Socket.prototype.connect`.
  const handles = guardRawHandles(rules, refuse);

  /** A lookup that passes on only the addresses the policy allows, resolving with `inner` (the caller's, if any). */
  const guardedLookup =
    (inner: Lookup, port: number): Lookup =>
    (hostname, options, callback) => {
      const wantsAll = typeof options === 'object' && options !== null && options.all === true;
      const lookupOptions = typeof options === 'object' && options !== null ? { ...options, all: true } : { all: true };
      inner(hostname, lookupOptions, (error, addresses, family) => {
        if (error) return callback(error, '', 4);
        // A caller's own lookup may ignore `all` and answer with one address.
        const list: dns.LookupAddress[] = Array.isArray(addresses)
          ? addresses
          : [{ address: String(addresses), family: family ?? net.isIP(String(addresses)) }];
        const allowed = list.filter((entry) => rules.refusal({ host: hostname, address: entry.address, port }) === undefined);
        // An address allowed by its name alone (--egress-allow host[:port]) must pass the handle's own check too.
        for (const entry of allowed) {
          if (rules.refusal({ host: entry.address, address: entry.address, port }) !== undefined) handles.approve(entry.address, port);
        }
        if (allowed.length === 0) {
          const first = list[0]?.address ?? hostname;
          return callback(refuse(rules.refusal({ host: hostname, address: first, port }) ?? `egress refused: ${hostname}`), '', 4);
        }
        if (wantsAll) return callback(null, allowed);
        callback(null, allowed[0]!.address, allowed[0]!.family);
      });
    };

  // Every TCP connection (net, tls, http, https, http2, fetch, WebSocket) goes through this method.
  const connect = net.Socket.prototype.connect as (this: net.Socket, ...args: unknown[]) => net.Socket;
  seal(net.Socket.prototype, 'connect', function guardedConnect(this: net.Socket, ...args: unknown[]): net.Socket {
    const [options, callback] = connectOptions(args);
    let refusal: string | undefined;
    if (typeof options.path === 'string') refusal = rules.socketPathRefusal(options.path);
    else {
      const host = typeof options.host === 'string' && options.host !== '' ? options.host : 'localhost';
      const port = Number(options.port);
      // Read by hand (ip-address.ts): net.isIP answers through RegExp.prototype.exec, which component code can change.
      if (parseIpAddress(host)) refusal = rules.refusal({ host, address: host, port });
      else {
        // A name allowed by name is resolved by the system: a lookup of the code's own could point it anywhere.
        const own = rules.allowsByName(host, port) ? undefined : (options.lookup as Lookup | undefined);
        options.lookup = guardedLookup(own ?? systemLookup, port);
      }
    }
    if (refusal !== undefined) {
      // Failed the way a connection whose name does not resolve fails, so that every caller (http, tls, http2,
      // fetch) reports it through the path it already has for that.
      const error = refuse(refusal);
      const failingLookup: Lookup = (_hostname, _options, fail) => fail(error, '', 4);
      return connect.call(this, { host: 'egress-refused.invalid', port: 1, lookup: failingLookup }, ...(callback ? [callback] : []));
    }
    return connect.call(this, options, ...(callback ? [callback] : []));
  } as typeof net.Socket.prototype.connect);

  // UDP: the destination of each send and connect is resolved here, through the guard, and handed on as an
  // address; the socket's own lookup (which a component may have chosen) only ever sees that address again.
  const guardedUdp = (
    original: (this: dgram.Socket, ...args: unknown[]) => unknown,
    destinationAt: (socket: dgram.Socket, args: unknown[]) => { portIndex: number; addressIndex: number } | undefined,
  ) =>
    function guarded(this: dgram.Socket, ...args: unknown[]) {
      const state = udpState(this);
      if (state?.handle) state.handle.lookup = systemUdpLookup(this, systemLookup);
      const at = destinationAt(this, args);
      if (!at) return original.apply(this, args);
      const port = Number(args[at.portIndex]);
      const family = udpFamily(this);
      const requested =
        typeof args[at.addressIndex] === 'string' && args[at.addressIndex] !== '' ? (args[at.addressIndex] as string) : family === 6 ? '::1' : '127.0.0.1';
      guardedLookup(systemLookup, port)(requested, { family }, (error, address) => {
        if (error) {
          const callback = args.findLast((arg): arg is (e: Error) => void => typeof arg === 'function');
          if (callback) callback(error);
          else this.emit('error', error);
          return;
        }
        const resolved = [...args];
        resolved[at.addressIndex] = address;
        original.apply(this, resolved);
      });
    };
  // send(msg, port[, address][, cb]) or send(msg, offset, length, port[, address][, cb]); a connected socket's
  // destination was checked when it connected.
  const sendDestination = (socket: dgram.Socket, args: unknown[]) => {
    if (udpConnected(socket)) return undefined;
    const long = typeof args[1] === 'number' && typeof args[2] === 'number' && (typeof args[3] === 'number' || typeof args[3] === 'string');
    return long ? { portIndex: 3, addressIndex: 4 } : { portIndex: 1, addressIndex: 2 };
  };
  seal(dgram.Socket.prototype, 'send', guardedUdp(dgram.Socket.prototype.send as never, sendDestination) as never);
  seal(dgram.Socket.prototype, 'connect', guardedUdp(dgram.Socket.prototype.connect as never, () => ({ portIndex: 0, addressIndex: 1 })) as never);

  // Custom DNS servers: the system's resolver stays, but code may not send queries to an internal one.
  const checkServers = (servers: readonly string[]) => {
    for (const server of servers) {
      const parsed = /^\[([^\]]+)\](?::(\d+))?$/.exec(server) ?? /^([^:]+)(?::(\d+))?$/.exec(server);
      const address = parsed?.[1] ?? server;
      const refusal = rules.refusal({ host: address, address, port: Number(parsed?.[2] ?? 53) });
      if (refusal !== undefined) throw refuse(refusal);
    }
  };
  for (const holder of [dns, dns.promises, dns.Resolver.prototype, dns.promises.Resolver.prototype] as Array<{
    setServers(servers: readonly string[]): void;
  }>) {
    const original = holder.setServers;
    seal(holder, 'setServers', function guardedSetServers(this: unknown, servers: readonly string[]) {
      checkServers(servers);
      return original.call(this, servers);
    });
  }
}

interface UdpHandle {
  lookup: (address: string, callback: (error: Error | null, address?: string, family?: number) => void) => void;
}
interface UdpState {
  handle?: UdpHandle;
  connectState?: number;
}

/** dgram keeps its handle under an internal symbol (`Symbol(state symbol)`), found by its description. */
function udpState(socket: dgram.Socket): UdpState | undefined {
  const symbol = Object.getOwnPropertySymbols(socket).find((s) => s.description === 'state symbol');
  return symbol ? (socket as unknown as Record<symbol, UdpState>)[symbol] : undefined;
}

function udpFamily(socket: dgram.Socket): 4 | 6 {
  return (socket as unknown as { type?: string }).type === 'udp6' ? 6 : 4;
}

/** dgram's CONNECT_STATE_CONNECTED is 2. */
function udpConnected(socket: dgram.Socket): boolean {
  return udpState(socket)?.connectState === 2;
}

/** The lookup dgram uses for binds and for the addresses the guard hands on: the system's, never the component's. */
function systemUdpLookup(socket: dgram.Socket, systemLookup: Lookup): UdpHandle['lookup'] {
  const family = udpFamily(socket);
  return (address, callback) => systemLookup(address || (family === 6 ? '::1' : '127.0.0.1'), { family }, callback as LookupCallback);
}

/** The forms `socket.connect` takes: (options[, cb]), (path[, cb]), (port[, host][, cb]), or net.connect's normalised array. */
function connectOptions(args: unknown[]): [Record<string, unknown> & { lookup?: unknown }, (() => void) | undefined] {
  const first = args[0];
  if (Array.isArray(first)) return [{ ...(first[0] as object) }, first[1] as (() => void) | undefined];
  const callback = args.find((arg): arg is () => void => typeof arg === 'function');
  if (typeof first === 'object' && first !== null) return [{ ...(first as object) }, callback];
  if (typeof first === 'string' && !/^\d+$/.test(first)) return [{ path: first }, callback];
  return [{ port: first, ...(typeof args[1] === 'string' && { host: args[1] }) }, callback];
}
