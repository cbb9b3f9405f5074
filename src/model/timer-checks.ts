// Checks a timer prop's schedule: interval bounds, cron syntax and spacing, and its time zone.
import { Cron } from 'croner';
import { quote, shorten } from '../runtime/worker/quote.js';
import { isTimeZone, MAX_TIMER_INTERVAL_SECONDS, type TimerSchedule } from './schedules.js';

/** The operator's rules for props: today only the shortest timer interval (--min-timer-interval). */
export interface PropRules {
  minTimerIntervalSeconds: number;
}

/**
 * The operator's shortest interval holds for cron too. Cron steps by whole minutes, so only a setting above 60 s can
 * refuse one; the closest two of its next 50 runs stand for its shortest gap (its fields repeat well within that).
 * They are read in UTC: in a zone, a spring-forward's short day or week would refuse a daily or weekly cron under a
 * one-day or one-week minimum, and only when deployed in the weeks before the change.
 */
function cronGapProblems(expression: string, minSeconds: number): string[] {
  if (minSeconds <= 60) return [];
  const runs = new Cron(expression, { timezone: 'UTC', paused: true }).nextRuns(50).map((run) => run.getTime());
  // The closest two, not the first pair found: the message says the same gap whichever weekday it is deployed on.
  const gap = Math.min(...runs.slice(1).map((run, i) => (run - runs[i]!) / 1000));
  return gap < minSeconds ? [`cron expression ${quote(expression)} runs ${gap} s apart; timers here run at least ${minSeconds} s apart`] : [];
}

/** Each field's name and bounds as written; croner counts days and months from zero in its messages. */
const CRON_FIELDS: Array<{ name: string; min: number; max: number; note?: string }> = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12 },
  { name: 'day of week', min: 0, max: 7, note: ' (0 and 7 are Sunday)' },
];

/**
 * The first number of a field out of its bounds, named as written: croner said "Invalid value for month: 12" of a 13,
 * and "day: -1" of a 0. Names, steps and croner's own forms (L, #) are left to croner.
 */
function cronRangeProblems(expression: string): string[] {
  const fields = expression.trim().split(/\s+/);
  for (const [i, field] of CRON_FIELDS.entries()) {
    for (const part of fields[i]!.split(',')) {
      for (const value of part.split('/')[0]!.split('-')) {
        // Longer digit runs are left to croner too, whose message quotes the expression shortened.
        if (!/^\d{1,6}$/.test(value)) continue;
        const n = Number(value);
        if (n < field.min || n > field.max) {
          return [`cron expression ${quote(expression)} has ${field.name} ${n}; ${field.name} is ${field.min}-${field.max}${field.note ?? ''}`];
        }
      }
    }
  }
  return [];
}

/**
 * The problems of a timer's schedule. A schedule `kept` as stored is not held to a --min-timer-interval raised since,
 * nor to rules added since: else the source could not even be switched off or renamed. A new schedule must meet them.
 */
export function checkTimer(schedule: TimerSchedule | undefined, rules: PropRules, kept = false): string[] {
  if (!schedule) return ["needs { intervalSeconds } or { cron }, in configured_props or as the prop's default"];
  const minSeconds = kept ? 1 : rules.minTimerIntervalSeconds;
  // An interval runs every N seconds whatever the zone: a time zone beside it would be silently ignored.
  if (schedule.cron === undefined && schedule.timezone !== undefined && !kept) {
    return ['timezone applies to a cron schedule only: an intervalSeconds timer runs every N seconds in any zone, so leave timezone out'];
  }
  if (schedule.timezone !== undefined) {
    if (typeof schedule.timezone !== 'string') return ['timezone must be a string'];
    // croner accepts any name until it computes a run: the zone is checked here, so that it never fails later.
    if (!isTimeZone(schedule.timezone)) return [`timezone must be an IANA time zone such as "Europe/Paris", got ${quote(schedule.timezone)}`];
  }
  if (schedule.cron !== undefined) {
    if (typeof schedule.cron !== 'string' || schedule.cron.trim().split(/\s+/).length !== 5) {
      return [`cron must be a 5-field expression, got ${quote(schedule.cron)}`];
    }
    // croner refuses spaces around the expression with a message about a field "second" a 5-field cron does not have.
    if (schedule.cron !== schedule.cron.trim()) {
      return [`cron expression ${quote(schedule.cron)} has spaces before or after it: write ${quote(schedule.cron.trim())}`];
    }
    // croner reads `?` as the minute, hour or day the expression is parsed (`0 0 ? * *` runs monthly, on the day of
    // whatever read it last), not as "any" as Quartz and cloud schedulers do: refused rather than run on the wrong days.
    if (schedule.cron.includes('?')) return [`cron expression ${quote(schedule.cron)} uses "?": write * for any value`];
    const outOfRange = cronRangeProblems(schedule.cron);
    if (outOfRange.length) return outOfRange;
    let cron: Cron;
    try {
      cron = new Cron(schedule.cron, { timezone: schedule.timezone ?? 'UTC', paused: true });
    } catch (error) {
      return [`invalid cron expression ${quote(schedule.cron)}: ${shorten((error as Error).message)}`];
    }
    // A day that no month has parses, but its timer would wait forever: croner finds no next run (`0 0 30 2 *`), or
    // its search overflows the stack (`0 12 31 4,6,9,11 *`), which the timer's first due time would throw as a 500.
    let next: Date | null;
    try {
      next = cron.nextRun();
    } catch {
      next = null;
    }
    if (!next) return [`cron expression ${quote(schedule.cron)} never comes due`];
    return cronGapProblems(schedule.cron, minSeconds);
  }
  const interval = schedule.intervalSeconds;
  if (typeof interval !== 'number' || !Number.isInteger(interval)) return [`intervalSeconds must be an integer, got ${quote(interval)}`];
  if (interval < minSeconds) return [`intervalSeconds must be at least ${minSeconds}, got ${interval}`];
  if (interval > MAX_TIMER_INTERVAL_SECONDS) return [`intervalSeconds must be at most ${MAX_TIMER_INTERVAL_SECONDS} (365 days), got ${interval}`];
  return [];
}
