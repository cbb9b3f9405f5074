// The deadline of an outbound attempt that gives an answer already received its chance before it calls time.
import type { Clock, ClockTimer } from './clock.js';

/**
 * Calls `expire` once `ms` have passed on `clock`, one turn of the event loop later than a plain timer. A process
 * paused past the deadline (SIGSTOP, a frozen VM, a long stall) wakes with both the expired timer and the answer
 * that arrived meanwhile waiting, and Node runs timers before it reads sockets: called at once, the deadline would
 * cut off an attempt that was answered in time, and the webhook or send would be made again. `setImmediate` runs
 * after the sockets are read, so an answer already there settles the attempt first (and cancel() then stops this).
 */
export function attemptDeadline(clock: Clock, ms: number, expire: () => void): ClockTimer {
  let immediate: NodeJS.Immediate | undefined;
  let cancelled = false;
  const timer = clock.after(ms, () => {
    if (!cancelled) immediate = setImmediate(() => cancelled || expire());
  });
  return {
    cancel: () => {
      cancelled = true;
      timer.cancel();
      if (immediate) clearImmediate(immediate);
    },
  };
}
