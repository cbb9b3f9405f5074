// Sizes of the benchmarks, from environment variables (defaults: the figures of issue 6).
function num(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, got ${JSON.stringify(raw)}`);
  return value;
}

export function loadConfig() {
  const duration = num('BENCH_DURATION', 10);
  return {
    /** Seconds of measurement of ingest, fanout and timers. */
    duration,
    /** Seconds of warm-up before a measurement. */
    warmup: num('BENCH_WARMUP', 2),
    /** Connections of the ingest closed loop. */
    connections: num('BENCH_CONNECTIONS', 32),
    /** Ingest: rounds of Tributary then the baseline, in turn; the round with the median share is reported. */
    ingestRounds: Math.max(1, Math.round(num('BENCH_INGEST_ROUNDS', 3))),
    /** Fan-out: events per second. */
    fanoutRate: num('BENCH_FANOUT_RATE', 500),
    /**
     * Fan-out: seconds of load before the measurement. A fresh server spends its first seconds compiling its hot
     * paths (p99 above 60 ms in the first 2 s, under 10 ms from about 4 s on); those seconds get a row of their own.
     */
    fanoutWarmup: num('BENCH_FANOUT_WARMUP', 10),
    /** Timers: interval sources firing (intervals of 1 and 2 s). */
    timers: num('BENCH_TIMERS', 1000),
    /** Scale: deployed sources. */
    scaleSources: num('BENCH_SCALE_SOURCES', 10000),
    /** Deploys in flight at once (timers and scale). */
    deployConcurrency: num('BENCH_DEPLOY_CONCURRENCY', 8),
    /** Requests per latency figure of the scale benchmark. */
    latencyRequests: num('BENCH_LATENCY_REQUESTS', 200),
    /** Sequential runs of the overhead benchmark. */
    overheadRuns: num('BENCH_OVERHEAD_RUNS', 1000),
    /** Direct calls of the overhead floor. */
    directCalls: num('BENCH_DIRECT_CALLS', 1_000_000),
    /** Longest wait for the ingest queue to drain, in seconds. */
    drainTimeout: num('BENCH_DRAIN_TIMEOUT', 180),
    /** Before each benchmark, wait up to this many seconds for other processes to leave the CPU (0: don't). */
    waitQuiet: num('BENCH_WAIT_QUIET', 0),
  };
}
