// Runs of workflows (an extension of the REST interface): start them by hand, from HTTP or as replays, and read them.
import type { Store } from '../store/database.js';
import * as workflows from '../store/workflows.js';
import { sendsOfRuns, type SendRow } from '../store/sends.js';
import { isId } from '../model/ids.js';
import { awaitedThroughOutage, notFound, ServiceError } from '../model/errors.js';
import { type Page, type PageRequest, toPage } from '../model/pagination.js';
import { DEFAULT_RUN_TIMEOUT_SECONDS } from '../model/workflows.js';
import type { NewRun } from '../commit/workflow-runs.js';
import type { WorkflowRunner } from '../engine/workflow-runner.js';
import { FLOW_DELAYED, FLOW_EXITED } from '../engine/run-answers.js';
import { answersHttp } from '../engine/workflow-run-data.js';
import type { HttpResponse, InvocationError } from '../runtime/types.js';
import type { QuotaService } from './quotas.js';
import type { WorkflowService } from './workflows.js';
import { quote } from '../runtime/worker/quote.js';

export interface RunStepView {
  name: string;
  status: 'succeeded' | 'failed';
  started_at_ms: number;
  duration_ms: number;
  $return_value?: unknown;
  exports: Record<string, unknown>;
  logs: unknown[];
  error?: unknown;
  /** `$.send.http`, `.email` and `.s3` of the step, carried out after it committed. */
  sends: Array<{ kind: string; state: string; attempt: number; status_code?: number; last_error?: string }>;
}

export interface RunView {
  id: string;
  workflow_id: string;
  status: workflows.WorkflowRunRow['status'];
  trigger: workflows.WorkflowRunRow['trigger'];
  event: unknown;
  created_at_ms: number;
  finished_at_ms: number | null;
  /** Set when a step called `$.flow.exit` (the reason, or '' without one). */
  exit_reason?: string;
  /** A delayed run: when its next step is due (a run delayed a day said only `delayed`). */
  resumes_at_ms?: number;
  error?: unknown;
  replay_of?: string;
  steps: RunStepView[];
}

export class WorkflowRunService {
  constructor(
    private readonly store: Store,
    private readonly workflows: WorkflowService,
    private readonly quotas: QuotaService,
    private readonly runner: WorkflowRunner,
  ) {
    // A client waiting on a run of a workflow that is deleted hears so at once: the run went with it. One whose
    // workflow no longer answers with `$.respond()` (another trigger, or custom_response off) hears so too: its
    // steps' `$.respond()` is ignored from then on, and the run's end without one said "no step called $.respond()".
    workflows.onChange((change) => {
      if (change.kind === 'delete') for (const end of this.waiting.get(change.workflowId) ?? []) end('deleted');
      else void this.endWaitsOfChanged([change.workflowId]);
    });
  }

  /** The HTTP clients waiting for a `$.respond()`, by workflow: each told when its workflow is deleted or stops answering. */
  private readonly waiting = new Map<string, Set<(why: 'deleted' | 'unanswered') => void>>();

  /**
   * These workflows changed, here or on another node (any, when `workflowIds` is absent): the clients waiting here on
   * one that is gone, or no longer answers with `$.respond()`, hear so at once. Unreadable now: they wait out their time.
   */
  async endWaitsOfChanged(workflowIds: readonly string[] | undefined): Promise<void> {
    for (const id of workflowIds ?? [...this.waiting.keys()]) {
      if (!this.waiting.get(id)?.size) continue;
      const workflow = await workflows.loadWorkflow(this.store.db, id).catch(() => null);
      if (workflow === null) continue;
      const why = workflow === undefined ? 'deleted' : answersHttp(workflow) ? undefined : 'unanswered';
      if (why) for (const end of this.waiting.get(id) ?? []) end(why);
    }
  }

  /** Queues a run of an active workflow with the given event; 409 when inactive, 429 over quota. */
  async runNow(accountId: string, workflowId: string, event: unknown): Promise<RunView> {
    const workflow = await this.activeWorkflow(accountId, workflowId);
    const [row] = await this.queue([{ workflowId: workflow.id, userId: accountId, trigger: 'manual', event }]);
    if (!row) throw notFound(`workflow ${quote(workflowId)}`);
    return this.toRunView(row, []);
  }

  /** Starts a new run with the original event of `runId`. */
  async replay(accountId: string, workflowId: string, runId: string): Promise<RunView> {
    const workflow = await this.activeWorkflow(accountId, workflowId);
    const original = isId(runId, 'wr') ? await workflows.findRun(this.store.db, workflow.id, runId) : undefined;
    if (!original) throw notFound(`run ${quote(runId)} of workflow ${quote(workflowId)}`);
    const [row] = await this.queue([
      { workflowId: workflow.id, userId: accountId, trigger: 'replay', event: JSON.parse(original.event), replayOf: original.id },
    ]);
    if (!row) throw notFound(`workflow ${quote(workflowId)}`);
    return this.toRunView(row, []);
  }

  /** The account's workflow (404 otherwise), refused with 409 while it is switched off: it runs nothing then. */
  private async activeWorkflow(accountId: string, workflowId: string) {
    const workflow = await this.workflows.owned(accountId, workflowId);
    if (workflow.active !== 1)
      throw new ServiceError('conflict', `workflow ${quote(workflow.id)} is inactive; activate it with PUT /v1/workflows/${workflow.id} {"active": true}`);
    return workflow;
  }

  /** Queues runs (quota admitted first) and wakes the runner once they are rows. */
  async queue(runs: NewRun[]): Promise<workflows.WorkflowRunRow[]> {
    for (const userId of new Set(runs.map((r) => r.userId))) await this.quotas.admit(userId);
    return this.runner.queue(runs);
  }

  /**
   * Starts a run for a request to the workflow's HTTP endpoint (already admitted under quota). Resolves once the
   * run is queued, or, with custom_response, with what a step gave `$.respond()`: 500 run_failed when the run
   * failed first, 504 no_response when it ended or timed out without one.
   */
  async acceptHttp(workflowId: string, userId: string, event: unknown, customResponse: boolean): Promise<HttpResponse | undefined> {
    const run: NewRun = { workflowId, userId, trigger: 'http', event };
    // A workflow deleted since its endpoint was looked up queues no run.
    const gone = () => new ServiceError('not_found', 'no active source or workflow at this endpoint');
    if (!customResponse) {
      if (!(await this.runner.queue([run])).length) throw gone();
      return undefined;
    }
    // Read before the run is queued: a read failing after it would answer 503 "nothing was written" for a queued run,
    // which a client sending again would run twice.
    const workflow = await workflows.loadWorkflow(this.store.db, workflowId);
    const waitMs = (workflow?.timeout_ms ?? DEFAULT_RUN_TIMEOUT_SECONDS * 1000) + 5000;
    type Answer = {
      response?: HttpResponse | undefined;
      error?: InvocationError | undefined;
      waitedMs?: number;
      ended?: 'deleted' | 'unanswered';
      delayedMs?: number;
    };
    let settle!: (answer: Answer) => void;
    const answered = new Promise<Answer>((resolve) => (settle = resolve));
    let runId = '';
    const giveUpAt = performance.now() + waitMs;
    const queued = await this.runner.queue([run], ([row]) => {
      runId = row!.id;
      this.runner.onResponse(runId, (response, error) => {
        if (error?.name !== FLOW_DELAYED) return settle({ response, error });
        // A delay that ends while the request still waits may be followed by the answer: only a longer one is told.
        const delayedMs = Number(error.message);
        if (performance.now() + delayedMs >= giveUpAt) settle({ delayedMs });
      });
    });
    if (!queued.length) {
      this.runner.forgetResponder(runId);
      throw gone();
    }
    const timer = setTimeout(() => settle({ waitedMs: waitMs }), waitMs);
    const end = (why: 'deleted' | 'unanswered') => settle({ ended: why });
    const waiters = this.waiting.get(workflowId) ?? new Set();
    this.waiting.set(workflowId, waiters.add(end));
    const { response, error, waitedMs, ended, delayedMs } = await answered;
    clearTimeout(timer);
    waiters.delete(end);
    if (!waiters.size && this.waiting.get(workflowId) === waiters) this.waiting.delete(workflowId);
    this.runner.forgetResponder(runId);
    if (response) return response;
    if (ended === 'deleted') throw new ServiceError('no_response', `the workflow was deleted before responding; run ${runId} was deleted with it`);
    if (ended === 'unanswered') {
      throw new ServiceError(
        'no_response',
        `the workflow was changed before responding: its trigger is no longer {"type":"http","custom_response":true}, so its steps' $.respond() answers no request; run ${runId} goes on`,
      );
    }
    if (delayedMs !== undefined) {
      throw new ServiceError(
        'no_response',
        `the workflow went into $.flow.delay for ${delayedMs / 1000} s before any step called $.respond(), past the ${waitMs / 1000} s a request waits (its timeout_seconds and 5 s); run ${runId} goes on then, and a later $.respond() reaches no one`,
      );
    }
    if (error?.name === FLOW_EXITED) throw new ServiceError('no_response', `the workflow did not respond: ${error.message} before any step called $.respond()`);
    if (error && error.name !== 'TimeoutError') throw new ServiceError('run_failed', `the workflow failed before responding: ${error.message}`);
    if (error) throw new ServiceError('no_response', `the workflow timed out before responding: ${error.message}`);
    if (waitedMs !== undefined && this.runner.databaseDown) throw awaitedThroughOutage(`run ${runId}`);
    // Running time leaves out $.flow.delay and time queued, so the run may still be going: the client is told so.
    if (waitedMs !== undefined) {
      throw new ServiceError(
        'no_response',
        `the workflow did not respond within ${waitedMs / 1000} s (its timeout_seconds and 5 s); run ${runId} goes on (delayed by $.flow.delay or still queued), and a later $.respond() reaches no one`,
      );
    }
    throw new ServiceError('no_response', 'the workflow did not respond: no step called $.respond()');
  }

  async listRuns(accountId: string, workflowId: string, page: PageRequest, status?: RunView['status']): Promise<Page<RunView>> {
    const workflow = await this.workflows.owned(accountId, workflowId);
    const result = await withinPageChars(this.store.db, await workflows.listRuns(this.store.db, workflow.id, page, status), page);
    const ids = result.items.map((r) => r.id);
    const steps = await workflows.runSteps(this.store.db, ids);
    const sent = await sendsOfRuns(this.store.db, ids);
    return {
      ...result,
      items: result.items.map((run) =>
        this.toRunView(
          run,
          steps.filter((s) => s.run_id === run.id),
          sent.filter((s) => s.run_id === run.id),
        ),
      ),
    };
  }

  async getRun(accountId: string, workflowId: string, runId: string): Promise<RunView> {
    const workflow = await this.workflows.owned(accountId, workflowId);
    const run = isId(runId, 'wr') ? await workflows.findRun(this.store.db, workflow.id, runId) : undefined;
    if (!run) throw notFound(`run ${quote(runId)} of workflow ${quote(workflowId)}`);
    return this.toRunView(run, await workflows.runSteps(this.store.db, [run.id]), await sendsOfRuns(this.store.db, [run.id]));
  }

  private toRunView(run: workflows.WorkflowRunRow, steps: workflows.WorkflowRunStepRow[], sent: SendRow[] = []): RunView {
    const view: RunView = {
      id: run.id,
      workflow_id: run.workflow_id,
      status: run.status,
      trigger: run.trigger,
      event: JSON.parse(run.event),
      created_at_ms: Number(run.created_ms),
      finished_at_ms: run.finished_ms === null ? null : Number(run.finished_ms),
      steps: steps.map((s) => {
        const step: RunStepView = {
          name: s.name,
          status: s.status,
          started_at_ms: Number(s.started_ms),
          duration_ms: s.duration_ms,
          exports: JSON.parse(s.exports),
          logs: JSON.parse(s.logs),
          sends: sent
            .filter((r) => r.step_index === s.step_index)
            .map((r) => ({
              kind: r.kind,
              state: r.state,
              attempt: r.attempt,
              ...(r.status_code !== null && { status_code: r.status_code }),
              ...(r.last_error !== null && { last_error: r.last_error }),
            })),
        };
        if (s.return_value !== null) step.$return_value = JSON.parse(s.return_value);
        if (s.error !== null) step.error = JSON.parse(s.error);
        return step;
      }),
    };
    if (run.exit_reason !== null) view.exit_reason = run.exit_reason;
    if (run.status === 'delayed' && run.due_ms !== null) view.resumes_at_ms = Number(run.due_ms);
    if (run.error !== null) view.error = JSON.parse(run.error);
    if (run.replay_of !== null) view.replay_of = run.replay_of;
    return view;
  }
}

/**
 * Most characters of stored JSON (events and step data) one page of runs holds. A step may hold 8 MB and a run 50
 * steps, so 100 runs could pass what one response (one JavaScript string, at most 512 MB) can hold: that page was a 500.
 */
export const MAX_RUN_PAGE_CHARS = 16 * 1024 * 1024;

/**
 * The page cut where its runs pass MAX_RUN_PAGE_CHARS (never below one run), keeping the runs next to the cursor it
 * was asked from, so that following its cursors still reaches every run once.
 */
async function withinPageChars(db: Store['db'], page: Page<workflows.WorkflowRunRow>, asked: PageRequest): Promise<Page<workflows.WorkflowRunRow>> {
  const stepChars = await workflows.runStepChars(
    db,
    page.items.map((r) => r.id),
  );
  // Paging back (`before`), the runs next to the cursor are the last ones of the page.
  const fromCursor = asked.before !== undefined ? [...page.items].reverse() : page.items;
  const kept: workflows.WorkflowRunRow[] = [];
  let chars = 0;
  for (const run of fromCursor) {
    chars += run.event.length + (stepChars.get(run.id) ?? 0);
    if (kept.length > 0 && chars > MAX_RUN_PAGE_CHARS) break;
    kept.push(run);
  }
  if (kept.length === page.items.length) return page;
  if (asked.before !== undefined) kept.reverse();
  return toPage(kept, page.totalCount, (r) => r.id, asked);
}
