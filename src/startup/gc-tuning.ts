// V8 settings of the server process, set as it starts, that its measured load needs (BENCHMARKS.md, session 14).
import v8 from 'node:v8';

/**
 * Turns off V8's allocation-site pretenuring. Under a steady request load V8 may decide, from a few early scavenges in
 * which every in-flight request was still alive, to allocate some request objects straight into the old generation.
 * Dead there, they keep the young objects they point to alive through every scavenge, so that each request's whole
 * object graph is copied and promoted: 2.1–2.9 MB per scavenge instead of 0.1 MB, over three times the scavenge time,
 * and 10–20% fewer requests per second. Whether a run tips that way is decided at random in its first seconds, which
 * made ingest rounds bimodal. The flag is read at each collection, so setting it before any load is enough.
 */
export function tuneGarbageCollection(): void {
  v8.setFlagsFromString('--no-allocation-site-pretenuring');
}
