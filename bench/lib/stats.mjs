// Percentiles and number formatting.

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** n, mean, p50, p90, p99, max of a list of numbers. */
export function summarize(values) {
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    n: sorted.length,
    mean: sorted.length ? sum / sorted.length : NaN,
    min: sorted.length ? sorted[0] : NaN,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.length ? sorted[sorted.length - 1] : NaN,
  };
}

/** A duration in milliseconds with sensible precision. */
export function ms(value) {
  if (value === undefined || Number.isNaN(value)) return 'n/a';
  const abs = Math.abs(value);
  if (abs < 10) return `${value.toFixed(2)} ms`;
  if (abs < 100) return `${value.toFixed(1)} ms`;
  return `${Math.round(value).toLocaleString('en-US')} ms`;
}

/** "p50 / p99" of a summary, in ms. */
export function p50p99(summary) {
  return `${ms(summary.p50).replace(' ms', '')} / ${ms(summary.p99)}`;
}

export function int(value) {
  return Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : 'n/a';
}

export function mb(bytes) {
  return Number.isFinite(bytes) ? `${(bytes / 1048576).toFixed(1)} MB` : 'n/a';
}

export const sleep = (msDelay) => new Promise((resolve) => setTimeout(resolve, msDelay));

/** Server CPU per event (or request) in microseconds. */
export function cpuPerEvent(cpuMs, events) {
  if (!events) return 'n/a';
  return `${int((cpuMs * 1000) / events)} µs`;
}
