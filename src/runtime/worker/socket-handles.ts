// The classes of the raw handles beneath net, dgram and dns, and a way to replace their methods for good.
import dgram from 'node:dgram';
import dns from 'node:dns';
import net from 'node:net';

export type Method = (this: object, ...args: unknown[]) => unknown;

/**
 * Replaces a prototype method for good. Writable, because Node's dgram copies `send6`, `bind6` and `connect6` onto each
 * IPv6 handle by assignment; once replaced, the original is out of component code's reach, so there is nothing it
 * could put back.
 */
export function replaceMethod(prototype: object, name: string, make: (original: Method) => Method): void {
  const original = (prototype as Record<string, unknown>)[name];
  if (typeof original !== 'function') throw new Error(`the ${name} method of a socket handle was not found`);
  Object.defineProperty(prototype, name, { value: make(original as Method), writable: true, configurable: false, enumerable: false });
}

/** The handle classes' prototypes, found through throwaway sockets that fail their argument checks before any I/O. */
export function handleClasses(): { tcp: object; pipe: object; udp: object; channel: object } {
  const prototypeOf = (handle: unknown, what: string): object => {
    const found = (handle as { constructor?: { prototype?: object } } | undefined)?.constructor?.prototype;
    if (!found) throw new Error(`the ${what} handle class was not found`);
    return found;
  };
  const socketHandle = (options: object, what: string): object => {
    const socket = new net.Socket();
    try {
      socket.connect(options as net.SocketConnectOpts);
    } catch {
      // Expected: the handle is made before the port or path is checked.
    }
    const handle = (socket as unknown as { _handle?: unknown })._handle;
    socket.destroy();
    return prototypeOf(handle, what);
  };
  const tcp = socketHandle({ port: -1, host: '127.0.0.1' }, 'TCP');
  const pipe = socketHandle({ path: 1 }, 'Pipe');
  const udpSocket = dgram.createSocket('udp4');
  const state = Object.getOwnPropertySymbols(udpSocket).find((symbol) => symbol.description === 'state symbol');
  const udp = prototypeOf(state && (udpSocket as unknown as Record<symbol, { handle?: unknown }>)[state]?.handle, 'UDP');
  udpSocket.close();
  const channel = prototypeOf((new dns.Resolver() as unknown as { _handle?: unknown })._handle, 'DNS channel');
  return { tcp, pipe, udp, channel };
}
