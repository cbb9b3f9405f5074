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
  // Tributary and the baseline take turns, so that a machine whose speed drifts (other guests on the host)
  // moves both sides of a round alike; the round with the median share is the one reported.
  const rounds = [];
  for (let round = 1; round <= cfg.ingestRounds; round++) {
    const label = cfg.ingestRounds > 1 ? `round ${round}/${cfg.ingestRounds}: ` : '';
    const tributary = await measureTributary(cfg, job, timeout, (line) => log(`${label}${line}`));
    const baseline = await measureBaseline(job, timeout, (line) => log(`${label}${line}`));
    rounds.push({ ...tributary, ...baseline, share: tributary.load.rate / baseline.base.rate });
  }
  const byShare = [...rounds].sort((a, b) => a.share - b.share);
  const { load, loadBusy, cpuMs, base, baseBusy, baseCpuMs, share } = byShare[(byShare.length - 1) >> 1];
  const exactRound = (r) => r.check.complete && r.check.lost === 0 && r.check.duplicates === 0 && r.check.unexpected === 0 && r.drain.count === r.load.acked;
  const total = (pick) => rounds.reduce((sum, r) => sum + pick(r), 0);
  const failures = total((r) => r.load.non2xx + r.load.errors)
    ? `; ${int(total((r) => r.load.non2xx))} non-2xx, ${int(total((r) => r.load.errors))} errors (${rounds.find((r) => r.load.firstError)?.load.firstError})`
    : '';
  const unexpected = total((r) => r.check.unexpected);
  const allStored = rounds.every((r) => r.drain.reached);
  const slowestDrainS = Math.max(...rounds.map((r) => r.drain.afterLoadMs)) / 1000;
  const percent = (x) => `${(x * 100).toFixed(0)}%`;
  const rows = [
    row(
      'ingest',
      `acknowledged requests/s (${cfg.connections} conn.)${rounds.length > 1 ? `, median of ${rounds.length} rounds` : ''}`,
      `${int(load.rate)}/s (${percent(share)} of baseline)${loadBusy}`,
      `${int(base.rate)}/s bare Fastify${baseBusy}`,
      '≥ 5,000/s and ≥ 40% of baseline',
      met(load.rate >= 5000 && share >= 0.4),
    ),
  ];
  if (rounds.length > 1) {
    rows.push(
      row(
        'ingest',
        'acknowledged requests/s of every round, in order',
        rounds.map((r) => `${int(r.load.rate)}/s (${percent(r.share)})`).join('; '),
        rounds.map((r) => `${int(r.base.rate)}/s`).join('; '),
        '',
        `${rounds.filter((r) => r.load.rate >= 5000 && r.share >= 0.4).length} of ${rounds.length} met`,
      ),
    );
  }
  rows.push(
    row('ingest', 'latency p50 / p99', p50p99(load.latency), p50p99(base.latency), ''),
    row('ingest', 'server CPU per request (server + workers)', cpuPerEvent(cpuMs, load.acked), cpuPerEvent(baseCpuMs, base.acked), ''),
    row(
      'ingest',
      `acknowledged → stored events${rounds.length > 1 ? ', all rounds' : ''}`,
      `${int(total((r) => r.load.acked))} acked, ${int(total((r) => r.drain.count))} stored, ${int(total((r) => r.check.lost))} lost, ${int(total((r) => r.check.duplicates))} duplicated${unexpected ? `, ${int(unexpected)} unacknowledged stored` : ''}${rounds.every((r) => r.check.complete) ? '' : ' (read-back incomplete)'}${failures}; ${allStored ? 'all stored' : 'NOT all stored'} ${slowestDrainS.toFixed(1)} s after the load`,
      `${int(total((r) => r.base.acked))} acked`,
      'none lost',
      met(rounds.every(exactRound)),
    ),
  );
  return rows;
}

/** One round against Tributary: the load, then the wait until every acknowledged event is stored, then the read-back. */
async function measureTributary(cfg, job, timeout, log) {
  const server = await startTributary(['--event-retention', '10000000']);
  try {
    const component = await server.api.ok('POST', '/v1/components', { component_code: ECHO });
    const source = await server.api.ok('POST', '/v1/sources', { component_id: component.data.id, name: 'ingest' });
    const sourceId = source.data.id;
    const endpoint = source.data.configured_props.http.endpoint_url;
    log(`tributary: ${cfg.connections} connections, ${cfg.warmup} s warm-up + ${cfg.duration} s into one source`);
    let drain;
    // The server's CPU is counted until every acknowledged event is stored, so it covers the whole of each event.
    const [[load, loadBusy], cpuMs] = await serverCpuDuring(server.pid, async () => {
      const measured = await watched(() => loadgen({ ...job, url: `${endpoint}/bench` }, timeout));
      const loadEnded = Date.now();
      log(`tributary: ${int(measured[0].rate)} acknowledged/s; waiting for ${int(measured[0].acked)} events to be stored`);
      drain = await waitForCount(server.api, sourceId, measured[0].acked, { timeoutMs: cfg.drainTimeout * 1000 });
      drain.afterLoadMs = Date.now() - loadEnded;
      return measured;
    });
    log(`tributary: ${int(drain.count)} events stored ${(drain.afterLoadMs / 1000).toFixed(1)} s after the load; reading them back`);
    const check = await verify(server.api, sourceId, load);
    return { load, loadBusy, drain, check, cpuMs };
  } finally {
    await server.stop();
  }
}

/** One round against the bare Fastify baseline, same load. */
async function measureBaseline(job, timeout, log) {
  const bare = await startBareFastify();
  try {
    log('baseline: bare Fastify, same load');
    const [[base, baseBusy], baseCpuMs] = await serverCpuDuring(bare.pid, () => watched(() => loadgen({ ...job, url: `${bare.url}/e/bench` }, timeout)));
    log(`baseline: ${int(base.rate)}/s`);
    return { base, baseBusy, baseCpuMs };
  } finally {
    await bare.stop();
  }
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
