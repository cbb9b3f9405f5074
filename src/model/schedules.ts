// Timer schedules: when an interval or cron timer is due next, and the event its run receives.
import { Cron } from 'croner';

/** A timer prop's configured schedule. */
export interface TimerSchedule {
  intervalSeconds?: number;
  cron?: string;
  timezone?: string;
}

/**
 * The longest timer interval, as `$.flow.delay` waits at most 365 days. A longer one would never come due in practice,
 * and from about 285,000 years on its due time in milliseconds is past what a number (or a Date) holds exactly.
 */
export const MAX_TIMER_INTERVAL_SECONDS = 365 * 24 * 3600;

/** Whether `name` is a time zone this runtime knows (IANA names such as "America/New_York", and "UTC"). */
export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** The event `run` receives from a timer. */
export interface TimerEvent {
  timestamp: number;
  interval_seconds: number | null;
  cron: string | null;
}

/** The first due time of `schedule` strictly after `afterMs`, keeping an interval's phase from `phaseMs`. */
export function nextDue(schedule: TimerSchedule, afterMs: number, phaseMs: number = afterMs): number {
  if (schedule.cron !== undefined) {
    const next = new Cron(schedule.cron, { timezone: schedule.timezone ?? 'UTC', paused: true }).nextRun(new Date(afterMs));
    return next ? next.getTime() : Number.MAX_SAFE_INTEGER;
  }
  const step = schedule.intervalSeconds! * 1000;
  if (phaseMs > afterMs) return phaseMs;
  return phaseMs + (Math.floor((afterMs - phaseMs) / step) + 1) * step;
}

/**
 * The first due time of a newly written timer: one interval from now, or the cron's next run. Interval
 * timers keep the millisecond phase of their deploy, which spreads many timers over the second instead of
 * firing them all at once; the event's `timestamp` is the due time floored to whole seconds.
 */
export function firstDue(schedule: TimerSchedule, nowMs: number): number {
  return schedule.cron === undefined ? nowMs + schedule.intervalSeconds! * 1000 : nextDue(schedule, nowMs);
}
