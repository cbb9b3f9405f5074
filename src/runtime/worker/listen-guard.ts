// Refuses listening sockets and chosen ports to component code (TCP servers, bound ports, multicast groups): a component serves no one, and a port it held would be the host's.
import os from 'node:os';
import { handleClasses, replaceMethod } from './socket-handles.js';

const UV_EACCES = -os.constants.errno.EACCES;
// Pinned now: component code may later replace Reflect.apply, which a bind that is let through calls.
const apply = Reflect.apply;

/**
 * A worker's TCP server would answer on the server's host (every interface with `0.0.0.0`) for as long as the worker
 * lives: a way in for anyone who can reach the host, and a port taken from the host's own services. The handles'
 * `listen` is refused, so `net`, `http`, `https`, `http2` and `tls` servers fail with `EACCES` ('error'), as do Unix
 * socket servers. A TCP `bind` stays for port 0: outgoing connections bind to a local address with `localAddress`.
 * Must run before any component code.
 */
export function refuseListening(onRefusal: (message: string) => void): void {
  const { tcp, pipe, udp } = handleClasses();
  refuseChosenPorts(tcp, 'TCP', onRefusal);
  refuseChosenPorts(udp, 'UDP', onRefusal);
  refuseMulticast(udp, onRefusal);
  for (const prototype of [tcp, pipe]) {
    replaceMethod(
      prototype,
      'listen',
      () =>
        function refusedListen(this: object) {
          onRefusal('listen refused: component code may not accept connections (a server in a worker would be open on the host)');
          return UV_EACCES;
        },
    );
  }
}

/**
 * A port a socket binds is the host's: held by a TCP socket that never listens (a raw handle's `bind`, or `localPort`
 * on a connection that never completes) it is taken from the host's own services for as long as the worker lives, and
 * a UDP socket bound to it hears every datagram the host's network sends there. So `bind` takes port 0 only, the
 * ephemeral port a client's socket gets anyway (a UDP client binds it on its first send, and hears the answers).
 */
function refuseChosenPorts(prototype: object, protocol: string, onRefusal: (message: string) => void): void {
  for (const name of ['bind', 'bind6']) {
    replaceMethod(
      prototype,
      name,
      (original) =>
        function guardedBind(this: object, ...args: unknown[]) {
          if (args[1] === 0) return apply(original, this, args);
          onRefusal(`listen refused: component code may not take ${protocol} port ${String(args[1])} (a port in a worker is the host's)`);
          return UV_EACCES;
        },
    );
  }
}

/** A UDP socket that joins a multicast group hears the local network's announcements (mDNS, SSDP), a way in from it. */
function refuseMulticast(udp: object, onRefusal: (message: string) => void): void {
  for (const name of ['addMembership', 'addSourceSpecificMembership']) {
    replaceMethod(
      udp,
      name,
      () =>
        function refusedMembership(this: object) {
          onRefusal('listen refused: component code may not join a multicast group (it would hear the local network)');
          return UV_EACCES;
        },
    );
  }
}
