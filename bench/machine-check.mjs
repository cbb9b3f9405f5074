// How quiet is this machine? IPC round trips between two idle Node processes and the lateness of a 1 ms timer:
// the floor under every latency figure of the suite, which crosses several processes.
import { fork } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const ROUND_TRIPS = 2000;

if (process.argv[2] === 'echo') {
  process.on('message', (message) => process.send(message));
} else {
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const child = fork(new URL(import.meta.url).pathname, ['echo'], { serialization: 'advanced' });
  const rtt = [];
  let sentAt = 0;
  const send = () => {
    sentAt = performance.now();
    child.send({ n: rtt.length });
  };
  child.on('message', () => {
    rtt.push(performance.now() - sentAt);
    // A pause between round trips lets both processes go idle, as they are between events at 500/s.
    if (rtt.length < ROUND_TRIPS) setTimeout(send, 2);
    else {
      loop.disable();
      child.kill();
      rtt.sort((a, b) => a - b);
      const at = (p) => rtt[Math.min(rtt.length - 1, Math.floor(p * rtt.length))].toFixed(3);
      const late = (p) => (loop.percentile(p) / 1e6 - 1).toFixed(2);
      console.log(`IPC round trip between idle processes (${ROUND_TRIPS}): p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${rtt.at(-1).toFixed(2)} ms`);
      console.log(`1 ms timer lateness: p50 ${late(50)} ms, p99 ${late(99)} ms, max ${(loop.max / 1e6 - 1).toFixed(1)} ms`);
    }
  });
  setTimeout(send, 200);
}
