// One event at a time through one node, on SQLite and on PostgreSQL: when its request was acknowledged, when its run
// started (the component stamps it) and when it reached an SSE client of the node. Where the trip's time goes when
// nothing queues; a tool for comparing two builds in alternation, not a figure of the suite.
//   node bench/latency-probe.mjs           (after npm run build; BENCH_LATENCY_REQUESTS, BENCH_DATABASE_URL)
import { startCluster } from './cluster.mjs';
import { loadConfig } from './lib/config.mjs';
import { installExitHandlers } from './lib/proc.mjs';
import { openSse } from './lib/sse.mjs';
import { summarize } from './lib/stats.mjs';
import { startTributary } from './lib/tributary.mjs';

/** Emits the request's sequence number with the time its run started (wall clock: the run is in another process). */
const STAMPED =
  'module.exports = { name: "latency-probe", version: "1", props: { http: "$.interface.http" }, async run(e) { this.$emit({ seq: e.body.seq, ran: Date.now() }) } }';
/** Unmeasured events first: the worker starts and loads the bundle. */
const WARMUP = 30;
/** The pause between events, so that each finds the node idle. */
const PAUSE_MS = 10;

installExitHandlers();
const cfg = loadConfig();

async function measure(node) {
  const deployed = await node.api.ok('POST', '/v1/sources', { component_code: STAMPED, name: 'latency' });
  const waiting = new Map();
  const stream = await openSse(`${node.url}/v1/sources/${deployed.data.id}/sse`, { authorization: `Bearer ${node.key}` }, (data, arrived) => {
    const event = JSON.parse(data).event;
    waiting.get(event?.seq)?.({ arrived, ran: event.ran });
  });
  const acked = [];
  const ran = [];
  const streamed = [];
  try {
    for (let seq = 0; seq < WARMUP + cfg.latencyRequests; seq++) {
      const arrival = new Promise((resolve) => waiting.set(seq, resolve));
      const [sentAt, sentWallMs] = [performance.now(), Date.now()];
      const answer = await fetch(deployed.data.configured_props.http.endpoint_url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ seq }),
      });
      await answer.arrayBuffer();
      const ackedAt = performance.now();
      const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error(`event ${seq} did not reach the stream in 10 s`)), 10_000).unref());
      const { arrived, ran: ranWallMs } = await Promise.race([arrival, timeout]);
      waiting.delete(seq);
      if (seq >= WARMUP) {
        acked.push(ackedAt - sentAt);
        ran.push(ranWallMs - sentWallMs);
        streamed.push(arrived - sentAt);
      }
      await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
    }
  } finally {
    stream.close();
  }
  const ms = (values) => {
    const s = summarize(values);
    return `${s.p50.toFixed(2)} / ${s.p90.toFixed(2)} / ${s.p99.toFixed(2)}`;
  };
  return `acknowledged ${ms(acked)} ms, run started ${ms(ran)} ms (wall clock, 1 ms steps), on the stream ${ms(streamed)} ms`;
}

console.log(`${cfg.latencyRequests} events one at a time after ${WARMUP} unmeasured; p50 / p90 / p99 from the request's send`);
const sqlite = await startTributary();
try {
  console.log(`SQLite      ${await measure(sqlite)}`);
} finally {
  await sqlite.stop();
}
const cluster = await startCluster(['all']);
try {
  console.log(`PostgreSQL  ${await measure(cluster)}`);
} finally {
  await cluster.stop();
}
