// Says a database outage that background work runs into once when it starts and once when it ends, instead of once
// per work loop and retry: a database down for ten minutes is two lines in the log, not thousands.
import type { Logger } from 'pino';
import { type Outage, outageOf } from '../model/outages.js';

export class DatabaseOutageLog {
  private current: { kind: Outage['kind']; readsGoOn: boolean; since: number; failures: number; writesAt: number } | undefined;
  private writes: () => number = () => 0;

  constructor(private readonly logger: Logger) {}

  /**
   * The store's count of writes taken (`Store.reached()`): a write committed by anything (a request, a loop that never
   * reports its writes here) ends an outage that only writes could end.
   */
  countWritesWith(writes: () => number): void {
    this.writes = writes;
  }

  /** Whether background work met an outage that it has not yet seen end. */
  get ongoing(): boolean {
    return this.current !== undefined;
  }

  /**
   * Takes `error` if it means the database is unreachable (or its disk is full): counted, and logged only if it is
   * the first of an outage. False for any other error, which the caller logs itself.
   */
  absorb(error: unknown): boolean {
    const outage = outageOf(error);
    if (!outage) return false;
    if (this.current) {
      this.current.failures++;
      this.current.writesAt = this.writes();
      return true;
    }
    const readsGoOn = outage.kind === 'disk_full' || outage.readsGoOn === true;
    this.current = { kind: outage.kind, readsGoOn, since: Date.now(), failures: 1, writesAt: this.writes() };
    const what = outage.kind === 'disk_full' ? "the data directory's disk is full" : 'the database is unreachable';
    this.logger.error({ err: error }, `${what}: runs, timers and deliveries wait, and go on by themselves once it is back`);
    return true;
  }

  /**
   * Background work reached the database again: the end of an outage, if one was logged. A full disk, SQLite's write
   * lock held by another process, or a write the file system refuses still let reads through, so only a write ends
   * those (else each loop's next read said "back" and its next write "unreachable", every second).
   */
  reached(how: 'read' | 'written'): void {
    if (!this.current || (this.current.readsGoOn && how === 'read' && this.writes() === this.current.writesAt)) return;
    const { kind, since, failures } = this.current;
    this.current = undefined;
    const what = kind === 'disk_full' ? "the data directory's disk has room again" : 'the database is back';
    this.logger.warn({ seconds: Math.round((Date.now() - since) / 1000), failures }, `${what}: runs, timers and deliveries go on`);
  }
}
