// A TCP proxy in front of a real server (PostgreSQL) that a test can cut and restore: an outage of that server as
// the service sees it (connections reset, new ones refused), without stopping a server other tests share.
import net from 'node:net';

export interface TcpProxy {
  port: number;
  /** Resets every open connection and refuses new ones. */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let down = false;
  const server = net.createServer((client) => {
    if (down) {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect(targetPort, targetHost);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
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
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
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
