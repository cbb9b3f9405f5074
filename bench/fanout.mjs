// 2. fanout: at a fixed rate, time from the HTTP request to the event arriving at an SSE client and at a
// local webhook receiver. Baselines: the same path through a bare Node HTTP server that forwards each request
// to an SSE client and to the webhook receiver directly, and through the durable relay, which adds the least a
// durable service does per event (bench/lib/durable-relay.mjs).
import { loadgen } from './lib/client.mjs';
import { serverCpuDuring, watched } from './lib/machine.mjs';
import { startDurableRelay, startRelay } from './lib/servers.mjs';
import { cpuPerEvent, int, p50p99 } from './lib/stats.mjs';
import { met, row } from './lib/table.mjs';
import { startTributary } from './lib/tributary.mjs';

export const name = 'fanout';
export const summary = 'events at a fixed rate: request → SSE client and → webhook receiver, p50/p99';

export const ECHO = 'module.exports = { name: "bench-fanout", version: "1", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body) } }';

/** The fan-out load at the configured rate; `kind`, URLs and key are added per server. */
export function fanoutJob(cfg) {
  return { mode: 'fanout', rate: cfg.fanoutRate, warmupMs: cfg.fanoutWarmup * 1000, durationMs: cfg.duration * 1000, graceMs: 10_000 };
}
export const fanoutTimeout = (cfg) => (cfg.fanoutWarmup + cfg.duration) * 1000 + 120_000;

/** The load through a fresh Tributary with one echo source: [[load result, busy-machine note], server + workers CPU ms]. */
export async function fanoutThroughTributary(cfg, log) {
  // The server must reach the receiver on 127.0.0.1; the retention only needs to cover the SSE replay window.
  const server = await startTributary(['--allow-private-network']);
  try {
    const component = await server.api.ok('POST', '/v1/components', { component_code: ECHO });
    const source = await server.api.ok('POST', '/v1/sources', { component_id: component.data.id, name: 'fanout' });
    log(`tributary: ${cfg.fanoutRate} events/s for ${cfg.fanoutWarmup} s warm-up + ${cfg.duration} s`);
    const ingestUrl = `${source.data.configured_props.http.endpoint_url}/bench`;
    const job = { ...fanoutJob(cfg), kind: 'tributary', baseUrl: server.url, key: server.key, sourceId: source.data.id, ingestUrl };
    return await serverCpuDuring(server.pid, () => watched(() => loadgen(job, fanoutTimeout(cfg))));
  } finally {
    await server.stop();
  }
}

/** The same load through the relay `start` starts (`what` names it in the log), and its CPU with its children. */
export async function fanoutThroughRelay(start, what, cfg, log) {
  const relay = await start();
  try {
    log(`baseline: ${what}, same rate`);
    const job = { ...fanoutJob(cfg), kind: 'relay', baseUrl: relay.url, ingestUrl: `${relay.url}/e/bench` };
    return await serverCpuDuring(relay.pid, () => watched(() => loadgen(job, fanoutTimeout(cfg))));
  } finally {
    await relay.stop();
  }
}

export async function run(cfg, log) {
  const [[trib, tribBusy], tribCpuMs] = await fanoutThroughTributary(cfg, log);
  for (const note of trib.notes) log(`tributary: ${note}`);
  const [[base, baseBusy], baseCpuMs] = await fanoutThroughRelay(startRelay, 'bare Node relay', cfg, log);
  const [[floor, floorBusy], floorCpuMs] = await fanoutThroughRelay(
    startDurableRelay,
    'durable relay (a queue row before the 200, a child process, SQLite)',
    cfg,
    log,
  );

  const rate = (r) => `${int(r.achievedRate)}/s offered`;
  const received = (summary, r) => `${int(summary.n)}/${int(r.measured)} received`;
  const figure = (available, summary, r, what) => (available ? `${p50p99(summary)} (${received(summary, r)})${tribBusy}` : `not available (${what})`);
  const notesOf = (prefix) => trib.notes.filter((n) => n.includes(prefix)).join('; ') || 'no endpoint';
  const complete = (summary, r) => summary.n >= r.measured;
  const baselines = (of) =>
    `${p50p99(of(base))} (${received(of(base), base)})${baseBusy}; durable ${p50p99(of(floor))} (${received(of(floor), floor)})${floorBusy}`;
  return [
    row(
      'fanout',
      `request → SSE client p50 / p99 (${cfg.fanoutRate}/s)`,
      figure(trib.sseAvailable, trib.sse, trib, notesOf('sse')),
      baselines((r) => r.sse),
      'p99 ≤ 10 ms',
      trib.sseAvailable ? met(trib.sse.p99 <= 10 && complete(trib.sse, trib)) : 'n/a',
    ),
    row(
      'fanout',
      `request → webhook receiver p50 / p99 (${cfg.fanoutRate}/s)`,
      figure(trib.webhookAvailable, trib.webhook, trib, notesOf('/v1/')),
      baselines((r) => r.webhook),
      'p99 ≤ 25 ms',
      trib.webhookAvailable ? met(trib.webhook.p99 <= 25 && complete(trib.webhook, trib)) : 'n/a',
    ),
    row(
      'fanout',
      `during the warm-up (first ${cfg.fanoutWarmup} s after start): SSE / webhook p50 / p99`,
      trib.sseAvailable && trib.webhookAvailable ? `${p50p99(trib.warmUpSse)} / ${p50p99(trib.warmUpWebhook)}` : 'n/a',
      `${p50p99(base.warmUpSse)} / ${p50p99(base.warmUpWebhook)}`,
      '',
    ),
    row(
      'fanout',
      'server CPU per event (server + workers)',
      cpuPerEvent(tribCpuMs, trib.acked),
      `${cpuPerEvent(baseCpuMs, base.acked)}; durable ${cpuPerEvent(floorCpuMs, floor.acked)}`,
      '',
    ),
    row(
      'fanout',
      'HTTP acknowledgement p50 / p99',
      `${p50p99(trib.ack)} (${rate(trib)}, ${int(trib.acked)} acked, ${int(trib.failed)} failed)`,
      `${p50p99(base.ack)} (${rate(base)})`,
      '',
    ),
  ];
}
