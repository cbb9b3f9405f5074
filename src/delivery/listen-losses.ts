// Says when a node's LISTEN connections were lost while the database itself stayed up (their backends terminated,
// a proxy that dropped them): once for all of them, as what it is, rather than as a database outage.
import type { Logger } from 'pino';
import type { Kysely } from 'kysely';
import { outageOf } from '../model/outages.js';
import { databaseAnswers } from '../store/live.js';
import type { DatabaseOutageLog } from '../store/outage-log.js';
import type { Database } from '../store/schema.js';

export class ListenLosses {
  /** The channels whose connection is lost and not back yet. */
  private readonly down = new Set<string>();
  /** When the loss now being told began (undefined: none is); one line for every channel lost with it. */
  private since: number | undefined;
  private probing = false;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly logger: Logger,
    private readonly outages: DatabaseOutageLog,
  ) {}

  /**
   * The LISTEN connection of `channel` failed. An error that reads as an outage is one only if the database does not
   * answer on another connection either: the pool is asked, and the outage log told if it does not answer. False for
   * any other error, which the caller logs itself.
   */
  failed(channel: string, error: unknown): boolean {
    if (!outageOf(error)) return false;
    this.down.add(channel);
    if (this.outages.ongoing) {
      this.outages.absorb(error);
      return true;
    }
    if (this.since !== undefined || this.probing) return true;
    this.probing = true;
    void databaseAnswers(this.db).then((failure) => {
      this.probing = false;
      if (failure !== undefined) {
        this.outages.absorb(outageOf(failure) ? failure : error);
        return;
      }
      this.since = Date.now();
      this.logger.warn(
        { err: error, channel },
        'lost the LISTEN connection to PostgreSQL (the database itself answers): until it is back this node polls its queues every second and its live streams read what they miss from the database',
      );
      if (!this.down.size) this.endLoss();
    });
    return true;
  }

  /** The LISTEN of `channel` is in place (again). */
  listening(channel: string): void {
    this.down.delete(channel);
    if (this.since !== undefined && !this.down.size && !this.probing) this.endLoss();
  }

  private endLoss(): void {
    const seconds = Math.round((Date.now() - this.since!) / 1000);
    this.since = undefined;
    this.logger.info({ seconds }, 'the LISTEN connection to PostgreSQL is back: this node stops polling every second, after looking once for what it missed');
  }
}
