// The manual clock fires timers in due order as it is moved, and `every` repeats until cancelled.
import { describe, expect, it } from 'vitest';
import { ManualClock, every } from '../../src/lib/clock.js';

describe('ManualClock', () => {
  it('stands still until moved, then fires what fell due in due order, at their due times', () => {
    const clock = new ManualClock(1000);
    const fired: Array<[string, number]> = [];
    clock.after(300, () => fired.push(['b', clock.now()]));
    clock.after(100, () => fired.push(['a', clock.now()]));
    const cancelled = clock.after(200, () => fired.push(['never', clock.now()]));
    cancelled.cancel();
    expect(clock.now()).toBe(1000);
    clock.advance(250);
    expect(fired).toEqual([['a', 1100]]);
    clock.set(2000);
    expect(fired).toEqual([
      ['a', 1100],
      ['b', 1300],
    ]);
    expect(clock.now()).toBe(2000);
  });

  it('repeats with every() until cancelled, once per period passed', () => {
    const clock = new ManualClock(0);
    const ticks: number[] = [];
    const timer = every(clock, 100, () => ticks.push(clock.now()));
    clock.advance(350);
    expect(ticks).toEqual([100, 200, 300]);
    timer.cancel();
    clock.advance(1000);
    expect(ticks).toEqual([100, 200, 300]);
  });
});
