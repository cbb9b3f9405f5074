// Caps the timers component code may leave pending, so that runs cannot pile up work that outlives them without end.
import timers from 'node:timers';
import { ReflectApply } from './primordials.js';

type TimerFunction = (callback: (...args: unknown[]) => unknown, ...rest: unknown[]) => unknown;
type ClearFunction = (handle: unknown) => void;

/**
 * From now on `setTimeout`, `setInterval` and `setImmediate` (global and from `node:timers`) throw a RangeError
 * while `max` of them are pending. A timeout or immediate stops counting when it fires or is cleared; an interval
 * when it is cleared. The worker's own code imports the originals from `node:timers` before this runs.
 * `afterCallback` runs after each callback of theirs has run (or thrown).
 */
export function capPendingTimers(max: number, afterCallback: () => void): void {
  let pending = 0;
  /** How to stop counting a timer, by its handle and by its numeric id (both can be cleared). */
  const release = new Map<unknown, () => void>();
  const pairs: Array<[keyof typeof timers & ('setTimeout' | 'setInterval' | 'setImmediate'), 'clearTimeout' | 'clearInterval' | 'clearImmediate', boolean]> = [
    ['setTimeout', 'clearTimeout', true],
    ['setInterval', 'clearInterval', false],
    ['setImmediate', 'clearImmediate', true],
  ];
  for (const [setName, clearName, firesOnce] of pairs) {
    const set = timers[setName] as unknown as TimerFunction;
    const clear = timers[clearName] as unknown as ClearFunction;
    const capped: TimerFunction = (callback, ...rest) => {
      if (typeof callback !== 'function') return set(callback, ...rest);
      if (pending >= max) {
        throw new RangeError(`a worker may hold at most ${max} pending timers (setTimeout, setInterval, setImmediate); clear the ones no longer needed`);
      }
      pending++;
      let counted = true;
      let handle: unknown;
      const stop = () => {
        if (!counted) return;
        counted = false;
        pending--;
        release.delete(handle);
        release.delete(idOf(handle));
      };
      // A function, not an arrow: Node calls a timer's callback with the Timeout as `this`, which some code uses.
      handle = set(
        function (this: unknown, ...args: unknown[]) {
          if (firesOnce) stop();
          try {
            return ReflectApply(callback, this, args);
          } finally {
            afterCallback();
          }
        },
        ...rest,
      );
      release.set(handle, stop);
      if (idOf(handle) !== undefined) release.set(idOf(handle), stop);
      return handle;
    };
    const cappedClear: ClearFunction = (handle) => {
      release.get(handle)?.();
      clear(handle);
    };
    for (const holder of [globalThis, timers] as Array<Record<string, unknown>>) {
      holder[setName] = capped;
      holder[clearName] = cappedClear;
    }
  }
}

/** A Timeout's numeric id (what `+timeout` gives), which clearTimeout also takes. */
function idOf(handle: unknown): number | undefined {
  const toPrimitive = (handle as { [Symbol.toPrimitive]?: () => number } | null)?.[Symbol.toPrimitive];
  return typeof toPrimitive === 'function' ? toPrimitive.call(handle) : undefined;
}
