#!/usr/bin/env node
// Tributary benchmark suite (issue 6). `npm run bench` runs every benchmark, `npm run bench -- <name> …` some.
// Each benchmark starts its own server(s) and load generator as child processes, one benchmark at a time,
// and prints its figures beside a baseline measured in the same run. See BENCHMARKS.md.
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import * as cluster from './cluster.mjs';
import * as fanout from './fanout.mjs';
import * as ingest from './ingest.mjs';
import { loadConfig } from './lib/config.mjs';
import { describeMachine, waitForQuiet, watchForeignCpu } from './lib/machine.mjs';
import { cleanupAll, installExitHandlers } from './lib/proc.mjs';
import { renderTable, row } from './lib/table.mjs';
import * as overhead from './overhead.mjs';
import * as scale from './scale.mjs';
import * as timers from './timers.mjs';
import * as workflows from './workflows.mjs';

const BENCHMARKS = [ingest, fanout, timers, scale, overhead, workflows, cluster];

const loadavg = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

async function main() {
  const names = process.argv.slice(2).filter((a) => !a.startsWith('-'));
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    console.log('usage: npm run bench [-- <name> …]\n');
    for (const b of BENCHMARKS) console.log(`  ${b.name.padEnd(9)} ${b.summary}`);
    console.log(
      '\nsizes: BENCH_DURATION, BENCH_WARMUP, BENCH_CONNECTIONS, BENCH_INGEST_ROUNDS, BENCH_FANOUT_RATE, BENCH_FANOUT_WARMUP, BENCH_TIMERS, BENCH_SCALE_SOURCES,',
    );
    console.log('       BENCH_DEPLOY_CONCURRENCY, BENCH_LATENCY_REQUESTS, BENCH_OVERHEAD_RUNS, BENCH_DIRECT_CALLS, BENCH_DRAIN_TIMEOUT, BENCH_WAIT_QUIET');
    console.log('server under test: BENCH_SERVER_ARGS (tributary serve flags), BENCH_SERVER_NODE_ARGS (node flags)');
    console.log('\n--json=<file>  also writes the results (machine, sizes, rows, notes) to <file> as JSON');
    return 0;
  }
  const unknown = names.filter((n) => !BENCHMARKS.some((b) => b.name === n));
  if (unknown.length) {
    console.error(`unknown benchmark ${unknown.join(', ')}; known: ${BENCHMARKS.map((b) => b.name).join(', ')}`);
    return 2;
  }
  const jsonFile = process.argv.find((a) => a.startsWith('--json='))?.slice('--json='.length);
  const selected = names.length ? BENCHMARKS.filter((b) => names.includes(b.name)) : BENCHMARKS;
  const cfg = loadConfig();
  installExitHandlers();

  console.log(`machine: ${describeMachine()}`);
  console.log(`sizes: ${JSON.stringify(cfg)}`);
  const rows = [];
  const notes = [];
  let failed = 0;
  const started = Date.now();
  for (const bench of selected) {
    const log = (message) => console.log(`[${bench.name} +${((Date.now() - started) / 1000).toFixed(0)}s] ${message}`);
    if (cfg.waitQuiet > 0) await waitForQuiet(cfg.waitQuiet, 0.15, log);
    log(`start (load average ${loadavg()})`);
    const watch = watchForeignCpu();
    const noise = () => {
      const cpu = watch.stop();
      const pct = (x) => `${(x * 100).toFixed(0)}%`;
      const text = `other processes used ${pct(cpu.mean)} of the machine's CPU on average (worst second ${pct(cpu.max)}), steal ${pct(cpu.steal)}`;
      notes.push(`${bench.name}: ${text}`);
      return text;
    };
    try {
      const result = await bench.run(cfg, log);
      rows.push(...result);
      log(`done (load average ${loadavg()}; ${noise()})`);
      console.log(renderTable(result));
    } catch (error) {
      noise();
      failed++;
      log(`FAILED: ${error?.stack ?? error}`);
      rows.push(
        row(
          bench.name,
          'error',
          String(error?.message ?? error)
            .split('\n')[0]
            .slice(0, 160),
          '',
          '',
          'FAILED',
        ),
      );
      await cleanupAll();
    }
  }
  console.log(`\nresults (${selected.map((b) => b.name).join(', ')}; ${((Date.now() - started) / 1000).toFixed(0)} s; ${describeMachine()}):\n`);
  console.log(renderTable(rows));
  console.log(`\nduring the run (100% = all ${os.availableParallelism()} CPUs):\n${notes.map((n) => `- ${n}`).join('\n')}`);
  if (jsonFile) writeFileSync(jsonFile, `${JSON.stringify({ machine: describeMachine(), sizes: cfg, rows, notes, failed }, null, 2)}\n`);
  return failed ? 1 : 0;
}

main()
  .then(async (code) => {
    await cleanupAll();
    process.exit(code);
  })
  .catch(async (error) => {
    console.error(error);
    await cleanupAll();
    process.exit(1);
  });
