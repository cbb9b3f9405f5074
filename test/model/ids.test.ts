// Ids sort by creation: strictly increasing within a process, even when the clock steps back.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isId, newId, ulid } from '../../src/model/ids.js';

describe('ids', () => {
  it('have a prefix and 26 lower-case Crockford characters', () => {
    const id = newId('dc');
    expect(id).toMatch(/^dc_[0-9a-hjkmnp-tv-z]{26}$/);
    expect(isId(id, 'dc')).toBe(true);
    expect(isId(id, 'sc')).toBe(false);
    expect(isId('dc_short', 'dc')).toBe(false);
  });

  it('increase strictly for any sequence of clock readings, including steps back', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1_600_000_000_000, max: 1_600_000_000_050 }), { minLength: 2, maxLength: 300 }), (clock) => {
        const ids = clock.map((ms) => ulid(ms));
        for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
      }),
    );
  });

  it('encode the time in the first ten characters', () => {
    const later = ulid(Date.now() + 60_000);
    const muchLater = ulid(Date.now() + 3_600_000);
    expect(muchLater.slice(0, 10) > later.slice(0, 10)).toBe(true);
  });
});
