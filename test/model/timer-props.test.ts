// Timer props against the server's shortest interval: intervals and cron expressions alike.
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../src/config.js';
import { propSealer, SecretBox } from '../../src/lib/secrets.js';
import { validateProps } from '../../src/model/props.js';
import type { ServiceError } from '../../src/model/errors.js';
import type { PropDescriptor } from '../../src/runtime/types.js';

const TIMER: PropDescriptor[] = [{ name: 'timer', type: '$.interface.timer' }];
// A configured key: nothing is written (no secret prop is validated here anyway).
const secrets = propSealer(SecretBox.open('timer-props-test-key', '/nonexistent'), 'u_timer');

/** The problems validateProps lists for this timer value under `--min-timer-interval min`, or [] when it takes it. */
function problems(timer: unknown, min: number): string[] {
  try {
    validateProps(TIMER, { timer }, {}, secrets, { minTimerIntervalSeconds: min });
    return [];
  } catch (error) {
    return ((error as ServiceError).details as Array<{ message: string }>).map((d) => d.message);
  }
}

describe('timer props and --min-timer-interval', () => {
  it('refuses a cron expression whose runs come closer than the shortest interval, as it refuses such an interval', () => {
    expect(problems({ intervalSeconds: 60 }, 300)).toEqual(['intervalSeconds must be at least 300, got 60']);
    expect(problems({ cron: '* * * * *' }, 300)).toEqual(['cron expression "* * * * *" runs 60 s apart; timers here run at least 300 s apart']);
    // Every 10 minutes, but twice in a row at :00 and :01 once an hour.
    expect(problems({ cron: '0,1,10,20,30,40,50 * * * *' }, 300)).toEqual([
      'cron expression "0,1,10,20,30,40,50 * * * *" runs 60 s apart; timers here run at least 300 s apart',
    ]);
    expect(problems({ cron: '*/5 * * * *' }, 300)).toEqual([]);
    expect(problems({ cron: '0 9 * * 1-5', timezone: 'Europe/Paris' }, 3600)).toEqual([]);
    // At the default (15 s) or any setting up to a minute, every cron expression is far enough apart.
    expect(problems({ cron: '* * * * *' }, 60)).toEqual([]);
  });

  it("holds a cron to the shortest interval by its own spacing, not by a daylight-saving day's shorter one", () => {
    // A weekly cron's next 50 runs always span a spring-forward, whose week is 167 hours: read in the zone, it was
    // refused under a one-week minimum, and a daily one under a one-day minimum on the weeks before the change only.
    expect(problems({ cron: '0 0 * * 0', timezone: 'America/New_York' }, 604800)).toEqual([]);
    expect(problems({ cron: '0 12 * * 3', timezone: 'Europe/Berlin' }, 604800)).toEqual([]);
    expect(problems({ cron: '0 0 * * 0,3', timezone: 'Europe/Berlin' }, 604800)).toEqual([
      'cron expression "0 0 * * 0,3" runs 259200 s apart; timers here run at least 604800 s apart',
    ]);
  });

  it('refuses a time zone beside an interval, which would be ignored, but keeps one stored before that rule', () => {
    const message = 'timezone applies to a cron schedule only: an intervalSeconds timer runs every N seconds in any zone, so leave timezone out';
    expect(problems({ intervalSeconds: 60, timezone: 'Europe/Paris' }, 15)).toEqual([message]);
    expect(problems({ interval_seconds: 60, timezone: 'UTC' }, 15)).toEqual([message]);
    const stored = { timer: { intervalSeconds: 60, timezone: 'Europe/Paris' } };
    expect(validateProps(TIMER, stored, stored, secrets, { minTimerIntervalSeconds: 15 })).toEqual(stored);
  });

  it('says a cron with spaces around it has them, not that a field "second" is empty', () => {
    expect(problems({ cron: ' 0 9 * * *' }, 15)).toEqual(['cron expression " 0 9 * * *" has spaces before or after it: write "0 9 * * *"']);
    expect(problems({ cron: '0 9 * * *\n' }, 15)).toEqual(['cron expression "0 9 * * *\\n" has spaces before or after it: write "0 9 * * *"']);
    // Spaces between the fields are taken as cron daemons take them.
    expect(problems({ cron: '0  9 * * *' }, 15)).toEqual([]);
  });

  it('names a cron field out of range by the value written, not the one croner counts from zero', () => {
    // croner said "Invalid value for month: 12" of a 13, "day: 31" of a 32 or a 40, "day: -1" of a 0.
    expect(problems({ cron: '0 9 * 13 *' }, 15)).toEqual(['cron expression "0 9 * 13 *" has month 13; month is 1-12']);
    expect(problems({ cron: '0 9 32 * *' }, 15)).toEqual(['cron expression "0 9 32 * *" has day of month 32; day of month is 1-31']);
    expect(problems({ cron: '0 9 5-40 * *' }, 15)).toEqual(['cron expression "0 9 5-40 * *" has day of month 40; day of month is 1-31']);
    expect(problems({ cron: '0 9 0 * *' }, 15)).toEqual(['cron expression "0 9 0 * *" has day of month 0; day of month is 1-31']);
    expect(problems({ cron: '0 9 * 0,6 *' }, 15)).toEqual(['cron expression "0 9 * 0,6 *" has month 0; month is 1-12']);
    expect(problems({ cron: '0 9 * * 1-9' }, 15)).toEqual(['cron expression "0 9 * * 1-9" has day of week 9; day of week is 0-7 (0 and 7 are Sunday)']);
    expect(problems({ cron: '60 24 * * *' }, 15)).toEqual(['cron expression "60 24 * * *" has minute 60; minute is 0-59']);
    expect(problems({ cron: '0 9 1-31/10 * 0,7' }, 15)).toEqual([]);
  });

  it('says an interval too large to be safe is too long, not that it is no integer', () => {
    expect(problems({ intervalSeconds: 1e20 }, 15)).toEqual(['intervalSeconds must be at most 31536000 (365 days), got 100000000000000000000']);
    expect(problems({ intervalSeconds: 1.5e3 + 0.5 }, 15)).toEqual(['intervalSeconds must be an integer, got 1500.5']);
  });

  it('--min-timer-interval is at most the longest interval, so that some interval is always allowed', () => {
    const setting = SETTINGS.find((s) => s.flag === '--min-timer-interval');
    expect(() => setting?.parse?.('31536001')).toThrow('expected an integer from 1 to 31536000, got "31536001"');
    expect(setting?.parse?.('31536000')).toBe(31536000);
  });
});
