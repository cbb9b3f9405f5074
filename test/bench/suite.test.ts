// The benchmark suite end to end at tiny sizes: every benchmark runs, and its correctness figures hold (no event lost or
// duplicated, every fanned-out event arrives, timers fire). No figure of speed is checked: this machine is noisy.
import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/server.js';

const RUN = path.resolve(import.meta.dirname, '../../bench/run.mjs');
const run = promisify(execFile);

/** Small enough for a test run (about a minute), large enough that every code path of each benchmark is taken. */
const SIZES = {
  BENCH_DURATION: '2',
  BENCH_WARMUP: '1',
  BENCH_INGEST_ROUNDS: '1',
  BENCH_CONNECTIONS: '8',
  BENCH_FANOUT_RATE: '50',
  BENCH_FANOUT_WARMUP: '1',
  BENCH_TIMERS: '20',
  BENCH_SCALE_SOURCES: '100',
  BENCH_LATENCY_REQUESTS: '20',
  BENCH_OVERHEAD_RUNS: '20',
  BENCH_DIRECT_CALLS: '10000',
  BENCH_DRAIN_TIMEOUT: '60',
  // A developer's own settings for comparing builds must not reach this run.
  BENCH_WAIT_QUIET: '0',
  BENCH_SERVER_ARGS: '',
  BENCH_SERVER_NODE_ARGS: '',
};

interface Row {
  bench: string;
  metric: string;
  value: string;
  baseline: string;
  target: string;
  status: string;
}

interface Results {
  rows: Row[];
  failed: number;
}

/** A number as the table prints it (thousands separated by commas). */
const num = (text: string): number => Number(text.replaceAll(',', ''));

describe('npm run bench', () => {
  const dir = tempDir();
  let results: Results;
  let output = '';

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const rowOf = (bench: string, metricStart: string): Row => {
    const row = results.rows.find((r) => r.bench === bench && r.metric.startsWith(metricStart));
    if (!row) throw new Error(`no ${bench} row "${metricStart}…" in:\n${output}`);
    return row;
  };

  it('runs every benchmark and writes its results as JSON', { timeout: 480_000 }, async () => {
    const file = path.join(dir, 'results.json');
    const { stdout } = await run(process.execPath, [RUN, `--json=${file}`], {
      env: { ...process.env, ...SIZES },
      timeout: 460_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    output = stdout;
    results = JSON.parse(readFileSync(file, 'utf8')) as Results;
    expect(results.failed).toBe(0);
    expect([...new Set(results.rows.map((r) => r.bench))]).toEqual(['ingest', 'fanout', 'timers', 'scale', 'overhead', 'workflows', 'cluster']);
    expect(results.rows.filter((r) => r.status === 'FAILED')).toEqual([]);
    // The table is printed too.
    expect(stdout).toContain('| benchmark | metric');
  });

  it('ingest: every acknowledged request is stored exactly once', () => {
    const row = rowOf('ingest', 'acknowledged → stored events');
    const match = /^([\d,]+) acked, ([\d,]+) stored, 0 lost, 0 duplicated;/.exec(row.value);
    expect(match, row.value).not.toBeNull();
    expect(num(match![1]!)).toBeGreaterThan(0);
    expect(num(match![2]!)).toBe(num(match![1]!));
    expect(row.status).toBe('met');
  });

  it('workflows: every acknowledged run succeeds', () => {
    const row = rowOf('workflows', '3-step runs completed/s');
    const match = /\(([\d,]+) of ([\d,]+) acknowledged runs succeeded\)/.exec(row.value);
    expect(match, row.value).not.toBeNull();
    expect(num(match![2]!)).toBeGreaterThan(0);
    expect(num(match![1]!)).toBe(num(match![2]!));
  });

  it('fanout: every event reaches the SSE client and the webhook receiver, through Tributary and both relays', () => {
    for (const metric of ['request → SSE client', 'request → webhook receiver']) {
      const row = rowOf('fanout', metric);
      const counts = [row.value, row.baseline].flatMap((cell) => [...cell.matchAll(/\(([\d,]+)\/([\d,]+) received\)/g)]);
      expect(counts, `${row.value} | ${row.baseline}`).toHaveLength(3);
      for (const match of counts) {
        expect(num(match[2]!)).toBeGreaterThan(0);
        expect(num(match[1]!)).toBe(num(match[2]!));
      }
    }
    const acks = rowOf('fanout', 'HTTP acknowledgement').value;
    expect(acks).toMatch(/ 0 failed\)$/);
  });

  it('timers: the deployed timers fire in the window', () => {
    const match = /^([\d,]+) \/ ([\d,]+)/.exec(rowOf('timers', 'runs in the').value);
    expect(match).not.toBeNull();
    expect(num(match![1]!)).toBeGreaterThan(0);
    expect(num(match![2]!)).toBeGreaterThan(0);
  });

  it('scale: the sources deploy and their idle memory is measured', () => {
    expect(rowOf('scale', 'deploy 100 sources').value).toMatch(/^[\d.]+ s \([\d,]+\/s\)$/);
    const rss = /^([\d.]+) MB \(server ([\d.]+) MB \+ (\d+) workers? ([\d.]+) MB\)$/.exec(rowOf('scale', 'idle RSS').value);
    expect(rss).not.toBeNull();
    expect(Number(rss![2])).toBeGreaterThan(0);
  });

  it('cluster: every acknowledged event is stored, on one node and on api and worker nodes', () => {
    for (const setup of ['sqlite', 'pg all', 'pg api + 1 worker', 'pg api + 2 workers']) {
      const match = /\(([\d,]+) of ([\d,]+) stored\)/.exec(rowOf('cluster', `${setup}:`).value);
      expect(match, setup).not.toBeNull();
      expect(num(match![2]!)).toBeGreaterThan(0);
      expect(num(match![1]!)).toBe(num(match![2]!));
    }
    expect(rowOf('cluster', 'event → SSE, another api node').value).toMatch(/ms/);
  });

  it('cluster: every fanned-out event reaches the SSE client and the webhook, on one node and on api and worker nodes', () => {
    for (const setup of ['sqlite', 'pg all', 'pg api + 1 worker', 'pg api + 2 workers']) {
      const value = rowOf('cluster', `${setup}: fan-out`).value;
      const counts = [...value.matchAll(/\(([\d,]+)\/([\d,]+)\)/g)].map((m) => [num(m[1]!), num(m[2]!)]);
      expect(counts, `${setup}: ${value}`).toHaveLength(2);
      for (const [received, sent] of counts) {
        expect(sent, setup).toBeGreaterThan(0);
        expect(received, setup).toBe(sent);
      }
    }
  });

  it('overhead: sequential runs complete', () => {
    expect(num(/^([\d,]+)\/s/.exec(rowOf('overhead', 'sequential runs per second').value)![1]!)).toBeGreaterThan(0);
  });
});
