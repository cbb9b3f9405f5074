// Young-generation collections of a server started with `--trace-gc-nvp`, read from its stdout: how many, their
// pauses and what they promoted. A run whose scavenges promote megabytes each is in V8's pretenuring mode
// (BENCHMARKS.md, session 14), whatever else the probe says.

/** The node flag that makes a server print one line per collection. */
export const GC_TRACE_FLAG = '--trace-gc-nvp';

/** Totals of the scavenges a server prints on `stdout` from now on; `take()` returns them and starts again. */
export function watchScavenges(stdout) {
  let totals = { count: 0, pauseMs: 0, promotedBytes: 0 };
  let partial = '';
  stdout.on('data', (chunk) => {
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.includes(' gc=s ')) continue;
      totals.count += 1;
      totals.pauseMs += Number(/ pause=([\d.]+)/.exec(line)?.[1] ?? 0);
      totals.promotedBytes += Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0);
    }
  });
  return {
    take() {
      const taken = totals;
      totals = { count: 0, pauseMs: 0, promotedBytes: 0 };
      return taken;
    },
  };
}

/** One line for the probe's report: scavenges, their share of the window, and MB promoted per scavenge. */
export function describeScavenges({ count, pauseMs, promotedBytes }, seconds) {
  const perScavenge = count ? promotedBytes / count / 1e6 : 0;
  const mode = perScavenge > 1 ? 'pretenuring mode' : 'normal mode';
  return `scavenges: ${count} in ${seconds.toFixed(1)} s, ${(pauseMs / 1000).toFixed(2)} s paused, ${perScavenge.toFixed(2)} MB promoted each (${mode})`;
}
