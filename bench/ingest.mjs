// 1. ingest: a closed loop of HTTP requests into one source whose component emits the body.
// Acknowledged requests per second and latency, and a count proving that every acknowledged request
// produced exactly one event. Baseline: a bare Fastify route answering {"success":true}, same load.
import { loadgen } from './lib/client.mjs';
import { serverCpuDuring, watched } from './lib/machine.mjs';
import { forEachEvent, waitForCount } from './lib/events.mjs';
import { startBareFastify } from './lib/servers.mjs';
import { cpuPerEvent, int, p50p99 } from './lib/stats.mjs';
import { met, row } from './lib/table.mjs';
import { startTributary } from './lib/tributary.mjs';

export const name = 'ingest';
export const summary = 'HTTP requests into one source: acknowledged req/s, latency, exactly-once count';

const ECHO = 'module.exports = { name: "bench-ingest", version: "1", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body) } }';

export async function run(cfg, log) {
  const job = { mode: 'closed', connections: cfg.connections, warmupMs: cfg.warmup * 1000, durationMs: cfg.duration * 1000 };
  const timeout = (cfg.warmup + cfg.duration) * 1000 + 120_000;

  const server = await startTributary(['--event-retention', '10000000']);
  let load;
  let loadBusy;
  let drain;
  let check;
  let cpuMs;
  try {
    const component = await server.api.ok('POST', '/v1/components', { component_code: ECHO });
    const source = await server.api.ok('POST', '/v1/sources', { component_id: component.data.id, name: 'ingest' });
    const sourceId = source.data.id;
    const endpoint = source.data.configured_props.http.endpoint_url;
    log(`tributary: ${cfg.connections} connections, ${cfg.warmup} s warm-up + ${cfg.duration} s into one source`);
    // The server's CPU is counted until every acknowledged event is stored, so it covers the whole of each event.
    [[load, loadBusy], cpuMs] = await serverCpuDuring(server.pid, async () => {
      const measured = await watched(() => loadgen({ ...job, url: `${endpoint}/bench` }, timeout));
      const loadEnded = Date.now();
      log(`tributary: ${int(measured[0].rate)} acknowledged/s; waiting for ${int(measured[0].acked)} events to be stored`);
      drain = await waitForCount(server.api, sourceId, measured[0].acked, { timeoutMs: cfg.drainTimeout * 1000 });
      drain.afterLoadMs = Date.now() - loadEnded;
      return measured;
    });
    log(`tributary: ${int(drain.count)} events stored ${(drain.afterLoadMs / 1000).toFixed(1)} s after the load; reading them back`);
    check = await verify(server.api, sourceId, load);
  } finally {
    await server.stop();
  }

  const bare = await startBareFastify();
  let base;
  let baseBusy;
  let baseCpuMs;
  try {
    log('baseline: bare Fastify, same load');
    [[base, baseBusy], baseCpuMs] = await serverCpuDuring(bare.pid, () => watched(() => loadgen({ ...job, url: `${bare.url}/e/bench` }, timeout)));
  } finally {
    await bare.stop();
  }

  const share = load.rate / base.rate;
  const exact = check.complete && check.lost === 0 && check.duplicates === 0 && check.unexpected === 0 && drain.count === load.acked;
  const failures = load.non2xx + load.errors ? `; ${int(load.non2xx)} non-2xx, ${int(load.errors)} errors (${load.firstError})` : '';
  return [
    row(
      'ingest',
      `acknowledged requests/s (${cfg.connections} conn.)`,
      `${int(load.rate)}/s (${(share * 100).toFixed(0)}% of baseline)${loadBusy}`,
      `${int(base.rate)}/s bare Fastify${baseBusy}`,
      '≥ 5,000/s and ≥ 40% of baseline',
      met(load.rate >= 5000 && share >= 0.4),
    ),
    row('ingest', 'latency p50 / p99', p50p99(load.latency), p50p99(base.latency), ''),
    row('ingest', 'server CPU per request (server + workers)', cpuPerEvent(cpuMs, load.acked), cpuPerEvent(baseCpuMs, base.acked), ''),
    row(
      'ingest',
      'acknowledged → stored events',
      `${int(load.acked)} acked, ${int(drain.count)} stored, ${int(check.lost)} lost, ${int(check.duplicates)} duplicated${check.unexpected ? `, ${int(check.unexpected)} unacknowledged stored` : ''}${check.complete ? '' : ' (read-back incomplete)'}${failures}; ${drain.reached ? 'all stored' : 'NOT all stored'} ${(drain.afterLoadMs / 1000).toFixed(1)} s after the load`,
      `${int(base.acked)} acked`,
      'none lost',
      met(exact),
    ),
  ];
}

/** Reads every stored event back and compares its body's seq with the acknowledged ones. */
async function verify(api, sourceId, load) {
  const ackedBits = Buffer.from(load.ackedBitmap, 'base64');
  const isAcked = (seq) => seq < load.sent && (ackedBits[seq >> 3] & (1 << (seq & 7))) !== 0;
  const counts = new Uint16Array(load.sent);
  let unexpected = 0;
  const walk = await forEachEvent(
    api,
    sourceId,
    (summary) => {
      const seq = summary.event?.seq;
      if (!Number.isInteger(seq) || seq >= load.sent || !isAcked(seq)) unexpected++;
      else if (counts[seq] < 65535) counts[seq]++;
    },
    { timeoutMs: 180_000 },
  );
  let lost = 0;
  let duplicates = 0;
  for (let seq = 0; seq < load.sent; seq++) {
    if (!isAcked(seq)) continue;
    if (counts[seq] === 0) lost++;
    else if (counts[seq] > 1) duplicates += counts[seq] - 1;
  }
  return { lost, duplicates, unexpected, complete: walk.complete, read: walk.events };
}
