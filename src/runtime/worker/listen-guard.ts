// Refuses listening sockets to component code: a component serves no one, and a port it held would be open on the host.
import os from 'node:os';
import { handleClasses, replaceMethod } from './socket-handles.js';

const UV_EACCES = -os.constants.errno.EACCES;

/**
 * A worker's TCP server would answer on the server's host (every interface with `0.0.0.0`) for as long as the worker
 * lives: a way in for anyone who can reach the host, and a port taken from the host's own services. The handles'
 * `listen` is refused, so `net`, `http`, `https`, `http2` and `tls` servers fail with `EACCES` ('error'), as do Unix
 * socket servers. A TCP `bind` stays: outgoing connections bind to a local address with `localAddress`. Must run before
 * any component code.
 */
export function refuseListening(onRefusal: (message: string) => void): void {
  const { tcp, pipe } = handleClasses();
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
