// Fires timer props of active sources: each due time once, missed ones as a single catch-up, never stacked.
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from 'pino';
import type { Clock, ClockTimer } from '../lib/clock.js';
import { CoalescingTask } from '../lib/coalescing-task.js';
import type { PollCadence } from '../lib/poll-cadence.js';
import type { Store } from '../store/database.js';
import * as timers from '../store/timers.js';
import type { DatabaseOutageLog } from '../store/outage-log.js';
import { isId, newId } from '../model/ids.js';
import { hasUnfinishedTimerRun } from '../store/workflows.js';
import { queueRuns, type NewRun } from '../commit/workflow-runs.js';
import { nextDue, type TimerEvent, type TimerSchedule } from '../model/schedules.js';
import type { QuotaVerdict } from '../model/quotas.js';
import type { QuotaCheck } from '../commit/routing.js';
import type { Transaction } from 'kysely';
import type { Database } from '../store/schema.js';
import { storeAndRoute } from '../commit/effects.js';
import { errorEvent } from '../commit/error-events.js';
import { workflowErrorEvent } from '../commit/workflow-steps.js';
import { queueInvocations, type NewInvocation } from '../commit/invocations.js';
import type { CommittedEvents, EventRouter } from '../commit/routing.js';

/**
 * Longest sleep between checks while every timer written elsewhere is announced (a poke); while signals may be
 * missed the cadence's short fallback applies instead.
 */
const WATCH_MS = 30_000;
const CLAIM_BATCH = 500;

/** Told which sources got runs queued, once they are committed (the dispatcher's wake). */
export type RunsQueued = (sourceIds: string[]) => void;

/** Told which workflow runs were queued, once they are committed (the workflow runner's wake). */
export type WorkflowRunsQueued = (runIds: string[]) => void;

export class TimerScheduler {
  private timeout: ClockTimer | undefined;
  private readonly firing = new CoalescingTask(() => this.fire());
  /** Off until start(), and again after stop(): an `api` node never fires timers. */
  private stopped = true;

  constructor(
    private readonly store: Store,
    private readonly runsQueued: RunsQueued,
    private readonly workflowRunsQueued: WorkflowRunsQueued,
    private readonly quotas: QuotaCheck,
    private readonly retention: number,
    private readonly router: EventRouter,
    private readonly logger: Logger,
    private readonly clock: Clock,
    private readonly cadence: PollCadence,
    /** Where failures that are a database outage are said, once for the whole outage. */
    private readonly outages: DatabaseOutageLog,
    private readonly metrics?: Metrics,
  ) {
    // Signals lost or back: look at once (for what was missed), then at the new cadence.
    cadence.onChange(() => this.poke());
  }

  start(): void {
    this.stopped = false;
    this.arm(0);
  }

  stop(): void {
    this.stopped = true;
    this.timeout?.cancel();
  }

  /** Looks for due timers now (after a source change wrote new timer rows). */
  poke(): void {
    this.arm(0);
  }

  /** Sleeps until the earliest due time (at most the cadence's wait), then fires what is due. */
  private arm(delayMs: number): void {
    if (this.stopped) return;
    this.timeout?.cancel();
    this.timeout = this.clock.after(Math.max(0, Math.min(delayMs, this.cadence.waitMs(WATCH_MS))), () => this.firing.request());
  }

  private async fire(): Promise<void> {
    if (this.stopped) return;
    try {
      const fired: string[] = [];
      const workflowRuns: string[] = [];
      do {
        const due = await timers.dueTimers(this.store.db, this.clock.now(), CLAIM_BATCH);
        this.outages.reached('read');
        if (due.length) {
          const result = await this.fireDue(due);
          this.outages.reached('written');
          fired.push(...result.sources);
          workflowRuns.push(...result.workflowRuns);
        }
        if (due.length < CLAIM_BATCH) break;
      } while (!this.stopped);
      if (fired.length) this.runsQueued(fired);
      if (workflowRuns.length) this.workflowRunsQueued(workflowRuns);
      const next = await timers.nextDueMs(this.store.db);
      this.arm(next === undefined ? Infinity : next - this.clock.now());
    } catch (error) {
      if (!this.stopped && !this.outages.absorb(error)) this.logger.error({ err: error }, 'timer scheduler failed; retrying');
      this.arm(this.cadence.fallbackMs);
    }
  }

  /**
   * Claims due times in one transaction: each claimed timer gets its run queued in that transaction, or a
   * quota error recorded, or is skipped while its own previous run (that timer prop's) is pending. A workflow's timer (its id in
   * `source_id`) starts a workflow run. Returns the sources given a run and the workflow runs queued.
   */
  private async fireDue(due: timers.TimerRow[]): Promise<{ sources: string[]; workflowRuns: string[] }> {
    const nowMs = this.clock.now();
    const quotaErrors: CommittedEvents[] = [];
    const fired = await this.store.db.transaction().execute(async (trx) => {
      // Read in the transaction, after the pending check: a previous run that finished in between is counted.
      const verdicts = new Map<string, QuotaVerdict>();
      const verdictOf = async (userId: string) => verdicts.get(userId) ?? verdicts.set(userId, await this.quotas.check(userId, nowMs, trx)).get(userId)!;
      const runs: NewInvocation[] = [];
      const workflowRuns: NewRun[] = [];
      for (const timer of due) {
        const workflow = isId(timer.source_id, 'p');
        const schedule = JSON.parse(timer.schedule) as TimerSchedule;
        const dueMs = Number(timer.next_due_ms);
        // Every missed due time collapses into this one run; the next is the first due time after now.
        const following = nextDue(schedule, nowMs, schedule.cron === undefined ? dueMs : nowMs);
        if (!(await timers.advanceTimer(trx, timer, following))) continue;
        this.metrics?.timerFired(nowMs - dueMs);
        if (workflow ? await hasUnfinishedTimerRun(trx, timer.source_id) : await timers.hasPendingTimerRun(trx, timer.source_id, timer.prop_name)) {
          this.logger.debug({ sourceId: timer.source_id, prop: timer.prop_name }, 'timer run skipped: the previous one is still queued or running');
          continue;
        }
        const event: TimerEvent = { timestamp: Math.floor(dueMs / 1000), interval_seconds: schedule.intervalSeconds ?? null, cron: schedule.cron ?? null };
        const quota = await verdictOf(timer.user_id);
        if (quota.allowed && workflow) workflowRuns.push({ workflowId: timer.source_id, userId: timer.user_id, trigger: 'timer', event });
        else if (quota.allowed) runs.push({ sourceId: timer.source_id, userId: timer.user_id, trigger: 'timer', event, propName: timer.prop_name });
        else quotaErrors.push(await this.recordQuotaError(trx, timer, event, quota, nowMs));
      }
      await queueInvocations(trx, this.store.dialect, runs, nowMs);
      const queued = await queueRuns(trx, this.store.dialect, workflowRuns, nowMs);
      return { sources: runs.map((r) => r.sourceId), workflowRuns: queued.map((r) => r.id) };
    });
    for (const committed of quotaErrors) this.router.afterCommit(committed);
    return fired;
  }

  private recordQuotaError(
    trx: Transaction<Database>,
    timer: timers.TimerRow,
    event: TimerEvent,
    quota: QuotaVerdict,
    nowMs: number,
  ): Promise<CommittedEvents> {
    const error = { name: 'QuotaExceededError', message: quota.reason!, code: 'quota_exceeded' };
    const emitter = { id: timer.source_id, userId: timer.user_id, depth: 0 };
    const options = { dialect: this.store.dialect, retention: this.retention, nowMs, router: this.router };
    // A workflow's `$errors` have the workflow error shape: the run refused before its first step.
    const report = isId(timer.source_id, 'p')
      ? workflowErrorEvent(
          { id: newId('wr'), workflow_id: timer.source_id, user_id: timer.user_id, trigger: 'timer', event: JSON.stringify(event), created_ms: nowMs },
          'trigger',
          { ...error, stack: `QuotaExceededError: ${quota.reason!}` },
          nowMs,
        )
      : errorEvent(timer.source_id, error, { invocationId: newId('inv'), trigger: 'timer', event }, nowMs);
    return storeAndRoute(trx, emitter, [report], options);
  }
}
