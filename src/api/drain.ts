// How a graceful stop lets the API's keep-alive connections go without closing one under a request being written on it.
import type { Server } from 'node:http';
import net, { type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * How long, once a stop has begun, a connection with nothing running may stay open: a request a client sends on it
 * meanwhile is answered 503 with `Connection: close` rather than cut off by the close.
 */
export const DRAIN_WINDOW_MS = 1000;

/** Requests read on each connection and not yet answered: more than one when its client pipelines them. */
const unanswered = new WeakMap<Socket, number>();

/**
 * During a stop, the last answer owed on a connection (to a request in flight when it began too) says
 * `Connection: close`, so that the connection ends after it; an earlier one does not, or the requests the client
 * pipelined behind it would go unanswered.
 */
export function closeConnectionsAfterLastAnswer(app: FastifyInstance, isStopping: () => boolean): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const { socket } = request.raw;
    unanswered.set(socket, (unanswered.get(socket) ?? 0) + 1);
    done();
  });
  // On the listener Fastify sets on every answer anyway: one more per request would cost every request of the load.
  // A request whose client went away is never counted down; its connection is gone with it.
  app.addHook('onResponse', (request, _reply, done) => {
    const { socket } = request.raw;
    unanswered.set(socket, Math.max(0, (unanswered.get(socket) ?? 1) - 1));
    done();
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    if (isStopping() && unanswered.get(request.raw.socket) === 1) reply.header('connection', 'close');
    done(null, payload);
  });
}

/**
 * Stops accepting connections at once (a new one is refused) and resolves once every open connection has ended: each
 * after its last answer, or, with nothing running on it when the window ends, closed then.
 */
export function drainConnections(server: Server, windowMs = DRAIN_WINDOW_MS): Promise<void> {
  if (!server.listening) return Promise.resolve();
  return new Promise((resolve) => {
    const idleClosed = setTimeout(() => server.closeIdleConnections(), windowMs);
    // net.Server's close, not http.Server's: that one also destroys every idle keep-alive connection at once, which a
    // client may be writing its next request on (it sees a reset, never an answer).
    net.Server.prototype.close.call(server, () => {
      clearTimeout(idleClosed);
      resolve();
    });
  });
}
