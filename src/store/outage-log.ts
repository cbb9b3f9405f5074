// Says a database outage that background work runs into once when it starts and once when it ends, instead of once
// per work loop and retry: a database down for ten minutes is two lines in the log, not thousands.
import type { Logger } from 'pino';
import { outageOf } from '../model/outages.js';

export class DatabaseOutageLog {
  private current: { since: number; failures: number } | undefined;

  constructor(private readonly logger: Logger) {}

  /**
   * Whether `error` means the database is unreachable (or its disk is full). Such an error is counted, and logged
   * only as the first of an outage; any other error is the caller's to log.
   */
  absorbed(error: unknown): boolean {
    const outage = outageOf(error);
    if (!outage) return false;
    if (this.current) {
      this.current.failures++;
      return true;
    }
    this.current = { since: Date.now(), failures: 1 };
    const what = outage.kind === 'disk_full' ? "the data directory's disk is full" : 'the database is unreachable';
    this.logger.error({ err: error }, `${what}: runs, timers and deliveries wait, and go on by themselves once it is back`);
    return true;
  }

  /** Background work reached the database again: the end of an outage, if one was logged. */
  reached(): void {
    if (!this.current) return;
    const { since, failures } = this.current;
    this.current = undefined;
    this.logger.warn({ seconds: Math.round((Date.now() - since) / 1000), failures }, 'the database is back: runs, timers and deliveries go on');
  }
}
