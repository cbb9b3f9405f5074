// Properties of ts ordering and the three dedupe strategies, checked against their definitions in the spec.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyDedupe, orderByTs, UNIQUE_CACHE_SIZE } from '../../src/model/dedupe.js';
import type { EmittedEvent } from '../../src/runtime/types.js';

const emits = (ids: Array<string | number>): EmittedEvent[] => ids.map((id) => ({ event: { id }, id }));

describe('orderByTs', () => {
  it('orders timed events oldest first and keeps untimed ones in emit order after them', () => {
    fc.assert(
      fc.property(fc.array(fc.option(fc.integer({ min: 0, max: 1000 }), { nil: undefined })), (tss) => {
        const input = tss.map((ts, index) => ({ ts, index }));
        const out = orderByTs(input);
        const timed = out.filter((e) => e.ts !== undefined);
        for (let i = 1; i < timed.length; i++) expect(timed[i]!.ts! >= timed[i - 1]!.ts!).toBe(true);
        const untimed = out.filter((e) => e.ts === undefined).map((e) => e.index);
        expect(untimed).toEqual(input.filter((e) => e.ts === undefined).map((e) => e.index));
        expect(out.slice(timed.length).every((e) => e.ts === undefined)).toBe(true);
      }),
    );
  });
});

describe('dedupe', () => {
  it('unique emits each id not among the last 100 seen, first in first out', () => {
    fc.assert(
      fc.property(fc.array(fc.array(fc.integer({ min: 0, max: 150 }), { maxLength: 60 }), { maxLength: 8 }), (runs) => {
        let cache: unknown = null;
        const seen: string[] = [];
        for (const ids of runs) {
          const result = applyDedupe('unique', cache, emits(ids));
          const expected: number[] = [];
          for (const id of ids) {
            if (seen.includes(JSON.stringify(id))) continue;
            expected.push(id);
            seen.push(JSON.stringify(id));
            if (seen.length > UNIQUE_CACHE_SIZE) seen.shift();
          }
          expect(result.accepted.map((e) => e.id)).toEqual(expected);
          cache = result.cache;
        }
        expect(cache === null ? [] : cache).toEqual(seen);
      }),
    );
  });

  it('unique forgets the oldest id once 100 newer ones were seen', () => {
    const first = applyDedupe('unique', null, emits([0]));
    const hundred = applyDedupe('unique', first.cache, emits(Array.from({ length: 100 }, (_, i) => i + 1)));
    expect(applyDedupe('unique', hundred.cache, emits([0])).accepted).toHaveLength(1);
    expect(applyDedupe('unique', hundred.cache, emits([100])).accepted).toHaveLength(0);
  });

  it('unique and last cache a long id by its digest, and still match it, or a cache holding it whole', () => {
    // Whole, 100 ids of 1 MB made a 100 MB cache that every commit of the source parsed and wrote back.
    const long = (n: number) => `${n}-${'i'.repeat(1_000_000)}`;
    const ids = Array.from({ length: UNIQUE_CACHE_SIZE }, (_, i) => long(i));
    const unique = applyDedupe('unique', null, emits(ids));
    expect(unique.accepted).toHaveLength(UNIQUE_CACHE_SIZE);
    expect(JSON.stringify(unique.cache).length).toBeLessThan(10_000);
    expect(applyDedupe('unique', unique.cache, emits([long(7), long(100), 'short'])).accepted.map((e) => e.id)).toEqual([long(100), 'short']);
    expect(applyDedupe('unique', [JSON.stringify(long(7))], emits([long(7), long(8)])).accepted.map((e) => e.id)).toEqual([long(8)]);
    const last = applyDedupe('last', null, emits([long(1), long(2)]));
    expect(String(last.cache).length).toBeLessThan(100);
    expect(applyDedupe('last', last.cache, emits([long(1), long(2), long(3)])).accepted.map((e) => e.id)).toEqual([long(3)]);
    expect(applyDedupe('last', JSON.stringify(long(2)), emits([long(2), long(3)])).accepted.map((e) => e.id)).toEqual([long(3)]);
    expect(applyDedupe('last', 'short-cache', emits(['a', 'b'])).accepted.map((e) => e.id)).toEqual(['a', 'b']);
  });

  it('greatest emits only ids larger than every id emitted before', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -50, max: 50 }), { maxLength: 50 }), (ids) => {
        const result = applyDedupe('greatest', null, emits(ids));
        let max = -Infinity;
        const expected = ids.filter((id) => {
          if (id <= max) return false;
          max = id;
          return true;
        });
        expect(result.accepted.map((e) => e.id)).toEqual(expected);
        expect(result.cache).toBe(expected.length ? Math.max(...expected) : null);
      }),
    );
  });

  it('greatest compares numerically, including numeric strings', () => {
    const first = applyDedupe('greatest', null, emits(['9']));
    expect(applyDedupe('greatest', first.cache, emits(['10', '8'])).accepted.map((e) => e.id)).toEqual(['10']);
  });

  it('greatest drops an integer id in text of more digits than any number has, as it drops one that is no number', () => {
    // Read as a BigInt, an id of a million digits held the server's thread for half a second per event.
    const first = applyDedupe('greatest', null, emits(['5', '9'.repeat(1_000_000), 'abc']));
    expect(first.accepted.map((e) => e.id)).toEqual(['5']);
    expect(first.cache).toBe(5);
    const long = '9'.repeat(309);
    const second = applyDedupe('greatest', first.cache, emits([long, `-${'9'.repeat(310)}`, '6']));
    expect(second.accepted.map((e) => e.id)).toEqual([long]);
    expect(second.cache).toBe(long);
  });

  it('last emits only the events after the cached id, or all when it does not match', () => {
    const first = applyDedupe('last', null, emits(['a', 'b', 'c']));
    expect(first.accepted.map((e) => e.id)).toEqual(['a', 'b', 'c']);
    expect(first.cache).toBe('"c"');
    const second = applyDedupe('last', first.cache, emits(['b', 'c', 'd', 'e']));
    expect(second.accepted.map((e) => e.id)).toEqual(['d', 'e']);
    const none = applyDedupe('last', second.cache, emits(['x', 'y']));
    expect(none.accepted.map((e) => e.id)).toEqual(['x', 'y']);
    const nothingNew = applyDedupe('last', none.cache, emits(['x', 'y']));
    expect(nothingNew.accepted).toEqual([]);
    expect(nothingNew.cache).toBe('"y"');
  });
});
