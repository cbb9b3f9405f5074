// One workflow: its trigger, run now and delete; its runs, newest first, and the open run's steps: status, duration,
// exports, logs, error and sends; replay.
import { useEffect, useRef, useState } from 'preact/hooks';
import { del, describeError, get, post, put } from './api';
import { ConfirmDialog } from './confirm-dialog';
import { CopyButton } from './copy-button';
import { formatDuration, formatTime, triggerSchedule } from './format';
import { JsonView } from './json-view';
import { useNotify } from './notices';
import { href, navigate } from './router';
import type { Workflow, WorkflowRun } from './types';
import { useLoad } from './use-load';
import { usePages } from './use-pages';
import { LoadMore } from './load-more';
import { LoadError } from './load-error';
import { RunNow } from './run-now';
import { ActiveToggle } from './active-toggle';
import { useBusy } from './use-busy';
import { EmptyRow } from './table';
import { IDLE_POLL_MS, usePoll } from './use-poll';

const UNFINISHED = new Set(['queued', 'running', 'delayed']);
const STATUSES = ['', 'queued', 'running', 'delayed', 'succeeded', 'failed'];
const PAGE = 25;

export function WorkflowDetail(props: { id: string; runId?: string }) {
  const notify = useNotify();
  const [status, setStatus] = useState('');
  const workflow = useLoad(() => get<{ data: Workflow }>(`/workflows/${encodeURIComponent(props.id)}`), [props.id]);
  // Older runs are a Load more away, as on the workflows page; a refresh or a poll keeps the pages opened.
  const pages = usePages<WorkflowRun>(`/workflows/${encodeURIComponent(props.id)}/runs`, PAGE, { status: status || undefined });
  const { items: listed, page: runs } = pages;
  const rows = useRef<HTMLDivElement>(null);

  // While a listed run has not finished, look again each second: its steps change as they commit. Otherwise still
  // now and then: its endpoint, timer or source starts runs that nothing on this page announces.
  const unfinished = listed.some((run) => UNFINISHED.has(run.status));
  usePoll(runs, unfinished ? 1000 : IDLE_POLL_MS);

  // One replay per press: a second press (a double click) before the first answer would start a second run.
  const replaying = useBusy();
  const replay = (run: WorkflowRun) =>
    replaying.run(async () => {
      try {
        const answer = await post<{ data: WorkflowRun }>(`/workflows/${encodeURIComponent(props.id)}/runs/${encodeURIComponent(run.id)}/replay`);
        notify({ kind: 'ok', text: `Replaying ${run.id} as ${answer.data.id}.` });
        setStatus('');
        navigate('workflows', props.id, answer.data.id);
        await runs.reload();
      } catch (failure) {
        notify({ kind: 'error', text: describeError(failure) });
      }
    });

  const [deleting, setDeleting] = useState(false);
  // One DELETE per confirmation, and no second question while it runs (a second one's 404 replaced "Deleted").
  const removal = useBusy();
  const remove = () =>
    removal.run(async () => {
      setDeleting(false);
      try {
        await del(`/workflows/${encodeURIComponent(props.id)}`);
        notify({ kind: 'ok', text: `Deleted ${workflow.data?.data.name ?? props.id}.` });
        navigate('workflows');
      } catch (failure) {
        notify({ kind: 'error', text: describeError(failure) });
      }
    });
  const started = async (runId: string) => {
    setStatus('');
    navigate('workflows', props.id, runId);
    await runs.reload();
  };

  const selected = listed.find((run) => run.id === props.runId);
  const shown = workflow.data?.data;
  // No such workflow (deleted, a mistyped address): a Delete, a status filter and an empty runs table would say
  // there is one, with no runs; the reason and the way back are all there is to show.
  if (workflow.missing) {
    return (
      <section aria-labelledby="workflow-title">
        <p class="crumbs">
          <a href={href('workflows')}>Workflows</a> /
        </p>
        <h1 id="workflow-title">{props.id}</h1>
        <LoadError loads={[workflow]} />
      </section>
    );
  }
  return (
    <section aria-labelledby="workflow-title">
      <p class="crumbs">
        <a href={href('workflows')}>Workflows</a> /
      </p>
      <div class="title-row">
        <h1 id="workflow-title">{shown?.name ?? props.id}</h1>
        <div class="actions">
          {shown && (
            // On and off as on a source's page: the page said nothing of an inactive workflow, and its Run now answered
            // a 409 that told the user to send PUT /v1/workflows/… {"active": true} from a terminal.
            <ActiveToggle
              active={shown.active}
              name={shown.name ?? props.id}
              send={(active) => put(`/workflows/${encodeURIComponent(props.id)}`, { active })}
              reload={workflow.reload}
            />
          )}
          <button
            type="button"
            class="danger"
            onClick={() => removal.busy || setDeleting(true)}
            disabled={!shown}
            aria-disabled={removal.busy ? 'true' : undefined}
          >
            {removal.busy ? 'Deleting…' : 'Delete'}
          </button>
        </div>
      </div>
      <LoadError loads={[workflow, runs]} />
      {shown && <WorkflowFacts workflow={shown} />}
      {shown && (
        <RunNow
          id="workflow-run-event"
          disabledWhy={shown.active ? undefined : 'An inactive workflow does not run'}
          start={async (event) => {
            const answer = await post<{ data: { id: string } }>(`/workflows/${encodeURIComponent(props.id)}/run`, event);
            notify({ kind: 'ok', text: `Started run ${answer.data.id}.` });
            await started(answer.data.id);
          }}
        />
      )}
      <div class="toolbar">
        <label for="run-status">Status</label>
        <select id="run-status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s || 'any'}
            </option>
          ))}
        </select>
        <button type="button" onClick={() => runs.reload()}>
          Refresh
        </button>
      </div>
      <div class="table-wrap" ref={rows}>
        <table class="runs">
          <caption class="sr-only">Runs, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Status</th>
              <th scope="col">Trigger</th>
              <th scope="col">Started</th>
              <th scope="col">Duration</th>
            </tr>
          </thead>
          <tbody>
            {listed.map((run) => (
              <tr key={run.id} class={run.id === props.runId ? 'selected' : undefined}>
                <th scope="row">
                  <a href={href('workflows', props.id, run.id)} aria-current={run.id === props.runId ? 'true' : undefined}>
                    {run.id}
                  </a>
                </th>
                <td>
                  <span class={`badge ${run.status}`}>{run.status}</span>
                </td>
                <td>{run.trigger}</td>
                <td>{formatTime(run.created_at_ms)}</td>
                <td>{formatDuration(run.finished_at_ms === null ? null : run.finished_at_ms - run.created_at_ms)}</td>
              </tr>
            ))}
            {runs.data && listed.length === 0 && (
              <EmptyRow columns={5}>{status ? `No runs with status ${status}.` : `No runs yet: ${howRunsStart(shown)}.`}</EmptyRow>
            )}
          </tbody>
        </table>
      </div>
      <LoadMore pages={pages} rows={rows} />
      {props.runId && !selected && runs.data && <RunById workflowId={props.id} runId={props.runId} onReplay={replay} />}
      {selected && <RunView run={selected} onReplay={replay} />}
      {deleting && (
        <ConfirmDialog title={`Delete ${shown?.name ?? props.id}?`} confirmLabel="Delete workflow" onCancel={() => setDeleting(false)} onConfirm={remove}>
          <p>The workflow is removed with its runs, events and step data. This cannot be undone.</p>
        </ConfirmDialog>
      )}
    </section>
  );
}

/** How a run of this workflow comes about, for its empty list: a bare "No runs." left the user to guess. */
function howRunsStart(workflow: Workflow | undefined): string {
  const type = workflow?.trigger?.type;
  if (type === 'http') return 'a request to its endpoint starts one, or start one by hand above';
  if (type === 'timer') return 'its timer starts one on its schedule, or start one by hand above';
  if (type === 'source') return "an event of its source's stream starts one, or start one by hand above";
  return 'start one by hand above, or subscribe it to a source';
}

/** What starts the workflow: its trigger, the HTTP endpoint to call or the timer's schedule, and its steps. */
function WorkflowFacts(props: { workflow: Workflow }) {
  const { trigger, steps, active } = props.workflow;
  const endpoint = typeof trigger?.endpoint_url === 'string' ? trigger.endpoint_url : undefined;
  const schedule = trigger ? triggerSchedule(trigger) : undefined;
  return (
    <dl class="facts">
      <dt>Trigger</dt>
      <dd>{trigger?.type ?? 'none (runs when started by hand or by the API)'}</dd>
      {endpoint && (
        <>
          <dt>Endpoint</dt>
          <dd class="endpoint">
            <code>{endpoint}</code> <CopyButton value={endpoint} label="Copy endpoint URL" />
          </dd>
        </>
      )}
      {schedule && (
        <>
          <dt>Schedule</dt>
          <dd>{schedule}</dd>
        </>
      )}
      <dt>State</dt>
      <dd>{active ? 'Active' : 'Inactive: it starts no run, and its waiting runs wait until it is activated'}</dd>
      <dt>Steps</dt>
      <dd>{steps.map((step) => step.name).join(' → ')}</dd>
    </dl>
  );
}

/** A run that is not on the listed page (older, or filtered out) is read on its own. */
function RunById(props: { workflowId: string; runId: string; onReplay: (run: WorkflowRun) => void }) {
  const run = useLoad(
    () => get<{ data: WorkflowRun }>(`/workflows/${encodeURIComponent(props.workflowId)}/runs/${encodeURIComponent(props.runId)}`),
    [props.workflowId, props.runId],
  );
  // The list's poll does not see this run: while it has not finished, it is read again on its own, as often.
  const unfinished = run.data !== undefined && UNFINISHED.has(run.data.data.status);
  usePoll(run, unfinished ? 1000 : undefined);
  if (run.error) return <LoadError loads={[run]} />;
  return run.data ? <RunView run={run.data.data} onReplay={props.onReplay} /> : null;
}

function RunView(props: { run: WorkflowRun; onReplay: (run: WorkflowRun) => void }) {
  const { run } = props;
  // The run opens below the list (25 runs and more): brought into view, as an opened event is; opened from the list,
  // the focus follows, so that the keyboard and a screen reader are where the run is.
  const panel = useRef<HTMLElement>(null);
  const title = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    if (document.activeElement?.closest('table.runs')) title.current?.focus();
    else panel.current?.scrollIntoView({ block: 'nearest' });
  }, [run.id]);
  return (
    <section class="panel run" aria-labelledby="run-title" ref={panel}>
      <div class="title-row">
        <h2 id="run-title" ref={title} tabIndex={-1}>
          Run <code>{run.id}</code> <span class={`badge ${run.status}`}>{run.status}</span>
        </h2>
        <button type="button" onClick={() => props.onReplay(run)}>
          Replay
        </button>
      </div>
      <p class="muted">
        {run.trigger}
        {run.replay_of ? ` of ${run.replay_of}` : ''}, {formatTime(run.created_at_ms)}
        {run.exit_reason ? `; exited: ${run.exit_reason}` : ''}
        {run.status === 'delayed' && run.resumes_at_ms !== undefined ? `; next step due ${formatTime(run.resumes_at_ms)}` : ''}
      </p>
      <details>
        <summary>Triggering event</summary>
        <JsonView value={run.event} label="Triggering event" />
      </details>
      <ol class="steps">
        {run.steps.map((step) => (
          <li key={step.name} class="step" aria-label={`Step ${step.name}`}>
            <h3>
              {step.name} <span class={`badge ${step.status}`}>{step.status}</span> <span class="muted">{formatDuration(step.duration_ms)}</span>
            </h3>
            {Object.keys(step.exports).length > 0 && (
              <>
                <h4>Exports</h4>
                <JsonView value={step.exports} label={`Exports of ${step.name}`} />
              </>
            )}
            {step.$return_value !== undefined && (
              <>
                <h4>Return value</h4>
                <JsonView value={step.$return_value} label={`Return value of ${step.name}`} />
              </>
            )}
            {step.logs.length > 0 && (
              <>
                <h4>Logs</h4>
                <pre class="logs">{step.logs.map(logLine).join('\n')}</pre>
              </>
            )}
            {step.error !== undefined && step.error !== null && (
              <>
                <h4>Error</h4>
                <div class="step-error">
                  <JsonView value={step.error} label={`Error of ${step.name}`} />
                </div>
              </>
            )}
            {step.sends.length > 0 && (
              <>
                <h4>Sends</h4>
                <ul>
                  {step.sends.map((send, i) => (
                    <li key={i}>
                      {send.kind}: {send.state}, attempt {send.attempt}
                      {send.status_code ? `, HTTP ${send.status_code}` : ''}
                      {send.last_error ? `, ${send.last_error}` : ''}
                    </li>
                  ))}
                </ul>
              </>
            )}
          </li>
        ))}
        {run.steps.length === 0 && <li class="muted">No step has run yet.</li>}
      </ol>
      {run.error !== undefined && run.error !== null && (
        <>
          <h3>Run error</h3>
          <JsonView value={run.error} label="Run error" />
        </>
      )}
    </section>
  );
}

/** A log entry is `{ k, ts, msg }` (k: log, info, warn, error or debug) as the step's console wrote it. */
function logLine(entry: unknown): string {
  if (typeof entry === 'string') return entry;
  const { msg, k } = (entry ?? {}) as { msg?: unknown; k?: unknown };
  if (typeof msg !== 'string') return JSON.stringify(entry);
  return typeof k === 'string' && k !== 'log' && k !== 'info' ? `[${k}] ${msg}` : msg;
}
