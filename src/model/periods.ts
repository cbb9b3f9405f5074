// The periods usage is counted over: the UTC day (free plan) and the monthly billing period (paid plan).

const DAY_MS = 86_400_000;
/** The last day asked for: every request and batch asks, and nearly always for the same day. */
let lastDay = { start: 0, key: 'day:1970-01-01' };

/** `day:YYYY-MM-DD` of the UTC day holding `atMs`. */
export function dayPeriod(atMs: number): string {
  const start = atMs - (((atMs % DAY_MS) + DAY_MS) % DAY_MS);
  if (start !== lastDay.start) lastDay = { start, key: `day:${new Date(start).toISOString().slice(0, 10)}` };
  return lastDay.key;
}

/** Billing periods run monthly from the account's creation; returns the one holding `atMs`, in epoch seconds. */
export function billingPeriod(createdAtSeconds: number, atMs: number): { start: number; end: number; key: string } {
  const created = new Date(createdAtSeconds * 1000);
  const at = new Date(atMs);
  let months = (at.getUTCFullYear() - created.getUTCFullYear()) * 12 + (at.getUTCMonth() - created.getUTCMonth());
  const startOf = (m: number) => addMonths(created, m);
  if (startOf(months).getTime() > atMs) months -= 1;
  const start = Math.floor(startOf(months).getTime() / 1000);
  const end = Math.floor(startOf(months + 1).getTime() / 1000);
  return { start, end, key: `billing:${start}` };
}

/** Adds months keeping the day of month, clamped to the month's last day (Jan 31 + 1 month = Feb 28/29). */
function addMonths(date: Date, months: number): Date {
  const target = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + months, 1, date.getUTCHours(), date.getUTCMinutes(), date.getUTCSeconds()));
  const lastDay = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  target.setUTCDate(Math.min(date.getUTCDate(), lastDay));
  return target;
}
