// How far Tributary's fan-out is from the floor of its promises: server CPU per event and SSE / webhook latency
// for Tributary, the bare relay and the durable relay (the relay plus a queue row committed before the 200, one
// round trip to a child process and two more SQLite transactions; bench/lib/durable-relay.mjs), in alternation.
//   node bench/fanout-floor-probe.mjs      (after npm run build; BENCH_DURATION, BENCH_FANOUT_WARMUP, BENCH_FANOUT_RATE,
//                                           BENCH_FLOOR_ROUNDS: rounds of the three, 2 by default)
import { fanoutThroughRelay, fanoutThroughTributary } from './fanout.mjs';
import { loadConfig } from './lib/config.mjs';
import { installExitHandlers } from './lib/proc.mjs';
import { startDurableRelay, startRelay } from './lib/servers.mjs';

installExitHandlers();
const cfg = loadConfig();
const rounds = Number(process.env.BENCH_FLOOR_ROUNDS ?? 2);
const quiet = () => {};

const contenders = [
  ['Tributary', () => fanoutThroughTributary(cfg, quiet)],
  ['durable relay', () => fanoutThroughRelay(startDurableRelay, 'durable relay', cfg, quiet)],
  ['bare relay', () => fanoutThroughRelay(startRelay, 'bare relay', cfg, quiet)],
];
const ms = (s) => `${s.p50.toFixed(2)} / ${s.p99.toFixed(2)} ms`;
for (let round = 1; round <= rounds; round++) {
  for (const [name, measure] of contenders) {
    const [[result, busy], cpuMs] = await measure();
    const perEvent = (cpuMs * 1000) / result.acked;
    console.log(
      `round ${round}  ${name.padEnd(13)} ${perEvent.toFixed(0).padStart(6)} µs CPU/event (server and children)  ` +
        `SSE ${ms(result.sse)}  webhook ${ms(result.webhook)}  (${result.acked} acked, ${result.failed} failed)${busy}`,
    );
  }
}
