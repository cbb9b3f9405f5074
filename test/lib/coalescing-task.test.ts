// Requests made while the task runs fold into one more run; none runs two at once.
import { describe, expect, it } from 'vitest';
import { CoalescingTask } from '../../src/lib/coalescing-task.js';

describe('CoalescingTask', () => {
  it('runs once more after the run in progress, however many requests came meanwhile', async () => {
    let running = 0;
    let most = 0;
    let runs = 0;
    const gates: Array<() => void> = [];
    const task = new CoalescingTask(async () => {
      runs++;
      running++;
      most = Math.max(most, running);
      await new Promise<void>((resolve) => gates.push(resolve));
      running--;
    });
    task.request();
    task.request();
    task.request();
    expect(runs).toBe(1);
    gates.shift()!();
    await task.settled();
    // The rerun starts as the first run settles.
    await Promise.resolve();
    expect(runs).toBe(2);
    gates.shift()!();
    await task.settled();
    expect(runs).toBe(2);
    expect(most).toBe(1);
  });

  it('keeps running after a task rejects', async () => {
    let runs = 0;
    const task = new CoalescingTask(async () => {
      runs++;
      throw new Error('boom');
    });
    task.request();
    await task.settled();
    task.request();
    await task.settled();
    expect(runs).toBe(2);
  });
});
