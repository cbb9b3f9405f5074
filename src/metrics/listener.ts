// The metrics listener: `GET /metrics` in Prometheus text format on its own address, apart from the API and its keys,
// and the health probes, which a worker node (no API port) answers only here.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Metrics } from './metrics.js';

/** A health probe's answer, as HealthService gives it (declared here so that metrics, which the engine uses, needs no service). */
interface ProbeAnswer {
  status: number;
  body: object;
  retryAfterSeconds?: number;
}

/** The health probes the API port answers too (HealthService). */
export interface HealthProbes {
  livenessAnswer(): Promise<ProbeAnswer>;
  readinessAnswer(): Promise<ProbeAnswer>;
}

export interface MetricsListener {
  /** http://host:port/metrics */
  readonly url: string;
  close(): Promise<void>;
}

const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };

function sendProbeAnswer(response: http.ServerResponse, answer: ProbeAnswer): void {
  const headers = answer.retryAfterSeconds === undefined ? JSON_TYPE : { ...JSON_TYPE, 'retry-after': String(answer.retryAfterSeconds) };
  response.writeHead(answer.status, headers).end(JSON.stringify(answer.body));
}

export async function listenForScrapes(
  metrics: Metrics,
  health: HealthProbes,
  at: { host: string; port: number },
  onError: (error: unknown) => void,
): Promise<MetricsListener> {
  const server = http.createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    const get = request.method === 'GET';
    const probe: Promise<ProbeAnswer> | undefined = !get
      ? undefined
      : path === '/healthz'
        ? health.livenessAnswer()
        : path === '/readyz'
          ? health.readinessAnswer()
          : undefined;
    if (!get || (path !== '/metrics' && !probe)) {
      const body = { error: 'only GET /metrics, /healthz and /readyz are served here', code: 'not_found' };
      response.writeHead(404, JSON_TYPE).end(JSON.stringify(body));
      return;
    }
    if (probe) {
      probe.then(
        (answer) => sendProbeAnswer(response, answer),
        (error: unknown) => {
          onError(error);
          sendProbeAnswer(response, { status: 503, body: { error: 'the check could not be made', code: 'unavailable' }, retryAfterSeconds: 5 });
        },
      );
      return;
    }
    metrics.registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      (error: unknown) => {
        onError(error);
        response.writeHead(503, JSON_TYPE).end(JSON.stringify({ error: 'metrics could not be collected', code: 'unavailable' }));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(at.port, at.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}/metrics`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
