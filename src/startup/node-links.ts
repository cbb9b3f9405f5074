// How a node hears of the others: with PostgreSQL, the event bus and the cluster's signals over LISTEN/NOTIFY; on one
// node (SQLite), their in-process stand-ins.
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { LocalBus, PostgresBus, type EventBus } from '../delivery/bus.js';
import { type ClusterSignals, LocalSignals, PostgresSignals } from '../delivery/cluster-signals.js';
import { ListenLosses } from '../delivery/listen-losses.js';
import type { PollCadence } from '../lib/poll-cadence.js';
import type { Store } from '../store/database.js';
import type { DatabaseOutageLog } from '../store/outage-log.js';

/**
 * The bus carries committed events to live streams (with PostgreSQL, every node's to every node); the signals tell
 * the other nodes what this one queued and changed, so that they poll each second only while signals may be lost.
 */
export function linksBetweenNodes(
  store: Store,
  config: Pick<Config, 'databaseUrl'>,
  logger: Logger,
  cadence: PollCadence,
  outages: DatabaseOutageLog,
  /** How often each LISTEN connection is asked whether it still answers (LISTEN_CHECK_MS by default). */
  listenCheckMs?: number,
): { bus: EventBus; signals: ClusterSignals } {
  if (store.dialect !== 'postgres') {
    return { bus: new LocalBus((error) => logger.error({ err: error }, 'live fan-out failed')), signals: new LocalSignals() };
  }
  // One line for the LISTEN connections lost together, whichever of them noticed first.
  const losses = new ListenLosses(store.db, logger.child({ module: 'listen' }), outages);
  return {
    bus: new PostgresBus(store, config.databaseUrl!, logger.child({ module: 'bus' }), outages, losses, listenCheckMs),
    signals: new PostgresSignals(store, config.databaseUrl!, logger.child({ module: 'signals' }), cadence, outages, losses, listenCheckMs),
  };
}
