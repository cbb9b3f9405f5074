// The probe's scavenge count reads what a real node process prints under --trace-gc-nvp.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs module of the benchmark suite, without types.
import { describeScavenges, GC_TRACE_FLAG, watchScavenges } from '../../bench/lib/gc-trace.mjs';

describe('bench/lib/gc-trace.mjs', () => {
  it("counts a process's scavenges and what they promoted", async () => {
    // Short-lived garbage, and an array that survives: the scavenges both collect and promote.
    const script = 'const kept = []; for (let i = 0; i < 3e6; i++) { const o = { i }; if (i % 10 === 0) kept.push(o) }';
    const child = spawn(process.execPath, [GC_TRACE_FLAG, '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const scavenges = watchScavenges(child.stdout);
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
    const taken = scavenges.take();
    expect(taken.count).toBeGreaterThan(0);
    expect(taken.pauseMs).toBeGreaterThan(0);
    expect(taken.promotedBytes).toBeGreaterThan(0);
    expect(scavenges.take()).toEqual({ count: 0, pauseMs: 0, promotedBytes: 0 });
  });

  it('names the mode by the megabytes promoted per scavenge', () => {
    expect(describeScavenges({ count: 100, pauseMs: 400, promotedBytes: 100 * 80_000 }, 10)).toBe(
      'scavenges: 100 in 10.0 s, 0.40 s paused, 0.08 MB promoted each (normal mode)',
    );
    expect(describeScavenges({ count: 100, pauseMs: 1450, promotedBytes: 100 * 2_500_000 }, 10)).toBe(
      'scavenges: 100 in 10.0 s, 1.45 s paused, 2.50 MB promoted each (pretenuring mode)',
    );
  });
});
