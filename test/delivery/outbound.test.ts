// The service's own outbound fetches (component_url) follow redirects hop by hop, each hop checked before it is requested.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchText, fetchTextCheckingHops, OutboundBlockedError } from '../../src/delivery/outbound.js';

/** A host that answers each path as told, and counts what it was asked. */
class Host {
  readonly asked: string[] = [];
  private readonly server: http.Server;
  constructor(answer: (path: string, response: http.ServerResponse) => void) {
    this.server = http.createServer((request, response) => {
      this.asked.push(request.url!);
      answer(request.url!, response);
    });
  }
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const redirect = (response: http.ServerResponse, status: number, location?: string) => {
  response.writeHead(status, location === undefined ? {} : { location });
  response.end();
};

describe('fetchText', () => {
  let inside: Host;
  let outside: Host;
  const open = { allowPrivateNetwork: true, timeoutMs: 5000, maxBytes: 10_000 };

  beforeAll(async () => {
    inside = await new Host((_path, response) => response.end('inside')).start();
    outside = await new Host((path, response) => {
      if (path === '/relative') return redirect(response, 302, '/code.js');
      if (path === '/code.js') return response.end('module.exports = {};');
      if (path === '/inside') return redirect(response, 307, `${inside.url}/secret`);
      if (path.startsWith('/loop')) return redirect(response, 301, `/loop${path.length}`);
      if (path === '/nowhere') return redirect(response, 302);
      if (path === '/ftp') return redirect(response, 308, 'ftp://example.com/x.js');
      response.writeHead(404).end();
    }).start();
  });
  afterAll(async () => {
    await inside?.close();
    await outside?.close();
  });

  it('follows a relative redirect to the code', async () => {
    expect(await fetchText(`${outside.url}/relative`, open)).toBe('module.exports = {};');
  });

  it('checks a redirect before requesting it: a refused hop is never asked', async () => {
    const insidePort = new URL(inside.url).port;
    const refuseInside = (url: URL) => {
      if (url.port === insidePort) throw new OutboundBlockedError(`${url.hostname} is a private address; outbound requests may not reach it`);
    };
    const before = inside.asked.length;
    const failure = await fetchTextCheckingHops(`${outside.url}/inside`, open, refuseInside).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OutboundBlockedError);
    expect((failure as Error).message).toBe('127.0.0.1 is a private address; outbound requests may not reach it');
    expect(inside.asked.length).toBe(before);
  });

  it('gives up after five redirects, having made six requests', async () => {
    const before = outside.asked.length;
    await expect(fetchText(`${outside.url}/loop`, open)).rejects.toThrow(`${outside.url}/loop redirects more than 5 times`);
    expect(outside.asked.length - before).toBe(6);
  });

  it('refuses a redirect without a Location, or to another scheme than http(s)', async () => {
    await expect(fetchText(`${outside.url}/nowhere`, open)).rejects.toThrow(`${outside.url}/nowhere answered a redirect without a Location`);
    await expect(fetchText(`${outside.url}/ftp`, open)).rejects.toThrow(`${outside.url}/ftp redirects to ftp: URLs, not http or https`);
  });
});
