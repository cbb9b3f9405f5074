// Whether the service can do its job: liveness (the database answers) and readiness (migrations, database, disk
// room, a worker, not stopping), with whether any node runs work.
import fs from 'node:fs/promises';
import path from 'node:path';
import { isReachable, type Store } from '../store/database.js';
import { appliedMigrations, KNOWN_MIGRATIONS } from '../store/migrate.js';
import type { WorkerNodesCheck } from './node-presence.js';

export interface ReadinessChecks {
  /**
   * `locked`: it answers, but writes fail on SQLite's write lock another process holds (each after waiting 5 s);
   * `write_error`: it answers, but the file system refuses SQLite's writes (a read-only remount, say).
   */
  database: 'ok' | 'unreachable' | 'locked' | 'write_error';
  migrations: 'ok' | 'pending' | 'unknown';
  worker: 'ok' | 'cannot_start' | 'unchecked';
  /**
   * Whether a node that runs work (`worker` or `all`) is alive, this one or another (see NodePresence). `none` does
   * not make an api node unready: it still acknowledges and queues, and the work runs once a worker starts.
   */
  worker_nodes: WorkerNodesCheck;
  /** SQLite's data directory: `full` below MIN_FREE_BYTES, where writes soon fail (507); PostgreSQL's is not seen. */
  disk: 'ok' | 'full' | 'unchecked';
  stopping: boolean;
}

/** Less room than this in SQLite's data directory, and the node says it is not ready: one request may need more. */
const MIN_FREE_BYTES = 1024 * 1024;

export interface Readiness {
  ready: boolean;
  checks: ReadinessChecks;
  /** The names of the checks that failed, for the 503 body. */
  failing: string[];
}

/** A health probe's answer: its status, its body, and (on 503) the seconds of its Retry-After. */
export interface ProbeAnswer<Body> {
  status: 200 | 503;
  body: Body;
  retryAfterSeconds?: number;
}

/**
 * Seconds a 503 of a probe tells a client to wait, as the API's own 503s do: a probe or a script that honours
 * Retry-After does not hammer a node whose database is away.
 */
const PROBE_RETRY_AFTER_SECONDS = 5;

/** A worker check's answer is kept this long: starting a worker costs tens of milliseconds, and probes come every few seconds. */
const WORKER_CHECK_TTL_MS = 5000;

export class HealthService {
  private stopping = false;
  private workerCheck: { at: number; ok: Promise<boolean> } | undefined;

  constructor(
    private readonly store: Store,
    private readonly workers?: { canStartWorker(): Promise<boolean> },
    /** A cluster's node presence; without it (SQLite) this node is the whole service and runs the work itself. */
    private readonly nodes?: { workerNodes(): WorkerNodesCheck },
  ) {}

  databaseReachable(): Promise<boolean> {
    return isReachable(this.store);
  }

  /** Grows each time the database takes a write (or, on PostgreSQL, answers): see Store.reached. */
  databaseReached(): number {
    return this.store.reached();
  }

  /** From now on the node is not ready: a graceful stop has begun (the first thing close() does). */
  beginStop(): void {
    this.stopping = true;
  }

  isStopping(): boolean {
    return this.stopping;
  }

  /** `GET /healthz`, on the API port and on the metrics listener (a worker node's only port). */
  async livenessAnswer(): Promise<ProbeAnswer<{ status: 'ok'; database: 'ok' } | { status: 'error'; database: 'unreachable' }>> {
    if (await this.databaseReachable()) return { status: 200, body: { status: 'ok', database: 'ok' } };
    return { status: 503, body: { status: 'error', database: 'unreachable' }, retryAfterSeconds: PROBE_RETRY_AFTER_SECONDS };
  }

  /** `GET /readyz`, on the API port and on the metrics listener. */
  async readinessAnswer(): Promise<
    ProbeAnswer<{ status: 'ready'; checks: ReadinessChecks } | { status: 'not_ready'; not_ready: string[]; checks: ReadinessChecks }>
  > {
    const readiness = await this.readiness();
    if (readiness.ready) return { status: 200, body: { status: 'ready', checks: readiness.checks } };
    const body = { status: 'not_ready' as const, not_ready: readiness.failing, checks: readiness.checks };
    return { status: 503, body, retryAfterSeconds: PROBE_RETRY_AFTER_SECONDS };
  }

  async readiness(): Promise<Readiness> {
    const checks: ReadinessChecks = {
      database: 'ok',
      migrations: 'ok',
      worker: 'unchecked',
      worker_nodes: this.nodes?.workerNodes() ?? 'ok',
      disk: await this.diskRoom(),
      stopping: this.stopping,
    };
    try {
      const applied = new Set((await appliedMigrations(this.store.db, this.store.dialect)).map((m) => m.name));
      if (KNOWN_MIGRATIONS.some((name) => !applied.has(name))) checks.migrations = 'pending';
      else if (applied.size > KNOWN_MIGRATIONS.length) checks.migrations = 'unknown';
    } catch {
      checks.database = 'unreachable';
      checks.migrations = 'unknown';
    }
    if (checks.database === 'ok') checks.database = this.store.writeTrouble() ?? 'ok';
    if (!this.stopping && this.workers) checks.worker = (await this.canStartWorker()) ? 'ok' : 'cannot_start';
    const failing = [
      ...(checks.database !== 'ok' ? ['database'] : []),
      ...(checks.migrations !== 'ok' ? ['migrations'] : []),
      ...(checks.worker === 'cannot_start' ? ['worker'] : []),
      ...(checks.disk === 'full' ? ['disk'] : []),
      ...(checks.stopping ? ['stopping'] : []),
    ];
    return { ready: failing.length === 0, checks, failing };
  }

  private async diskRoom(): Promise<ReadinessChecks['disk']> {
    if (this.store.dialect !== 'sqlite') return 'unchecked';
    try {
      const stats = await fs.statfs(path.dirname(this.store.location));
      return stats.bavail * stats.bsize < MIN_FREE_BYTES ? 'full' : 'ok';
    } catch {
      return 'unchecked';
    }
  }

  private canStartWorker(): Promise<boolean> {
    const now = Date.now();
    if (!this.workerCheck || now - this.workerCheck.at > WORKER_CHECK_TTL_MS) {
      this.workerCheck = { at: now, ok: this.workers!.canStartWorker() };
    }
    return this.workerCheck.ok;
  }
}
