// V8 settings of the server process, set as it starts, that its measured load needs (BENCHMARKS.md, session 14).
import v8 from 'node:v8';

/**
 * Turns off V8's allocation-site pretenuring: under steady load V8 at random pretenured request objects whose dead old
 * copies then kept every younger request object alive through each scavenge (10–20% fewer requests per second).
 */
export function tuneGarbageCollection(): void {
  v8.setFlagsFromString('--no-allocation-site-pretenuring');
}
