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

const HOUR_MS = 3_600_000;
/** Zone offsets change at most twice a year and never twice within this span, so sampling at it finds every change. */
const OFFSET_SAMPLE_MS = 6 * HOUR_MS;
const offsetFormats = new Map<string, Intl.DateTimeFormat>();

/** The UTC offset of `zone` at `ms`, in minutes (-300 for New York in winter). */
function offsetMinutes(zone: string, ms: number): number {
  let format = offsetFormats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' });
    offsetFormats.set(zone, format);
  }
  const name = format.formatToParts(ms).find((part) => part.type === 'timeZoneName')?.value ?? 'GMT';
  const match = /GMT([+-])(\d\d):(\d\d)/.exec(name);
  return match ? (match[1] === '-' ? -1 : 1) * (Number(match[2]) * 60 + Number(match[3])) : 0;
}

/**
 * A span of instants around a change of the zone's offset. A fall-back's repeated hour: [startMs, endMs) read again
 * the local times before startMs, and `offset` is the zone's offset during it. A spring-forward's: [startMs, endMs)
 * read at `offset`, the offset before the change, are the local times the change skips, each an hour (the change's
 * length) after itself.
 */
interface RepeatedSpan {
  startMs: number;
  endMs: number;
  /** In minutes: the zone's during a repeated span, the one before the change for a skipped span. */
  offset: number;
}

/** The spans of `zone`'s fall-backs (or spring-forwards) that end after `fromMs` and start at or before `toMs`, earliest first. */
function repeatedSpans(zone: string, fromMs: number, toMs: number, skipped = false): RepeatedSpan[] {
  const spans: RepeatedSpan[] = [];
  let at = fromMs - 3 * HOUR_MS;
  let offset = offsetMinutes(zone, at);
  while (at < toMs) {
    const next = Math.min(at + OFFSET_SAMPLE_MS, toMs);
    const nextOffset = offsetMinutes(zone, next);
    if (skipped ? nextOffset > offset : nextOffset < offset) {
      let low = at;
      let high = next;
      while (high - low > 1) {
        const mid = Math.floor((low + high) / 2);
        if (offsetMinutes(zone, mid) === offset) low = mid;
        else high = mid;
      }
      const span = { startMs: high, endMs: high + Math.abs(offset - nextOffset) * 60_000, offset: skipped ? offset : nextOffset };
      if (span.endMs > fromMs) spans.push(span);
    }
    at = next;
    offset = nextOffset;
  }
  return spans;
}

/** The span's length in milliseconds: its instants read again the local times of the span just before it. */
const repeatLength = (span: RepeatedSpan) => span.endMs - span.startMs;

/**
 * croner's next run after `afterMs` outside a fall-back's two readings of a repeated hour, which nextCronRun works out
 * itself. croner reads each local time there once, and which reading it takes depends on the zone: the first west of
 * UTC (New York), the second east of it (Paris, Sydney), so taken as it is, a fall-back east of UTC lost an hour. From
 * inside a repeated hour it may also answer a time already past, which would fire the timer over and over. `seen`
 * gets each time croner answered: a repeated hour where the cron runs lies within hours of one of them.
 */
function cronerNext(cron: Cron, zone: string, afterMs: number, seen: number[]): number | undefined {
  let from = afterMs;
  for (let tries = 0; tries < 4; tries++) {
    const next = cron.nextRun(new Date(from))?.getTime();
    if (next === undefined) return undefined;
    seen.push(next);
    const at = next > afterMs ? next : from;
    const span = repeatedSpans(zone, at, at + 3 * HOUR_MS).find((s) => s.startMs - repeatLength(s) <= at && at < s.endMs);
    if (next > afterMs && !span) return next;
    from = Math.max(from + 1, span ? span.endMs - 1 : from + 60_000);
  }
  return undefined;
}

/**
 * The next run of a cron in a zone with daylight saving time, as cron daemons have it. A fall-back's repeated hour
 * reads each local time twice: a schedule whose minute or hour field is a wildcard (`0 * * * *`, `*\/15 1 * * *`) runs
 * every hour, so it runs in both readings; one at fixed times (`30 1 * * *`) runs once, at the first. Both readings
 * are worked out here at the span's own offsets, in any zone, whichever one croner would pick.
 */
function nextCronRun(schedule: TimerSchedule & { cron: string }, afterMs: number): number {
  const zone = schedule.timezone ?? 'UTC';
  const cron = new Cron(schedule.cron, { timezone: zone, paused: true });
  const seen = [afterMs];
  let next = cronerNext(cron, zone, afterMs, seen);
  const [minute = '', hour = ''] = schedule.cron.trim().split(/\s+/);
  const everyHour = minute.startsWith('*') || hour.startsWith('*');
  const earliest = (offset: number, fromMs: number, beforeMs: number) => {
    const run = new Cron(schedule.cron, { utcOffset: offset, paused: true }).nextRun(new Date(Math.max(afterMs, fromMs - 1)))?.getTime();
    if (run !== undefined && run > afterMs && run < beforeMs && (next === undefined || run < next)) next = run;
  };
  // croner answers some reading of a repeated local time the cron runs at, or an earlier time: the repeated hours to
  // look at are near afterMs or near one of its answers (a repeated hour is at most two hours long), not a year of them.
  const spans = new Map<number, RepeatedSpan>();
  const skips = new Map<number, RepeatedSpan>();
  for (const at of seen) {
    const [from, to] = [Math.max(afterMs, at - 3 * HOUR_MS), at + 3 * HOUR_MS];
    for (const span of repeatedSpans(zone, from, to)) spans.set(span.startMs, span);
    for (const span of repeatedSpans(zone, from, to, true)) skips.set(span.startMs, span);
  }
  for (const span of spans.values()) {
    // The first reading: the span's local times as they were read just before it, at the offset before the change.
    earliest(span.offset + repeatLength(span) / 60_000, span.startMs - repeatLength(span), span.startMs);
    if (everyHour) earliest(span.offset, span.startMs, span.endMs);
  }
  // Each skipped local time runs an hour later (02:30 at 03:30 EDT): croner moves only the first of them (02:00 of
  // `*/15 2 * * *`) on to the time that exists, and answers the next day after it.
  for (const span of skips.values()) earliest(span.offset, span.startMs, span.endMs);
  return next ?? Number.MAX_SAFE_INTEGER;
}

/** The first due time of `schedule` strictly after `afterMs`, keeping an interval's phase from `phaseMs`. */
export function nextDue(schedule: TimerSchedule, afterMs: number, phaseMs: number = afterMs): number {
  if (schedule.cron !== undefined) return nextCronRun(schedule as TimerSchedule & { cron: string }, afterMs);
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

/**
 * The time between the next two runs of a cron after `nowMs`, so that timer echoes always carry `interval_seconds`.
 * It comes from `nextDue`, the runs the timer really makes: croner alone skips a fall-back's repeated hour (7200 for
 * an hourly New York cron), and the server's clock, not the system's, says which two runs are next.
 */
export function cronIntervalSeconds(schedule: TimerSchedule, nowMs: number): number {
  const first = nextDue(schedule, nowMs);
  if (first === Number.MAX_SAFE_INTEGER) return 0;
  const second = nextDue(schedule, first);
  return second === Number.MAX_SAFE_INTEGER ? 0 : Math.round((second - first) / 1000);
}
