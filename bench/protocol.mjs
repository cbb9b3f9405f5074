#!/usr/bin/env node
// Micro-benchmark of the server's check of worker messages (runtime/protocol.ts), beside JSON.parse of the same
// text as its floor. `node bench/protocol.mjs [path/to/protocol.js]` compares another build's checker.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const modulePath = path.resolve(process.argv[2] ?? 'dist/runtime/protocol.js');
const { parseFromWorker } = await import(pathToFileURL(modulePath).href);
const RESULTS = Number(process.env.BENCH_PROTOCOL_RESULTS ?? 100);
const ROUNDS = Number(process.env.BENCH_PROTOCOL_ROUNDS ?? 2000);

// One `outcomes` message as a worker sends it after a batch: each event emitted once, one log line, one db write.
const text = JSON.stringify({
  t: 'outcomes',
  id: 7,
  index: 0,
  done: true,
  results: Array.from({ length: RESULTS }, (_, i) => ({
    outcome: {
      emits: [{ event: { n: i, body: { user: 'x', tags: ['a', 'b'], at: 1764057600000 } }, id: `e${i}`, ts: 1764057600000 + i }],
      logs: [{ k: 'log', ts: 1764057600000, msg: `event ${i}` }],
      durationMs: 0.4,
    },
    dbWrites: { last: i },
  })),
});

/** Microseconds per message, the median of five timed blocks after a warm-up block. */
function measure(fn) {
  const block = () => {
    const start = process.hrtime.bigint();
    for (let i = 0; i < ROUNDS; i++) fn();
    return Number(process.hrtime.bigint() - start) / 1000 / ROUNDS;
  };
  block();
  const samples = Array.from({ length: 5 }, block).sort((a, b) => a - b);
  return samples[2];
}

const floor = measure(() => JSON.parse(text));
// Builds since the worker token take `[token, message]` and the token; older ones the message alone.
const framed = ['token', text];
const checked = parseFromWorker.length >= 2 ? measure(() => parseFromWorker(framed, 'token')) : measure(() => parseFromWorker(text));
console.log(`outcomes message of ${RESULTS} results, ${text.length} bytes of JSON, ${ROUNDS} rounds per block (${path.relative(process.cwd(), modulePath)})`);
console.log(`JSON.parse (floor)        ${floor.toFixed(1).padStart(8)} µs/message`);
console.log(
  `parseFromWorker           ${checked.toFixed(1).padStart(8)} µs/message   ${(checked / floor).toFixed(2)}× the floor, ${((checked - floor) / RESULTS).toFixed(2)} µs per result for the check`,
);
