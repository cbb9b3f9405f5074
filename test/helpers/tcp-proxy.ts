// A TCP proxy in front of a real server (PostgreSQL) that a test can cut and restore, or freeze and thaw: an outage
// of that server as the service sees it, without stopping a server other tests share.
import net from 'node:net';

export interface TcpProxy {
  port: number;
  /** Resets every open connection and refuses new ones. */
  cut(): void;
  restore(): void;
  /** Passes nothing more either way, closing nothing: a server or a link that froze. New connections are held. */
  freeze(): void;
  thaw(): void;
  /**
   * Freezes one connection alone, the one whose end towards the server has local port `upstreamPort` (the
   * `client_port` PostgreSQL shows for it): a link that dropped it without a word while the others carry on.
   */
  freezeOne(upstreamPort: number): boolean;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const pairs = new Set<[net.Socket, net.Socket]>();
  const held = new Set<net.Socket>();
  let down = false;
  let frozen = false;
  const connect = (client: net.Socket) => {
    const upstream = net.connect(targetPort, targetHost);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    client.pipe(upstream).pipe(client);
    client.on('close', () => {
      pairs.delete(pair);
      upstream.destroy();
    });
    upstream.on('close', () => client.destroy());
  };
  const server = net.createServer((client) => {
    if (down) {
      client.resetAndDestroy();
      return;
    }
    if (frozen) {
      client.on('error', () => undefined);
      client.on('close', () => held.delete(client));
      held.add(client);
      return;
    }
    connect(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut() {
      down = true;
      for (const socket of sockets) socket.resetAndDestroy();
    },
    restore() {
      down = false;
    },
    freeze() {
      frozen = true;
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    thaw() {
      frozen = false;
      for (const [client, upstream] of pairs) client.pipe(upstream).pipe(client);
      for (const client of held) connect(client);
      held.clear();
    },
    freezeOne(upstreamPort) {
      for (const [client, upstream] of pairs) {
        if (upstream.localPort !== upstreamPort) continue;
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
        return true;
      }
      return false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of [...sockets, ...held]) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A proxy in front of the PostgreSQL server of `databaseUrl`, and the same URL going through it. */
export async function proxyInFrontOf(databaseUrl: string): Promise<{ proxy: TcpProxy; url: string }> {
  const target = new URL(databaseUrl);
  const proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
  const through = new URL(databaseUrl);
  through.port = String(proxy.port);
  return { proxy, url: through.toString() };
}
