// How the console writes durations: each figure in the unit it reads best in, never "60.0 s" or "1000 ms".
import { describe, expect, it } from 'vitest';
import { formatDuration } from '../../src/web/format.js';

describe('formatDuration', () => {
  it('picks the unit by the figure as shown, rounded', () => {
    expect(formatDuration(undefined)).toBe('—');
    expect(formatDuration(12.4)).toBe('12 ms');
    expect(formatDuration(999.6)).toBe('1.00 s');
    expect(formatDuration(1234)).toBe('1.23 s');
    expect(formatDuration(9999)).toBe('10.0 s');
    expect(formatDuration(12_345)).toBe('12.3 s');
    expect(formatDuration(59_960)).toBe('1 min');
    expect(formatDuration(90_000)).toBe('1.5 min');
    expect(formatDuration(30 * 60_000)).toBe('30 min');
    expect(formatDuration(3_599_999)).toBe('1 h');
    expect(formatDuration(5_400_000)).toBe('1.5 h');
  });
});
