// How far Tributary's fan-out is from the floor of its promises: server CPU per event and SSE / webhook latency
// for Tributary, the bare relay and the durable relay (the relay plus a queue row committed before the 200, one
// round trip to a child process and two more SQLite transactions; bench/lib/durable-relay.mjs), in alternation.
//   node bench/fanout-floor-probe.mjs      (after npm run build; BENCH_DURATION, BENCH_FANOUT_WARMUP, BENCH_FANOUT_RATE,
//                                           BENCH_FLOOR_ROUNDS: rounds of the three, 2 by default)
import { loadgen } from './lib/client.mjs';
import { loadConfig } from './lib/config.mjs';
import { serverCpuDuring } from './lib/machine.mjs';
import { installExitHandlers } from './lib/proc.mjs';
import { startDurableRelay, startRelay } from './lib/servers.mjs';
import { startTributary } from './lib/tributary.mjs';

const ECHO = 'module.exports = { name: "bench-fanout", version: "1", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body) } }';

installExitHandlers();
const cfg = loadConfig();
const rounds = Number(process.env.BENCH_FLOOR_ROUNDS ?? 2);
const job = { mode: 'fanout', rate: cfg.fanoutRate, warmupMs: cfg.fanoutWarmup * 1000, durationMs: cfg.duration * 1000, graceMs: 10_000 };
const timeout = (cfg.fanoutWarmup + cfg.duration) * 1000 + 120_000;

async function measureTributary() {
  const server = await startTributary(['--allow-private-network']);
  try {
    const component = await server.api.ok('POST', '/v1/components', { component_code: ECHO });
    const source = await server.api.ok('POST', '/v1/sources', { component_id: component.data.id, name: 'fanout' });
    const ingestUrl = `${source.data.configured_props.http.endpoint_url}/bench`;
    return await serverCpuDuring(server.pid, () =>
      loadgen({ ...job, kind: 'tributary', baseUrl: server.url, key: server.key, sourceId: source.data.id, ingestUrl }, timeout),
    );
  } finally {
    await server.stop();
  }
}

async function measureRelay(start) {
  const relay = await start();
  try {
    return await serverCpuDuring(relay.pid, () => loadgen({ ...job, kind: 'relay', baseUrl: relay.url, ingestUrl: `${relay.url}/e/bench` }, timeout));
  } finally {
    await relay.stop();
  }
}

const contenders = [
  ['Tributary', measureTributary],
  ['durable relay', () => measureRelay(startDurableRelay)],
  ['bare relay', () => measureRelay(startRelay)],
];
const ms = (s) => `${s.p50.toFixed(2)} / ${s.p99.toFixed(2)} ms`;
for (let round = 1; round <= rounds; round++) {
  for (const [name, measure] of contenders) {
    const [result, cpuMs] = await measure();
    const perEvent = (cpuMs * 1000) / result.acked;
    console.log(
      `round ${round}  ${name.padEnd(13)} ${perEvent.toFixed(0).padStart(6)} µs CPU/event (server and children)  ` +
        `SSE ${ms(result.sse)}  webhook ${ms(result.webhook)}  (${result.acked} acked, ${result.failed} failed)`,
    );
  }
}
