// How times, durations and sources' kinds read on the page.

/** The reader's own date and time format, with the time zone named (a shared screenshot or log is then unambiguous). */
export function formatTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  return new Date(ms).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'long' });
}

export function formatAgo(ms: number | null | undefined, now = Date.now()): string {
  if (ms === null || ms === undefined) return 'never';
  const seconds = Math.round((now - ms) / 1000);
  if (seconds < 60) return `${Math.max(seconds, 0)} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return formatTime(ms);
}

export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  // Each unit is chosen by the figure as shown, rounded: 59,960 ms reads "1 min", not "60.0 s".
  if (Math.round(ms) < 1000) return `${Math.round(ms)} ms`;
  for (const digits of [2, 1]) {
    const seconds = (ms / 1000).toFixed(digits);
    if (Number(seconds) < (digits === 2 ? 10 : 60)) return `${seconds} s`;
  }
  // Whole minutes and hours read as such ("30 min"); others with one decimal.
  const shown = (amount: number) => amount.toFixed(1).replace(/\.0$/, '');
  const minutes = shown(ms / 60_000);
  return Number(minutes) < 60 ? `${minutes} min` : `${shown(ms / 3_600_000)} h`;
}

export type SourceKind = 'HTTP' | 'Timer' | 'HTTP + timer' | 'Listener';

/** The object values of configured props as the API returns them. */
function objectProps(configuredProps: Record<string, unknown>): Array<Record<string, unknown>> {
  return Object.values(configuredProps).filter((v): v is Record<string, unknown> => typeof v === 'object' && v !== null);
}

/**
 * What triggers a source, read from its configured props as the API returns them: an HTTP interface comes back as
 * `{ endpoint_url }`, a timer as `{ cron, interval_seconds }`; a source with neither runs on subscribed events.
 */
export function sourceKind(configuredProps: Record<string, unknown>): SourceKind {
  const values = objectProps(configuredProps);
  const http = values.some((v) => typeof v.endpoint_url === 'string');
  const timer = values.some((v) => 'interval_seconds' in v || 'cron' in v);
  if (http) return timer ? 'HTTP + timer' : 'HTTP';
  return timer ? 'Timer' : 'Listener';
}

/** A source's timer in words ("every 15 min", "cron 0 9 * * 1-5 (Europe/Paris)"), or undefined without one. */
export function timerSchedule(configuredProps: Record<string, unknown>): string | undefined {
  const timer = objectProps(configuredProps).find((v) => 'interval_seconds' in v || 'cron' in v);
  return timer && triggerSchedule(timer);
}

/** A timer (`{ cron, timezone }` or `{ interval_seconds }`) in words; undefined for anything else. */
export function triggerSchedule(timer: Record<string, unknown>): string | undefined {
  if (typeof timer.cron === 'string') return `cron ${timer.cron}${typeof timer.timezone === 'string' ? ` (${timer.timezone})` : ' (UTC)'}`;
  if (typeof timer.interval_seconds !== 'number') return undefined;
  const seconds = timer.interval_seconds;
  if (seconds % 3600 === 0) return `every ${seconds / 3600} h`;
  if (seconds % 60 === 0) return `every ${seconds / 60} min`;
  return `every ${seconds} s`;
}

export function endpointUrl(configuredProps: Record<string, unknown>): string | undefined {
  for (const value of Object.values(configuredProps)) {
    if (typeof value === 'object' && value !== null && typeof (value as { endpoint_url?: unknown }).endpoint_url === 'string') {
      return (value as { endpoint_url: string }).endpoint_url;
    }
  }
  return undefined;
}

/** The epoch milliseconds an event id (`<epoch_ms>-<sequence>`) starts with. */
export function eventTime(id: string): number {
  return Number(id.split('-')[0]);
}

/** Event ids (`<epoch_ms>-<seq>`) in the order the events were committed. */
export function compareIds(a: string, b: string): number {
  const [am = 0, as = 0] = a.split('-').map(Number);
  const [bm = 0, bs = 0] = b.split('-').map(Number);
  return am - bm || as - bs;
}
