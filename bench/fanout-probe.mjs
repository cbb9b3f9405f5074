// Where the fan-out load's CPU goes: per thread of the server, its workers and the load generator (which holds the
// SSE client and the webhook receiver), in µs of user and system time per event at the fan-out benchmark's fixed
// rate. One run, no baseline: a tool for comparing two builds in alternation, not a figure of the suite.
//   node bench/fanout-probe.mjs            (after npm run build; BENCH_DURATION, BENCH_FANOUT_WARMUP, BENCH_FANOUT_RATE)
import path from 'node:path';
import { ECHO } from './fanout.mjs';
import { loadConfig } from './lib/config.mjs';
import { forkTracked, installExitHandlers } from './lib/proc.mjs';
import { printThreadUse, snapshotThreads } from './lib/threads.mjs';
import { startTributary } from './lib/tributary.mjs';

/** The generator subscribes its receiver and opens its stream before the load starts; the window starts after that. */
const SETUP_MS = 1000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

installExitHandlers();
const cfg = loadConfig();
const server = await startTributary(['--allow-private-network']);
const generator = forkTracked(path.join(import.meta.dirname, 'lib/loadgen.mjs'));
try {
  const component = await server.api.ok('POST', '/v1/components', { component_code: ECHO });
  const source = await server.api.ok('POST', '/v1/sources', { component_id: component.data.id, name: 'fanout' });
  const answered = new Promise((resolve) => generator.once('message', resolve));
  const durationMs = Math.max(cfg.duration, 2) * 1000;
  generator.send({
    mode: 'fanout',
    kind: 'tributary',
    baseUrl: server.url,
    key: server.key,
    sourceId: source.data.id,
    ingestUrl: `${source.data.configured_props.http.endpoint_url}/bench`,
    rate: cfg.fanoutRate,
    warmupMs: cfg.fanoutWarmup * 1000,
    durationMs,
  });
  const snapshot = () => snapshotThreads(server.pid, { 'load generator': generator.pid });
  // The window lies inside the measured part of the load: after setup and warm-up, and a second before its end.
  await sleep(SETUP_MS + cfg.fanoutWarmup * 1000);
  const before = snapshot();
  const startedAt = performance.now();
  await sleep(durationMs - 1000);
  const after = snapshot();
  const seconds = (performance.now() - startedAt) / 1000;
  const { ok, result, error } = await answered;
  if (!ok) throw new Error(`the load generator failed: ${error}`);
  const p50p99 = (s) => `${s.p50.toFixed(2)} / ${s.p99.toFixed(2)} ms`;
  console.log(
    `${cfg.fanoutRate} events/s, ${result.acked} acknowledged, ${result.failed} failed; p50 / p99 of the measured part: ` +
      `SSE ${p50p99(result.sse)}, webhook ${p50p99(result.webhook)}`,
  );
  printThreadUse(before, after, seconds, cfg.fanoutRate * seconds, 'event');
} finally {
  generator.kill();
  await server.stop();
}
