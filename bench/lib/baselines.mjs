// Floors measured without Tributary, each in a child process of its own: plain setInterval timers, and direct
// calls of a component's run(). Gets one job over IPC, answers { ok, result } and exits.
import { summarize } from './stats.mjs';
import { answerOneJob } from './job.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `count` setInterval timers with the given intervals (round-robin), created over `spreadMs` so that their
 * phases spread like deployed sources'. Drift = Date.now() in the callback − due time (creation + k·interval),
 * for due times in [windowStart, windowStart + durationMs), where windowStart = creation end + settleMs.
 */
async function intervals({ count, intervalsMs, spreadMs, settleMs, durationMs }) {
  const timers = [];
  const emitted = [];
  let windowStart = Infinity;
  let windowEnd = Infinity;
  const drifts = [];
  let expected = 0;
  const phases = [];
  for (let i = 0; i < count; i++) {
    const interval = intervalsMs[i % intervalsMs.length];
    const created = Date.now();
    phases.push([created, interval]);
    let k = 0;
    timers.push(
      setInterval(() => {
        const started = Date.now();
        k++;
        const due = created + k * interval;
        emitted.push({ started, ts: Math.floor(due / 1000) });
        if (emitted.length > 10_000) emitted.length = 0;
        if (due >= windowStart && due < windowEnd) drifts.push(started - due);
      }, interval),
    );
    if (spreadMs > 0 && i % 10 === 9) await sleep((spreadMs / count) * 10);
  }
  windowStart = Date.now() + settleMs;
  windowEnd = windowStart + durationMs;
  for (const [created, interval] of phases) {
    expected += Math.ceil((windowEnd - created) / interval) - Math.ceil((windowStart - created) / interval);
  }
  await sleep(windowEnd - Date.now() + Math.max(...intervalsMs) + 500);
  for (const t of timers) clearInterval(t);
  return { drift: summarize(drifts), observed: drifts.length, expected };
}

/** The floor of a run: the component's run() called directly, `calls` times, with a $emit that collects. */
async function direct({ code, calls }) {
  const module = { exports: {} };
  new Function('module', 'exports', code)(module, module.exports);
  const component = module.exports;
  const emitted = [];
  const self = {
    $emit(event, meta) {
      emitted.push({ event, meta });
      if (emitted.length >= 1024) emitted.length = 0;
    },
  };
  const once = async (i) => component.run.call(self, { seq: i });
  for (let i = 0; i < Math.min(calls, 10_000); i++) await once(i);
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) await once(i);
  const ns = Number(process.hrtime.bigint() - start);
  return { calls, nsPerCall: ns / calls, perSecond: calls / (ns / 1e9) };
}

answerOneJob({ intervals, direct });
