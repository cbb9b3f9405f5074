// Keeps this node's row in the nodes table fresh (PostgreSQL clusters), and says what the live rows show: whether any
// node runs work, and whether the nodes disagree on a setting they must share.
import os from 'node:os';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { type Clock, type ClockTimer, every } from '../lib/clock.js';
import type { Store } from '../store/database.js';
import { deleteNode, deleteNodesGoneBefore, liveNodes, type NodeRow, saveNode } from '../store/nodes.js';
import type { DatabaseOutageLog } from '../store/outage-log.js';

/** How often a node renews its row. */
export const PRESENCE_BEAT_MS = 5000;
/** A node whose row went unrenewed this long is gone: three beats missed (a pause, a lost machine). */
export const PRESENCE_GONE_MS = 3 * PRESENCE_BEAT_MS;
/** The rows of nodes gone this long are removed: past it, nothing reads them. */
const FORGET_GONE_MS = 24 * 60 * 60 * 1000;

/** What the live rows say of the nodes that run work (`worker` and `all`): `unchecked` until the first look. */
export type WorkerNodesCheck = 'ok' | 'none' | 'unchecked';

export class NodePresence {
  private timer: ClockTimer | undefined;
  /** The beat in flight: stop waits for it, so that it cannot write the row again after stop deleted it. */
  private beating: Promise<void> | undefined;
  /** Nodes that run work alive at the last look (this one included); undefined before it. */
  private workers: number | undefined;
  private saidNoWorker = false;
  /** The time of the first look that found no node running work, since the last that found one; undefined while one is alive. */
  private noWorkerSince: number | undefined;
  /** Nodes whose different --event-retention was said already, by id: once each. */
  private readonly saidRetention = new Set<string>();
  private readonly row: NodeRow;

  constructor(
    private readonly store: Store,
    config: Pick<Config, 'role' | 'eventRetention'>,
    id: string,
    private readonly parts: { logger: Logger; outages: DatabaseOutageLog; clock: Clock },
  ) {
    const now = parts.clock.now();
    this.row = { id, role: config.role, host: os.hostname(), pid: process.pid, event_retention: config.eventRetention, started_ms: now, seen_ms: now };
  }

  /** Writes the row and looks once (at start the database answers), then renews it every PRESENCE_BEAT_MS. */
  async start(): Promise<void> {
    await this.beat();
    // A beat that outlasts the period (a slow database) is not doubled: the next one waits for its turn.
    this.timer = every(this.parts.clock, PRESENCE_BEAT_MS, () => void (this.beating ??= this.beat().finally(() => (this.beating = undefined))));
  }

  /** Whether a node that runs work is alive; a node that runs work itself always is. */
  workerNodes(): WorkerNodesCheck {
    if (this.row.role !== 'api') return 'ok';
    return this.workers === undefined ? 'unchecked' : this.workers > 0 ? 'ok' : 'none';
  }

  /** How many nodes that run work are alive, as the last look saw them (at least this one, if it runs work). */
  workerNodeCount(): number {
    return Math.max(this.workers ?? 0, this.row.role === 'api' ? 0 : 1);
  }

  /** Stops renewing and deletes the row, so that the others see this node gone at once rather than 15 s later. */
  async stop(): Promise<void> {
    this.timer?.cancel();
    await this.beating;
    await deleteNode(this.store.db, this.row.id).catch(() => undefined);
  }

  private async beat(): Promise<void> {
    const now = this.parts.clock.now();
    try {
      await saveNode(this.store.db, { ...this.row, seen_ms: now });
      this.judge(await liveNodes(this.store.db, now - PRESENCE_GONE_MS), now);
      await deleteNodesGoneBefore(this.store.db, now - FORGET_GONE_MS);
    } catch (error) {
      if (!this.parts.outages.absorb(error)) this.parts.logger.warn({ err: error }, "could not renew this node's row in the nodes table; trying again");
    }
  }

  private judge(nodes: NodeRow[], now: number): void {
    const { logger } = this.parts;
    const workers = nodes.filter((node) => node.role !== 'api').length;
    this.workers = workers;
    // Said once none has been alive for 15 s, not at the first look without one: an api node started beside its workers
    // gives them the time to write their rows, and a worker stopped (its row deleted at once) for a restart the time to
    // come back, before the log says work waits.
    const noWorkerSince = workers > 0 ? undefined : (this.noWorkerSince ?? now);
    this.noWorkerSince = noWorkerSince;
    if (this.row.role === 'api' && noWorkerSince !== undefined && !this.saidNoWorker && now - noWorkerSince >= PRESENCE_GONE_MS) {
      this.saidNoWorker = true;
      logger.warn(
        'no worker node (--role worker or all) has been alive for 15 s: requests are acknowledged and queued, but no run, timer, delivery or send happens until one starts',
      );
    } else if (workers > 0 && this.saidNoWorker) {
      this.saidNoWorker = false;
      logger.info({ workerNodes: workers }, 'a worker node is alive again: queued work runs');
    }
    for (const node of nodes) {
      if (node.event_retention === this.row.event_retention || this.saidRetention.has(node.id)) continue;
      this.saidRetention.add(node.id);
      logger.warn(
        { node: node.id, host: node.host, pid: node.pid },
        `another node (${node.role} on ${node.host}, pid ${node.pid}) keeps --event-retention ${node.event_retention}, this one ${this.row.event_retention}: give every node the same, else a live stream can miss events after a lost connection`,
      );
    }
  }
}
