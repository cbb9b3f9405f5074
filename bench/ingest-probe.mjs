// Where the ingest load's CPU goes: per thread of the server, its workers and the load generator, in µs of user
// and system time per acknowledged request, read from /proc/<pid>/task/*/stat over the measured window. One
// round, no baseline: a tool for comparing two builds in alternation, not a figure of the suite.
//   node bench/ingest-probe.mjs            (after npm run build; BENCH_DURATION, BENCH_WARMUP, BENCH_CONNECTIONS)
import { fork } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from './lib/config.mjs';
import { descendants, installExitHandlers } from './lib/proc.mjs';
import { startTributary } from './lib/tributary.mjs';

const ECHO = 'module.exports = { name: "bench-ingest", version: "1", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body) } }';
/** Clock ticks per second of /proc's utime and stime (USER_HZ, 100 on Linux). */
const TICKS = 100;

/** CPU milliseconds (user, system) of each thread of `pid`, keyed by `role:tid:user|sys`. */
function threadTimes(pid, role) {
  const times = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const thread = tid === String(pid) ? 'main' : `thread ${tid}`;
      times[`${role} ${thread} user`] = (Number(fields[11]) * 1000) / TICKS;
      times[`${role} ${thread} sys`] = (Number(fields[12]) * 1000) / TICKS;
    } catch {
      // The thread ended while we looked.
    }
  }
  return times;
}

installExitHandlers();
const cfg = loadConfig();
const server = await startTributary(['--event-retention', '10000000']);
const generator = fork(path.join(import.meta.dirname, 'lib/loadgen.mjs'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
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
  const snapshot = () => {
    const times = { ...threadTimes(server.pid, 'server'), ...threadTimes(generator.pid, 'load generator') };
    descendants(server.pid).forEach((pid, i) => Object.assign(times, threadTimes(pid, `worker ${i + 1}`)));
    return times;
  };
  await new Promise((resolve) => setTimeout(resolve, cfg.warmup * 1000));
  const before = snapshot();
  const startedAt = performance.now();
  await new Promise((resolve) => setTimeout(resolve, cfg.duration * 1000));
  const after = snapshot();
  const seconds = (performance.now() - startedAt) / 1000;
  const { ok, result, error } = await answered;
  if (!ok) throw new Error(`the load generator failed: ${error}`);
  const requests = result.rate * seconds;
  console.log(`${Math.round(result.rate)} acknowledged/s, ${cfg.connections} connections, ${cfg.duration} s measured`);
  let total = 0;
  for (const [key, ms] of Object.entries(after)) {
    const used = ms - (before[key] ?? 0);
    total += used;
    // Threads under 1% of a CPU (V8's and libuv's helpers at rest) are summed, not listed.
    if (used / seconds >= 10) console.log(`${key.padEnd(36)} ${((used * 1000) / requests).toFixed(1).padStart(6)} µs/request ${((used / seconds) * 0.1).toFixed(0).padStart(4)}% of a CPU`);
  }
  console.log(`${'all'.padEnd(36)} ${((total * 1000) / requests).toFixed(1).padStart(6)} µs/request ${((total / seconds) * 0.1).toFixed(0).padStart(4)}% of a CPU`);
} finally {
  generator.kill();
  await server.stop();
}
