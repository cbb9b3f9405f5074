// Refuses listening sockets to component code (TCP servers, UDP ports, multicast groups): a component serves no one, and a port it held would be open on the host.
import os from 'node:os';
import { handleClasses, replaceMethod } from './socket-handles.js';

const UV_EACCES = -os.constants.errno.EACCES;
// Pinned now: component code may later replace Reflect.apply, which a bind that is let through calls.
const apply = Reflect.apply;

/**
 * A worker's TCP server would answer on the server's host (every interface with `0.0.0.0`) for as long as the worker
 * lives: a way in for anyone who can reach the host, and a port taken from the host's own services. The handles'
 * `listen` is refused, so `net`, `http`, `https`, `http2` and `tls` servers fail with `EACCES` ('error'), as do Unix
 * socket servers. A TCP `bind` stays: outgoing connections bind to a local address with `localAddress`. Must run before
 * any component code.
 */
export function refuseListening(onRefusal: (message: string) => void): void {
  const { tcp, pipe, udp } = handleClasses();
  refuseUdpPorts(udp, onRefusal);
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
 * A UDP socket bound to a port of the component's choosing hears every datagram the host's network sends there, and one
 * that joins a multicast group hears the local network's announcements (mDNS, SSDP): ways in, from the network the
 * egress guard keeps component code out of. So `bind` takes port 0 only, the ephemeral port a client socket binds
 * on its first send (the datagrams it hears are the answers to what it sent), and joining a group is refused.
 */
function refuseUdpPorts(udp: object, onRefusal: (message: string) => void): void {
  for (const name of ['bind', 'bind6']) {
    replaceMethod(
      udp,
      name,
      (original) =>
        function guardedUdpBind(this: object, address: unknown, port: unknown, flags: unknown) {
          if (port === 0) return apply(original, this, [address, port, flags]);
          onRefusal(`listen refused: component code may not take UDP port ${String(port)} (a port in a worker would be open on the host)`);
          return UV_EACCES;
        },
    );
  }
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
