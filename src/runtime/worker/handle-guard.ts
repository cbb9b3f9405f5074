// Holds the raw handles beneath net, dgram and dns (TCP, Pipe, UDP, the c-ares channel) to the egress policy as well.
import os from 'node:os';
import type { EgressRules } from './egress-rules.js';
import { handleClasses, replaceMethod as replace } from './socket-handles.js';

/** What a refused handle call returns: libuv's negative errno, which net and dgram turn into their usual errors. */
const UV_EACCES = -os.constants.errno.EACCES;
// Pinned now: component code may later replace Reflect.apply or Set's methods, which the checks below call.
const apply = Reflect.apply;
const setHas = Function.prototype.call.bind(Set.prototype.has) as (set: Set<string>, value: string) => boolean;
const setAdd = Function.prototype.call.bind(Set.prototype.add) as (set: Set<string>, value: string) => Set<string>;
const setClear = Function.prototype.call.bind(Set.prototype.clear) as (set: Set<string>) => void;
const isArray = Array.isArray;
const defineProperty = Object.defineProperty;

export interface HandleGuard {
  /**
   * Records a destination the guard above allowed by its host name (`--egress-allow host[:port]`): the handle sees the
   * address alone, and must let that connection through.
   */
  approve(address: string, port: number): void;
}

/** At most this many approved destinations are remembered; past it the list starts again (a later lookup re-approves). */
const MAX_APPROVED = 10_000;

/**
 * Every socket's `_handle` is reachable from component code, and so is its class (`_handle.constructor`); a request
 * object for it can be caught as net fills it in (a setter on `Object.prototype` for `oncomplete`). With both, code
 * connected a fresh handle to any address, loopback included, without passing `Socket.prototype.connect`. So the
 * handles' own connect and send methods check the address too. Must run before any component code, and before the
 * guard above replaces `net.Socket.prototype.connect` (the classes are found through the original).
 */
export function guardRawHandles(rules: EgressRules, refuse: (message: string) => Error): HandleGuard {
  const approved = new Set<string>();
  let approvedCount = 0;
  /** Undefined when allowed. Only a string address and an integer port are judged; anything else is refused. */
  const refusal = (address: unknown, port: unknown): string | undefined => {
    if (typeof address !== 'string' || typeof port !== 'number' || port % 1 !== 0) {
      return `egress refused: a socket handle was asked for ${typeof address} ${typeof port}, not an address and a port`;
    }
    if (setHas(approved, `${address}|${port}`)) return undefined;
    return rules.refusal({ host: address, address, port });
  };
  const { tcp, pipe, udp, channel } = handleClasses();

  // TCP: connect(req, address, port) and connect6(req, address, port). The values checked are the values passed on.
  for (const name of ['connect', 'connect6']) {
    replace(
      tcp,
      name,
      (original) =>
        function guardedTcpConnect(this: object, request: unknown, address: unknown, port: unknown) {
          const why = refusal(address, port);
          if (why === undefined) return apply(original, this, [request, address, port]);
          refuse(why);
          return UV_EACCES;
        },
    );
  }
  // Unix sockets: connect(req, path), local services all (the guard is installed only without --allow-private-network).
  replace(
    pipe,
    'connect',
    () =>
      function guardedPipeConnect(this: object, _request: unknown, path: unknown) {
        refuse(rules.socketPathRefusal(typeof path === 'string' ? path : typeof path) ?? 'egress refused: a Unix socket');
        return UV_EACCES;
      },
  );
  // UDP: connect(address, port), and send(req, list, count, port, address, hasCallback) when not connected.
  for (const name of ['connect', 'connect6']) {
    replace(
      udp,
      name,
      (original) =>
        function guardedUdpConnect(this: object, address: unknown, port: unknown) {
          const why = refusal(address, port);
          if (why === undefined) return apply(original, this, [address, port]);
          refuse(why);
          return UV_EACCES;
        },
    );
  }
  for (const name of ['send', 'send6']) {
    replace(
      udp,
      name,
      (original) =>
        function guardedUdpSend(this: object, ...args: unknown[]) {
          if (args.length < 6) return apply(original, this, [args[0], args[1], args[2], args[3]]);
          const port = args[3];
          const address = args[4];
          const why = refusal(address, port);
          if (why === undefined) return apply(original, this, [args[0], args[1], args[2], port, address, args[5]]);
          refuse(why);
          return UV_EACCES;
        },
    );
  }
  // DNS servers: setServers([[family, address, port], …]), copied as checked.
  replace(
    channel,
    'setServers',
    (original) =>
      function guardedSetServers(this: object, servers: unknown) {
        if (!isArray(servers)) throw refuse('egress refused: DNS servers must be a list');
        const checked: unknown[] = [];
        for (let i = 0; i < servers.length; i++) {
          const server: unknown = servers[i];
          if (!isArray(server)) throw refuse('egress refused: a DNS server must be [family, address, port]');
          const family: unknown = server[0];
          const address: unknown = server[1];
          const port: unknown = server[2];
          const why = refusal(address, port === 0 ? 53 : port);
          if (why !== undefined) throw refuse(why);
          // Defined, not assigned: an index setter on Array.prototype would take an assignment instead. The descriptor
          // has no prototype: an inherited `get` would make it invalid.
          defineProperty(checked, i, {
            __proto__: null,
            value: [family, address, port],
            writable: true,
            enumerable: true,
            configurable: true,
          } as PropertyDescriptor);
        }
        return apply(original, this, [checked]);
      },
  );

  return {
    approve(address, port) {
      if (approvedCount >= MAX_APPROVED) {
        setClear(approved);
        approvedCount = 0;
      }
      setAdd(approved, `${address}|${port}`);
      approvedCount++;
    },
  };
}
