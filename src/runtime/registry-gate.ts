// A forward proxy on loopback, one per npm install, through which npm reaches its registries and nothing else.
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import type { Duplex } from 'node:stream';

export interface GateSettings {
  /** The registries npm is configured with (its `registry` and every `@scope:registry`): only their hosts are reached. */
  registries: string[];
  /** The operator's proxy for npm (`https-proxy`, else `proxy`), which the gate goes through, or undefined. */
  upstream?: string;
  /** The operator's `noproxy`: hosts the gate reaches directly although `upstream` is set. */
  noProxy: string[];
}

const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443' };

/** `hostname:port` as the gate compares them (lower case, the port always written). */
function endpoint(url: URL): string {
  return `${url.hostname.toLowerCase()}:${url.port || DEFAULT_PORTS[url.protocol] || ''}`;
}

/** npm's own rule for `noproxy`: a host matches an entry when it ends with the entry's dot-separated labels. */
function bypassesProxy(hostname: string, noProxy: string[]): boolean {
  const host = hostname.toLowerCase().split('.').reverse();
  return noProxy.some((entry) => {
    const labels = entry.toLowerCase().split('.').filter(Boolean).reverse();
    return labels.length > 0 && labels.every((label, i) => host[i] === label);
  });
}

function proxyAuthorization(proxy: URL): Record<string, string> {
  if (proxy.username === '') return {};
  const credentials = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
  return { 'proxy-authorization': `Basic ${Buffer.from(credentials).toString('base64')}` };
}

/** A socket to `target` (`hostname:port`): direct, or a tunnel through the operator's proxy. */
function openTunnel(hostname: string, port: number, upstream: URL | undefined): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    if (upstream === undefined) {
      const socket = net.connect(port, hostname, () => resolve(socket));
      socket.once('error', reject);
      return;
    }
    const request = (upstream.protocol === 'https:' ? https : http).request({
      host: upstream.hostname,
      port: upstream.port || DEFAULT_PORTS[upstream.protocol],
      method: 'CONNECT',
      path: `${hostname.includes(':') ? `[${hostname}]` : hostname}:${port}`,
      headers: proxyAuthorization(upstream),
    });
    request.once('connect', (response, socket, head) => {
      if (response.statusCode !== 200) {
        socket.destroy();
        reject(new Error(`the proxy answered ${response.statusCode} to CONNECT`));
        return;
      }
      if (head.length > 0) socket.unshift(head);
      resolve(socket);
    });
    request.once('error', reject);
    request.end();
  });
}

/** The status text of a 502: npm shows it, and "Bad Gateway" alone would hide that the registry could not be reached. */
function unreachable(host: string, error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return `registry ${host} unreachable (${code ?? (error instanceof Error ? error.message : String(error))})`.replace(/[^\x20-\x7e]/g, ' ');
}

export class RegistryGate {
  /** What npm asked for that the gate refused (URLs, or `host:port` for a tunnel), in order. */
  readonly refused: string[] = [];
  private readonly allowed: Set<string>;
  private readonly upstream: URL | undefined;
  private readonly server: http.Server;
  private readonly sockets = new Set<Duplex>();

  private constructor(private readonly settings: GateSettings) {
    this.allowed = new Set(settings.registries.map((registry) => endpoint(new URL(registry))));
    this.upstream = settings.upstream ? new URL(settings.upstream) : undefined;
    this.server = http.createServer((req, res) => this.forward(req, res));
    this.server.on('connect', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => this.tunnel(req, socket, head));
    this.server.on('connection', (socket: net.Socket) => this.track(socket));
  }

  /** A gate listening on a loopback port (its `url`); `close()` it when npm is done. */
  static async open(settings: GateSettings): Promise<RegistryGate> {
    const gate = new RegistryGate(settings);
    await new Promise<void>((resolve, reject) => {
      gate.server.once('error', reject);
      gate.server.listen(0, '127.0.0.1', () => resolve());
    });
    return gate;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private track(socket: Duplex): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  }

  /** The operator's proxy for `hostname`, unless their `noproxy` names it. */
  private upstreamFor(hostname: string): URL | undefined {
    return this.upstream && !bypassesProxy(hostname, this.settings.noProxy) ? this.upstream : undefined;
  }

  private parse(target: string): URL | undefined {
    try {
      return new URL(target);
    } catch {
      return undefined;
    }
  }

  /** `CONNECT host:port`, which npm sends for an https URL. */
  private tunnel(req: http.IncomingMessage, client: Duplex, head: Buffer): void {
    this.track(client);
    client.on('error', () => client.destroy());
    const target = this.parse(`https://${req.url ?? ''}`);
    if (target === undefined || !this.allowed.has(endpoint(target))) {
      this.refused.push(target ? `https://${target.host}` : String(req.url));
      client.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n');
      return;
    }
    openTunnel(target.hostname.replace(/^\[|\]$/g, ''), Number(target.port || 443), this.upstreamFor(target.hostname)).then(
      (remote) => {
        this.track(remote);
        remote.on('error', () => client.destroy());
        client.on('close', () => remote.destroy());
        remote.on('close', () => client.destroy());
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length > 0) remote.write(head);
        client.pipe(remote).pipe(client);
      },
      (error: unknown) => client.end(`HTTP/1.1 502 ${unreachable(target.host, error)}\r\nConnection: close\r\n\r\n`),
    );
  }

  /** A request in absolute form (`GET http://host/path`), which npm sends for an http URL. */
  private forward(req: http.IncomingMessage, res: http.ServerResponse): void {
    const target = this.parse(req.url ?? '');
    if (target === undefined || target.protocol !== 'http:' || !this.allowed.has(endpoint(target))) {
      this.refused.push(String(target?.href ?? req.url));
      res.writeHead(403, { connection: 'close' }).end();
      return;
    }
    const headers = { ...req.headers };
    delete headers['proxy-connection'];
    delete headers['proxy-authorization'];
    const upstream = this.upstreamFor(target.hostname);
    const options: http.RequestOptions = upstream
      ? {
          host: upstream.hostname,
          port: upstream.port || DEFAULT_PORTS[upstream.protocol],
          path: target.href,
          headers: { ...headers, ...proxyAuthorization(upstream) },
        }
      : { host: target.hostname.replace(/^\[|\]$/g, ''), port: target.port || 80, path: `${target.pathname}${target.search}`, headers };
    const outgoing = (upstream?.protocol === 'https:' ? https : http).request({ ...options, method: req.method }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    outgoing.on('error', (error) => (res.headersSent ? res.destroy() : res.writeHead(502, unreachable(target.host, error), { connection: 'close' }).end()));
    req.pipe(outgoing);
  }
}
