// The metrics listener: `GET /metrics` in Prometheus text format on its own address, apart from the API and its keys.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Metrics } from './metrics.js';

export interface MetricsListener {
  /** http://host:port/metrics */
  readonly url: string;
  close(): Promise<void>;
}

export async function listenForScrapes(metrics: Metrics, host: string, port: number, onError: (error: unknown) => void): Promise<MetricsListener> {
  const server = http.createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' || path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'only GET /metrics is served here', code: 'not_found' }));
      return;
    }
    metrics.registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      (error: unknown) => {
        onError(error);
        response.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'metrics could not be collected', code: 'unavailable' }));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}/metrics`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
