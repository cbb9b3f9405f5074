// Where the ingest load's CPU goes: per thread of the server, its workers and the load generator, in µs of user
// and system time per acknowledged request, read from /proc/<pid>/task/*/stat over the measured window. One
// round, no baseline: a tool for comparing two builds in alternation, not a figure of the suite.
//   node bench/ingest-probe.mjs            (after npm run build; BENCH_DURATION, BENCH_WARMUP, BENCH_CONNECTIONS)
//   BENCH_GC=1 node bench/ingest-probe.mjs  also counts the server's scavenges over the window (see lib/gc-trace.mjs)
import path from 'node:path';
import { loadConfig } from './lib/config.mjs';
import { describeScavenges, GC_TRACE_FLAG, watchScavenges } from './lib/gc-trace.mjs';
import { forkTracked, installExitHandlers } from './lib/proc.mjs';
import { printThreadUse, snapshotThreads } from './lib/threads.mjs';
import { startTributary } from './lib/tributary.mjs';

const ECHO = 'module.exports = { name: "bench-ingest", version: "1", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body) } }';

installExitHandlers();
const cfg = loadConfig();
const traceGc = Boolean(process.env.BENCH_GC);
const server = await startTributary(['--event-retention', '10000000'], { nodeArgs: traceGc ? [GC_TRACE_FLAG] : [] });
const scavenges = traceGc ? watchScavenges(server.child.stdout) : undefined;
const generator = forkTracked(path.join(import.meta.dirname, 'lib/loadgen.mjs'));
try {
  const component = await server.api.ok('POST', '/v1/components', { component_code: ECHO });
  const source = await server.api.ok('POST', '/v1/sources', { component_id: component.data.id, name: 'ingest' });
  const answered = new Promise((resolve) => generator.once('message', resolve));
  generator.send({
    mode: 'closed',
    connections: cfg.connections,
    warmupMs: cfg.warmup * 1000,
    durationMs: cfg.duration * 1000,
    url: `${source.data.configured_props.http.endpoint_url}/bench`,
  });
  const snapshot = () => snapshotThreads(server.pid, { 'load generator': generator.pid });
  await new Promise((resolve) => setTimeout(resolve, cfg.warmup * 1000));
  const before = snapshot();
  scavenges?.take();
  const startedAt = performance.now();
  await new Promise((resolve) => setTimeout(resolve, cfg.duration * 1000));
  const after = snapshot();
  const collected = scavenges?.take();
  const seconds = (performance.now() - startedAt) / 1000;
  const { ok, result, error } = await answered;
  if (!ok) throw new Error(`the load generator failed: ${error}`);
  const requests = result.rate * seconds;
  console.log(`${Math.round(result.rate)} acknowledged/s, ${cfg.connections} connections, ${cfg.duration} s measured`);
  printThreadUse(before, after, seconds, requests, 'request');
  if (collected) console.log(describeScavenges(collected, seconds));
} finally {
  generator.kill();
  await server.stop();
}
