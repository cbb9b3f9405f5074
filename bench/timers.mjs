// 3. timers: interval sources (intervals of 1 and 2 s) firing; drift = the time the run started (Date.now() in
// the component, emitted) − its due time, p50/p99. Baseline: as many plain setInterval timers in a separate
// process, measured the same way.
import path from 'node:path';
import { openSqliteFile } from '../dist/store/sqlite-file.js';
import { baseline, loadgen } from './lib/client.mjs';
import { forEachEvent } from './lib/events.mjs';
import { watched } from './lib/machine.mjs';
import { int, ms, p50p99, sleep, summarize } from './lib/stats.mjs';
import { met, row } from './lib/table.mjs';
import { startTributary } from './lib/tributary.mjs';

export const name = 'timers';
export const summary = 'many interval sources firing: drift of run start from due time, p50/p99';

const TICK = `module.exports = {
  name: "bench-timer", version: "1",
  props: { timer: { type: "$.interface.timer" } },
  async run(event) { this.$emit({ started: Date.now(), ts: event.timestamp }) },
}`;
const INTERVALS = [1, 2];
const SETTLE_MS = 3000;

export async function run(cfg, log) {
  const count = cfg.timers;
  const durationMs = cfg.duration * 1000;
  const server = await startTributary(['--min-timer-interval', '1']);
  let deploy;
  let window;
  const drifts = [];
  let expected = 0;
  let noRuns = 0;
  let phaseMethod;
  let tribBusy;
  try {
    const component = await server.api.ok('POST', '/v1/components', { component_code: TICK });
    const bodies = Array.from({ length: count }, (_, i) =>
      JSON.stringify({
        component_id: component.data.id,
        name: `timer-${i}`,
        configured_props: { timer: { intervalSeconds: INTERVALS[i % INTERVALS.length] } },
      }),
    );
    log(`tributary: deploying ${count} timer sources, ${cfg.deployConcurrency} at a time`);
    deploy = await loadgen({
      mode: 'concurrent',
      method: 'POST',
      url: `${server.url}/v1/sources`,
      headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' },
      bodies,
      count,
      concurrency: cfg.deployConcurrency,
      collectIds: true,
    });
    if (deploy.ids.length !== count)
      throw new Error(`deployed ${deploy.ids.length}/${count} sources: ${JSON.stringify(deploy.statuses)} ${deploy.firstErrors.join('; ')}`);
    log(`tributary: deployed in ${(deploy.elapsedMs / 1000).toFixed(1)} s; measuring ${cfg.duration} s of firing after ${SETTLE_MS / 1000} s`);
    const windowStart = Date.now() + SETTLE_MS;
    window = { start: windowStart, end: windowStart + durationMs };
    [, tribBusy] = await watched(() => sleep(window.end - Date.now() + Math.max(...INTERVALS) * 1000 + 1000));

    // The due time of a run: the event's timestamp is the due time floored to whole seconds, while an interval
    // timer keeps the millisecond phase of its deploy; that phase is read from the timers table.
    const phases = readPhases(server.dataDir);
    phaseMethod = phases ? 'due ms phase from the timers table' : 'phase estimated per source from its least late run';
    log(`tributary: reading the events of ${count} sources back (${phaseMethod})`);
    const perSource = new Map();
    const queue = [...deploy.ids];
    const reader = async () => {
      while (queue.length) {
        const id = queue.shift();
        const runs = [];
        await forEachEvent(
          server.api,
          id,
          (s) => {
            if (s.event && typeof s.event.started === 'number') runs.push(s.event);
          },
          { stopWhen: (s) => s.event?.ts * 1000 < window.start - 5000, timeoutMs: 30_000 },
        );
        perSource.set(id, runs);
      }
    };
    await Promise.all(Array.from({ length: 4 }, reader));

    for (const [i, id] of deploy.ids.entries()) {
      const step = INTERVALS[i % INTERVALS.length] * 1000;
      const runs = perSource.get(id) ?? [];
      // offset: what to add to ts·1000 to get the due time; ref: one due time of the source (for counting).
      let offset;
      let ref = phases?.get(id);
      if (ref !== undefined) offset = ref % 1000;
      else if (runs.length) {
        // Fallback: started − ts·1000 = phase + drift, so its smallest value bounds the phase (drift then counts
        // from the least late run of the source).
        const best = runs.reduce((a, b) => (b.started - b.ts * 1000 < a.started - a.ts * 1000 ? b : a));
        offset = best.started - best.ts * 1000;
        ref = best.started;
      } else {
        noRuns++;
        continue;
      }
      for (const r of runs) {
        const due = r.ts * 1000 + offset;
        if (due >= window.start && due < window.end) drifts.push(r.started - due);
      }
      expected += Math.ceil((window.end - ref) / step) - Math.ceil((window.start - ref) / step);
    }
  } finally {
    await server.stop();
  }

  log(`baseline: ${count} setInterval timers in a separate process`);
  const [base, baseBusy] = await watched(() =>
    baseline(
      { mode: 'intervals', count, intervalsMs: INTERVALS.map((s) => s * 1000), spreadMs: Math.min(deploy.elapsedMs, 5000), settleMs: SETTLE_MS, durationMs },
      durationMs + 60_000,
    ),
  );

  const drift = summarize(drifts);
  return [
    row(
      'timers',
      `drift from due time p50 / p99 (${int(count)} timers, 1–2 s)`,
      `${p50p99(drift)} (max ${ms(drift.max)})${tribBusy}`,
      `${p50p99(base.drift)} (max ${ms(base.drift.max)}) setInterval${baseBusy}`,
      'p99 ≤ 50 ms',
      met(drift.p99 <= 50 && drift.n > 0),
    ),
    row(
      'timers',
      `runs in the ${cfg.duration} s window (ran / due)`,
      `${int(drifts.length)} / ${int(expected)} (${phaseMethod}${noRuns ? `; ${int(noRuns)} sources never ran` : ''})`,
      `${int(base.observed)} / ${int(base.expected)}`,
      'every due time runs',
      met(drifts.length >= expected && noRuns === 0),
    ),
  ];
}

/** next_due_ms of every timer: one due time per source; intervals are whole seconds, so mod 1000 it is the phase. */
function readPhases(dataDir) {
  try {
    const db = openSqliteFile(path.join(dataDir, 'tributary.db'), { readonly: true, fileMustExist: true });
    try {
      const rows = db.prepare('SELECT source_id, next_due_ms FROM timers').all();
      return new Map(rows.map((r) => [r.source_id, Number(r.next_due_ms)]));
    } finally {
      db.close();
    }
  } catch {
    return undefined;
  }
}
