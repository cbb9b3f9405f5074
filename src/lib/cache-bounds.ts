// How the large in-memory caches bound their entry count without paying for it up front.

/**
 * lru-cache options for at most `entries` entries. lru-cache's `max` allocates its index arrays at full size when
 * the cache is built (2.4 MB for 100,000 entries, whether one is ever used); a `maxSize` counted one per entry
 * bounds the same way and grows with use.
 */
export function countedUpTo(entries: number): { maxSize: number; sizeCalculation: () => number } {
  return { maxSize: entries, sizeCalculation: () => 1 };
}
