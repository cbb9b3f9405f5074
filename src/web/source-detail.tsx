// One source: its state and endpoint, activate / deactivate, a manual run, its props to edit, deletion, and its streams.
import { useEffect, useState } from 'preact/hooks';
import { del, describeError, get, type Page, patch, post, query } from './api';
import { ConfirmDialog } from './confirm-dialog';
import { CopyButton } from './copy-button';
import { EventsTable, type Stream, summariesPath } from './events-table';
import { compareIds, endpointUrl, sourceKind, timerSchedule } from './format';
import { useNotify } from './notices';
import { sendChecked, useFormErrors } from './field-errors';
import { collectValues, initialValues, PropFields, type RawValues } from './prop-form';
import { errorsFromServer } from './prop-refusal';
import { PropListStatus, usePropList } from './prop-list';
import { href, navigate } from './router';
import type { Component, EventSummary, Source } from './types';
import { useBusy } from './use-busy';
import { useLoad } from './use-load';
import { LoadError } from './load-error';
import { RunNow } from './run-now';
import { ActiveToggle } from './active-toggle';

const TABS: Array<[Stream, string]> = [
  ['emit', 'Events'],
  ['$logs', '$logs'],
  ['$errors', '$errors'],
];

/** Where a linked event stands: the stream that holds it, and how many of that stream's newest events reach it. */
interface Linked {
  stream: Stream;
  depth: number;
}

/**
 * Where event `eventId` stands among all the events the source keeps, or null. Not the newest 100 only: with a
 * larger retention an older event is still there, one Load more away, and its link must open it.
 */
async function findLinked(sourceId: string, eventId: string): Promise<Linked | null> {
  for (const [stream] of TABS) {
    const path = summariesPath(sourceId, stream);
    let after: string | undefined;
    let depth = 0;
    for (;;) {
      const page = await get<Page<Pick<EventSummary, 'id'>>>(`${path}${query({ limit: 100, include: 'id', after })}`);
      const at = page.data.findIndex((summary) => summary.id === eventId);
      if (at >= 0) return { stream, depth: depth + at + 1 };
      depth += page.data.length;
      const last = page.data[page.data.length - 1];
      // Newest first: once a page reaches events older than the id, the rest of this stream cannot hold it.
      if (!last || compareIds(last.id, eventId) < 0 || depth >= page.page_info.total_count) break;
      after = page.page_info.end_cursor;
    }
  }
  return null;
}

interface QueuedRun {
  /** The invocation id the run answered (`inv_…`). */
  id: string;
  /** The source's newest event id when the run was queued. */
  after: string;
}

type Outcome = { kind: 'waiting' } | { kind: 'emitted'; ids: string[] } | { kind: 'failed'; id: string; message: string } | { kind: 'quiet' };

const WATCH_SECONDS = 30;

/**
 * What became of a manual run, looked for every second: its `$errors` event (which names the invocation), else the
 * events emitted since it was queued (a failed run emits nothing; the API does not say which run emitted an event).
 */
function RunOutcome(props: { sourceId: string; run: QueuedRun }) {
  const { sourceId, run } = props;
  const [outcome, setOutcome] = useState<Outcome>({ kind: 'waiting' });
  const settled = outcome.kind !== 'waiting';
  useEffect(() => {
    if (settled) return;
    const base = `/sources/${encodeURIComponent(sourceId)}`;
    let looks = 0;
    let busy = false;
    const look = async () => {
      if (busy) return;
      busy = true;
      looks += 1;
      try {
        const errors = await get<Page<EventSummary>>(`${base}/$errors/event_summaries?limit=10&expand=event`);
        const failure = errors.data.find((e) => (e.event as { original_context?: { id?: string } } | null)?.original_context?.id === run.id);
        if (failure) {
          const error = (failure.event as { error?: { name?: string; message?: string } }).error;
          setOutcome({ kind: 'failed', id: failure.id, message: [error?.name, error?.message].filter(Boolean).join(': ') });
          return;
        }
        const emitted = await get<Page<Pick<EventSummary, 'id'>>>(`${base}/event_summaries?limit=100&include=id`);
        const ids = emitted.data.map((e) => e.id).filter((id) => compareIds(id, run.after) > 0);
        if (ids.length) setOutcome({ kind: 'emitted', ids });
        else if (looks >= WATCH_SECONDS) setOutcome({ kind: 'quiet' });
      } catch {
        // A failed look is tried again on the next tick; the live tables say when the server is out of reach.
      } finally {
        busy = false;
      }
    };
    const timer = setInterval(look, 1000);
    look();
    return () => clearInterval(timer);
  }, [sourceId, run.id, run.after, settled]);

  const open = (id: string, text: string) => <a href={href('sources', sourceId, 'events', id)}>{text}</a>;
  switch (outcome.kind) {
    case 'waiting':
      return <span>Run {run.id} queued: waiting for its events or its error…</span>;
    case 'emitted':
      return (
        <span>
          Run {run.id} done: {outcome.ids.length === 1 ? '1 new event' : `${outcome.ids.length} new events`} since it was queued.{' '}
          {open(outcome.ids[0]!, outcome.ids.length === 1 ? `Show event ${outcome.ids[0]}` : `Show the newest, ${outcome.ids[0]}`)}
        </span>
      );
    case 'failed':
      return (
        <span class="error">
          Run {run.id} failed{outcome.message ? `: ${outcome.message}` : ''}. {open(outcome.id, 'Show the error')}
        </span>
      );
    case 'quiet':
      return (
        <span>
          Run {run.id}: no event and no error after {WATCH_SECONDS} s. A run that emits nothing leaves only its console output, on the $logs tab.
        </span>
      );
  }
}

/** `eventId`: an event to open at once, in whichever of the streams holds it (a link from a webhook's delivery). */
export function SourceDetail(props: { id: string; eventId?: string | undefined }) {
  const notify = useNotify();
  const loaded = useLoad(() => get<{ data: Source }>(`/sources/${encodeURIComponent(props.id)}`), [props.id]);
  const [deleting, setDeleting] = useState(false);
  const [tab, setTab] = useState<Stream>('emit');
  const [run, setRun] = useState<QueuedRun | undefined>(undefined);
  // One DELETE per confirmation, and no second question while it runs: on a slow server a second Delete, confirmed,
  // sent another DELETE, whose 404 replaced the first's "Deleted" on the list.
  const removal = useBusy();
  const linked = useLoad(() => (props.eventId ? findLinked(props.id, props.eventId) : Promise.resolve(undefined)), [props.id, props.eventId]);
  const linkedStream = linked.data?.stream;
  useEffect(() => {
    if (linkedStream) setTab(linkedStream);
  }, [linkedStream, props.eventId]);
  const source = loaded.data?.data;

  if (loaded.error) {
    // Headed by the id, as the other pages' 404s are: without a heading a screen reader's list of them was empty.
    return (
      <section aria-labelledby="source-title">
        <p class="crumbs">
          <a href={href('sources')}>Sources</a> /
        </p>
        <h1 id="source-title">{props.id}</h1>
        <LoadError loads={[loaded]} />
      </section>
    );
  }
  if (!source) return <p aria-busy="true">Loading…</p>;

  const endpoint = endpointUrl(source.configured_props);
  const schedule = timerSchedule(source.configured_props);
  const remove = () =>
    removal.run(async () => {
      setDeleting(false);
      try {
        await del(`/sources/${encodeURIComponent(source.id)}`);
        notify({ kind: 'ok', text: `Deleted ${source.name}.` });
        navigate('sources');
      } catch (failure) {
        notify({ kind: 'error', text: describeError(failure) });
      }
    });

  const onTabKey = (event: KeyboardEvent) => {
    // Arrow keys move between tabs, as the ARIA tabs pattern has it.
    const index = TABS.findIndex(([id]) => id === tab);
    const step = event.key === 'ArrowRight' ? 1 : event.key === 'ArrowLeft' ? -1 : 0;
    if (!step) return;
    const next = TABS[(index + step + TABS.length) % TABS.length]![0];
    setTab(next);
    document.getElementById(`tab-${next}`)?.focus();
  };

  return (
    <section aria-labelledby="source-title">
      <p class="crumbs">
        <a href={href('sources')}>Sources</a> /
      </p>
      <div class="title-row">
        <h1 id="source-title">{source.name}</h1>
        <div class="actions">
          <ActiveToggle
            active={source.active}
            name={source.name}
            send={(active) => patch(`/sources/${encodeURIComponent(source.id)}`, { active })}
            reload={loaded.reload}
          />
          <button type="button" class="danger" onClick={() => removal.busy || setDeleting(true)} aria-disabled={removal.busy ? 'true' : undefined}>
            {removal.busy ? 'Deleting…' : 'Delete'}
          </button>
        </div>
      </div>
      <dl class="facts">
        <dt>Id</dt>
        <dd>
          <code>{source.id}</code>
        </dd>
        <dt>Type</dt>
        <dd>{sourceKind(source.configured_props)}</dd>
        {schedule && (
          <>
            <dt>Schedule</dt>
            <dd>{schedule}</dd>
          </>
        )}
        <dt>State</dt>
        <dd>{source.active ? 'Active' : 'Inactive'}</dd>
        {endpoint && (
          <>
            <dt>Endpoint</dt>
            <dd class="endpoint">
              <code id="endpoint-url">{endpoint}</code> <CopyButton value={endpoint} label="Copy endpoint URL" />
            </dd>
          </>
        )}
      </dl>

      <RunNow
        id="run-event"
        disabledWhy={source.active ? undefined : 'An inactive source does not run'}
        start={async (event) => {
          // The newest event before the run: those after it are the run's to show (the API names no run's events).
          const before = await get<Page<Pick<EventSummary, 'id'>>>(`/sources/${encodeURIComponent(source.id)}/event_summaries?limit=1&include=id`);
          const answer = await post<{ data: { id: string } }>(`/sources/${encodeURIComponent(source.id)}/run`, event);
          notify({ kind: 'ok', text: `Run queued (${answer.data.id}).` });
          setRun({ id: answer.data.id, after: before.data[0]?.id ?? '0-0' });
        }}
        outcome={run && <RunOutcome sourceId={source.id} run={run} key={run.id} />}
      />
      <EditProps source={source} onSaved={loaded.reload} />

      <h2>Streams</h2>
      <div role="tablist" aria-label="Streams of this source" class="tabs" onKeyDown={onTabKey}>
        {TABS.map(([id, label]) => (
          <button
            type="button"
            role="tab"
            id={`tab-${id}`}
            key={id}
            aria-selected={tab === id}
            aria-controls={`panel-${id}`}
            tabIndex={tab === id ? 0 : -1}
            onClick={() => setTab(id)}
          >
            {label}
          </button>
        ))}
      </div>
      {props.eventId && linked.data === null && (
        <p class="error" role="alert">
          Event <code>{props.eventId}</code> is not among the events this source keeps: it was deleted, or newer events have replaced it.
        </p>
      )}
      <div role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`}>
        <EventsTable
          sourceId={source.id}
          stream={tab}
          key={tab}
          openId={linkedStream === tab ? props.eventId : undefined}
          openDepth={linkedStream === tab ? linked.data?.depth : undefined}
        />
      </div>

      {deleting && (
        <ConfirmDialog title={`Delete ${source.name}?`} confirmLabel="Delete source" onCancel={() => setDeleting(false)} onConfirm={remove}>
          <p>The source is deactivated and removed with its events, logs and db. This cannot be undone.</p>
        </ConfirmDialog>
      )}
    </section>
  );
}

function EditProps(props: { source: Source; onSaved: () => Promise<void> }) {
  const notify = useNotify();
  const { source } = props;
  const [open, setOpen] = useState(false);
  const component = useLoad(
    () => (open ? get<{ data: Component }>(`/components/${encodeURIComponent(source.component_id)}`) : Promise.resolve(undefined)),
    [open, source.component_id],
  );
  const [raw, setRaw] = useState<RawValues | undefined>(undefined);
  const errors = useFormErrors();
  const loaded = component.data?.data.configurable_props;
  const values = raw ?? (loaded ? initialValues(loaded, source.configured_props) : undefined);
  const propList = usePropList(
    component.data ? source.component_id : '',
    loaded ?? [],
    values ?? {},
    (update) => setRaw((previous) => update(previous ?? initialValues(loaded ?? [], source.configured_props))),
    source.configured_props,
  );
  const descriptors = loaded && propList.props;
  // One PATCH per press: a double click of Save props would send it twice.
  const saving = useBusy();

  const save = async (event: Event) => {
    event.preventDefault();
    // Read now: the event's currentTarget is gone once the request has been awaited.
    const form = event.currentTarget as HTMLFormElement;
    if (!descriptors || !values || saving.busy) return;
    const { values: configured, errors: found } = collectValues(descriptors, values);
    await sendChecked(
      form,
      errors,
      found,
      () =>
        saving.run(async () => {
          // The form leaves hidden props out, and a PATCH replaces every value: their stored values go back as they were.
          const hidden = Object.fromEntries(
            descriptors.filter((d) => d.hidden && Object.hasOwn(source.configured_props, d.name)).map((d) => [d.name, source.configured_props[d.name]]),
          );
          const saved = await patch<{ data: Source }>(`/sources/${encodeURIComponent(source.id)}`, { configured_props: { ...hidden, ...configured } });
          // The form shows what was stored, secrets masked again, for every prop listed (the added ones too).
          setRaw(initialValues(descriptors, saved.data.configured_props));
          notify({ kind: 'ok', text: `Saved the props of ${source.name}.` });
          await props.onSaved();
        }),
      (failure) => errorsFromServer(failure, descriptors, configured),
    );
  };

  return (
    <details class="panel" onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>Edit props</summary>
      {/* With Try again, as every read that fails: no answer (a server restarting) left nothing to press but the
          summary, twice. */}
      <LoadError loads={[component]} />
      {descriptors && values && (
        <form onSubmit={save} noValidate>
          {descriptors.length === 0 && <p class="muted">This component has no props.</p>}
          <PropFields
            componentId={source.component_id}
            props={descriptors}
            raw={values}
            onChange={setRaw}
            errors={{ ...propList.invalid, ...errors.fields }}
            onEdited={errors.edited}
            idPrefix="edit"
          />
          <PropListStatus list={propList} />
          <p class="field-error" role={errors.summary ? 'alert' : undefined}>
            {errors.summary ?? ''}
          </p>
          <button type="submit" aria-disabled={saving.busy ? 'true' : undefined}>
            {saving.busy ? 'Saving…' : 'Save props'}
          </button>
        </form>
      )}
    </details>
  );
}
