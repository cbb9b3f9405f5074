// Dedupe strategies and `ts` ordering of emitted events, as the specification defines them.
import { createHash } from 'node:crypto';
import type { EmittedEvent } from '../runtime/types.js';
import type { PendingEvent } from './events.js';
import { streamNameOf } from './subscriptions.js';

export type DedupeStrategy = 'unique' | 'greatest' | 'last';

export const UNIQUE_CACHE_SIZE = 100;

/** An id's JSON longer than this is cached by its digest: caches stay small however long the ids a source emits. */
export const MAX_CACHED_ID_CHARS = 128;

/**
 * How `unique` and `last` remember an id: its JSON, or for a long one `#sha256:<digest>` (no JSON starts with `#`).
 * Whole, a cache of 100 ids of 1 MB was 100 MB parsed and written back at every commit of the source, which held the
 * server's thread for seconds at a time, every account's requests with it.
 */
function cachedId(id: string | number | undefined): { key: string; whole: string } {
  const whole = JSON.stringify(id);
  const key = whole.length <= MAX_CACHED_ID_CHARS ? whole : `#sha256:${createHash('sha256').update(whole).digest('hex')}`;
  return { key, whole };
}

/** Orders by `ts` oldest first; events without `ts` keep their order after the timed ones. */
export function orderByTs<T extends { ts?: number | undefined }>(emits: T[]): T[] {
  return emits
    .map((emit, index) => ({ emit, index }))
    .sort((a, b) => (a.emit.ts ?? Infinity) - (b.emit.ts ?? Infinity) || a.index - b.index)
    .map((x) => x.emit);
}

/** Digits of the longest integer id in text `greatest` reads: past 10^309 numbers are Infinity anyway. */
export const MAX_NUMERIC_ID_DIGITS = 309;

/**
 * An id as `greatest` compares it. Integer ids in text are read exactly (snowflake ids such as 1234567890123456789 are
 * past 2^53, where numbers 256 apart read as one and a newer event would pass for a seen one); other text as a number.
 */
function numericId(id: string | number | undefined): number | bigint | undefined {
  if (typeof id === 'string' && /^\s*-?\d+\s*$/.test(id)) {
    // Reading digits as a BigInt takes time that grows faster than their count: a 1 MB id held the server's thread
    // half a second per event. Past the range of numbers, an id is no number greatest reads, as "abc" is not.
    if (id.trim().replace(/^-/, '').length > MAX_NUMERIC_ID_DIGITS) return undefined;
    const exact = BigInt(id.trim());
    return exact >= BigInt(Number.MIN_SAFE_INTEGER) && exact <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(exact) : exact;
  }
  const n = Number(id);
  return Number.isNaN(n) ? undefined : n;
}

/** Applies a dedupe strategy to ordered emits; returns the accepted ones and the new cache. */
export function applyDedupe(strategy: DedupeStrategy | undefined, cache: unknown, emits: EmittedEvent[]): { accepted: EmittedEvent[]; cache: unknown } {
  if (!strategy) return { accepted: emits, cache };
  switch (strategy) {
    case 'unique': {
      const seen = Array.isArray(cache) ? [...(cache as string[])] : [];
      const accepted: EmittedEvent[] = [];
      for (const emit of emits) {
        // `whole` too: a cache written before ids were digested holds long ids whole.
        const { key, whole } = cachedId(emit.id);
        if (seen.includes(key) || seen.includes(whole)) continue;
        accepted.push(emit);
        seen.push(key);
        if (seen.length > UNIQUE_CACHE_SIZE) seen.shift();
      }
      return { accepted, cache: seen };
    }
    case 'greatest': {
      // Another strategy's cache (the code changed its dedupe) is no number: it starts over, as a null one does.
      let greatest: number | bigint = typeof cache === 'number' ? cache : typeof cache === 'string' && /^-?\d+$/.test(cache) ? BigInt(cache) : -Infinity;
      const accepted: EmittedEvent[] = [];
      for (const emit of emits) {
        const id = numericId(emit.id);
        if (id === undefined || id <= greatest) continue;
        accepted.push(emit);
        greatest = id;
      }
      if (greatest === -Infinity) return { accepted, cache: null };
      // A bigint is kept as its digits: JSON has no integer past 2^53 that reads back exactly.
      return { accepted, cache: typeof greatest === 'bigint' ? String(greatest) : greatest };
    }
    case 'last': {
      const match =
        cache === null || cache === undefined
          ? -1
          : emits.findIndex((e) => {
              const { key, whole } = cachedId(e.id);
              return key === cache || whole === cache;
            });
      const accepted = emits.slice(match + 1);
      const last = accepted[accepted.length - 1];
      return { accepted, cache: last ? cachedId(last.id).key : (cache ?? null) };
    }
  }
}

/**
 * Turns the emits of each run (in run order) into pending events, each run's ordered by ts and deduped after the runs
 * before it: runs committed as one batch give the events they would give one by one (`last` matches the cached id in
 * one run's emits, and `ts` orders a run's events, not the batch's). Returns the updated dedupe cache.
 */
export function pendingEmits(strategy: DedupeStrategy | undefined, cache: unknown, runs: EmittedEvent[][]): { pending: PendingEvent[]; cache: unknown } {
  const pending: PendingEvent[] = [];
  let next = cache;
  for (const emits of runs) {
    const result = applyDedupe(strategy, next, orderByTs(emits));
    next = result.cache;
    for (const e of result.accepted) pending.push({ stream: 'emit', name: streamNameOf(e.name), event: e.event, key: e.id, summary: e.summary, ts: e.ts });
  }
  return { pending, cache: next };
}
