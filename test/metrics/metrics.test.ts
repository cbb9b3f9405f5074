// Prometheus metrics on their own listener: a scrape after real traffic (ingress, runs that succeed and fail, an SSE
// client, a webhook delivery, a timer) shows each metric with bounded labels and no ids; the API port serves none.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config.js';
import { client, request } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { openStream, startReceiver, type Receiver } from '../delivery/helpers.js';

/** The samples of a Prometheus text exposition: `name{labels}` → value. */
function parseExposition(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    samples.set(match[1]!, Number(match[2]));
  }
  return samples;
}

/** Sends `text` as is and resolves with the first line of the answer, once the server has closed the connection. */
function rawRequest(at: URL, text: string): Promise<{ status: string }> {
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = net.connect(Number(at.port), at.hostname, () => socket.end(text));
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.on('error', reject);
    socket.on('close', () => resolve({ status: answer.split('\r\n')[0]! }));
  });
}

describe('--metrics-port', () => {
  it('is off by default, and takes a port', () => {
    expect(resolveConfig({}).metricsPort).toBeUndefined();
    expect(resolveConfig({}).metricsHost).toBe('127.0.0.1');
  });
});

describe.each(DIALECTS)('metrics on %s', (dialect) => {
  let server: TestServer;
  let receiver: Receiver;
  let key: string;

  beforeAll(async () => {
    server = await startTestServer(dialect, { metricsPort: 0, minTimerInterval: 1, allowPrivateNetwork: true });
    receiver = await startReceiver();
    key = (await server.createUser({ plan: 'paid' })).apiKey;
  });
  afterAll(async () => {
    await receiver?.close();
    await server?.destroy();
  });

  const scrape = async () => {
    const answer = await fetch(server.running.metricsUrl!);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await answer.text();
    return { text, samples: parseExposition(text) };
  };

  it('counts requests, runs, events, deliveries, timers, SSE clients and workers, with no id in any label', async () => {
    const api = client(server.url, key);
    const deployed = await api.post('/v1/sources', {
      component_code:
        'export default { name: "m", version: "0.0.1", props: { http: "$.interface.http" }, async run(e) { if (e.body.fail) throw new Error("no"); this.$emit(e.body); } };',
    });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    const { id } = deployed.body.data;
    const hook = await api.post(`/v1/webhooks?${new URLSearchParams({ url: `${receiver.url}/hook`, name: 'm', description: 'm' })}`);
    expect((await api.post(`/v1/subscriptions?${new URLSearchParams({ emitter_id: id, listener_id: hook.body.data.id })}`)).status).toBe(200);
    const timer = await api.post('/v1/sources', {
      component_code:
        'export default { name: "t", version: "0.0.1", props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 1 } } }, async run() {} };',
    });
    expect(timer.status).toBe(200);
    const stream = openStream(`${server.url}/v1/sources/${id}/sse`, key);
    try {
      await stream.opened;
      const endpoint = deployed.body.data.configured_props.http.endpoint_url;
      for (let n = 1; n <= 3; n++) expect((await request('POST', endpoint, { body: { n } })).status).toBe(200);
      expect((await request('POST', endpoint, { body: { fail: true } })).status).toBe(200);
      await waitFor(
        async () => receiver.on('/hook').length,
        (count) => count === 3,
        { what: 'three webhook deliveries' },
      );
      const { text, samples } = await waitFor(
        scrape,
        ({ samples: s }) =>
          (s.get('tributary_timers_due_lag_seconds_count') ?? 0) >= 1 &&
          (s.get('tributary_webhook_deliveries_total{outcome="delivered"}') ?? 0) >= 3 &&
          // The failing request runs after the three delivered ones, possibly in a batch of its own.
          s.has('tributary_invocations_total{outcome="error"}'),
        {
          what: 'a timer fired, the deliveries recorded and the failed run counted',
        },
      );
      expect(samples.get('tributary_http_requests_total{route="/e/:endpointId",status="200"}')).toBe(4);
      expect(samples.get('tributary_http_requests_total{route="/v1/sources",status="200"}')).toBe(2);
      expect(samples.get('tributary_invocations_total{outcome="ok"}')).toBeGreaterThanOrEqual(3);
      expect(samples.get('tributary_invocations_total{outcome="error"}')).toBe(1);
      expect(samples.get('tributary_invocation_duration_seconds_count')).toBeGreaterThanOrEqual(4);
      // Three emitted events, the failed run's $errors event, and console lines are not counted as emits here.
      expect(samples.get('tributary_events_emitted_total')).toBeGreaterThanOrEqual(4);
      expect(samples.get('tributary_sse_clients')).toBe(1);
      expect(samples.get('tributary_queue_depth')).toBeGreaterThanOrEqual(0);
      const workers = ['starting', 'busy', 'idle'].map((state) => samples.get(`tributary_workers{state="${state}"}`) ?? 0);
      expect(workers.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1);
      expect(samples.has('tributary_process_process_cpu_user_seconds_total')).toBe(true);
      expect(samples.has('tributary_process_nodejs_eventloop_lag_seconds')).toBe(true);
      // Labels name routes, statuses, outcomes and states: never an id or a URL of a resource.
      expect(text).not.toMatch(/(?:dc|sc|p|wh|en|u|inv|apn|sub)_[0-9a-z]{26}/);
      expect(text).not.toContain(receiver.url);
    } finally {
      stream.source.close();
    }
    const after = await waitFor(scrape, ({ samples: s }) => s.get('tributary_sse_clients') === 0, { what: 'the stream to close' });
    expect(after.samples.get('tributary_sse_clients')).toBe(0);
  });

  it('counts the requests answered before any route, broken percent-encoding and malformed HTTP, as unmatched', async () => {
    const before = (await scrape()).samples.get('tributary_http_requests_total{route="unmatched",status="400"}') ?? 0;
    const broken = await request('GET', `${server.url}/v1/sources/%ff`);
    expect([broken.status, broken.body]).toEqual([400, { error: 'the path is not valid percent-encoded text', code: 'invalid_request' }]);
    const { status } = await rawRequest(new URL(server.url), 'FOO /v1/users/me HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(status).toBe('HTTP/1.1 400 Bad Request');
    // Both were answered 400 and counted nowhere: an attack or a broken client did not show in the metrics.
    expect((await scrape()).samples.get('tributary_http_requests_total{route="unmatched",status="400"}')).toBe(before + 2);
  });

  it('serves only GET /metrics, /healthz and /readyz there, and no metrics on the API port', async () => {
    const notFound = [404, { error: 'only GET /metrics, /healthz and /readyz are served here', code: 'not_found' }];
    const other = await fetch(server.running.metricsUrl!.replace('/metrics', '/v1/users/me'));
    expect([other.status, await other.json()]).toEqual(notFound);
    const posted = await fetch(server.running.metricsUrl!.replace('/metrics', '/healthz'), { method: 'POST' });
    expect([posted.status, await posted.json()]).toEqual(notFound);
    const onApi = await fetch(`${server.url}/metrics`);
    expect(onApi.status).toBe(404);
  });

  it('answers the health probes as the API port does, for a worker node, which has no other port', async () => {
    for (const path of ['/healthz', '/readyz']) {
      const [here, onApi] = await Promise.all([fetch(server.running.metricsUrl!.replace('/metrics', path)), fetch(`${server.url}${path}`)]);
      const body = await here.json();
      expect([here.status, here.headers.get('content-type'), body], path).toEqual([200, 'application/json; charset=utf-8', await onApi.json()]);
    }
    expect(await (await fetch(server.running.metricsUrl!.replace('/metrics', '/healthz'))).json()).toEqual({ status: 'ok', database: 'ok' });
  });
});
