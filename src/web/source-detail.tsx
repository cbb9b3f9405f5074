// One source: its state and endpoint, activate / deactivate, a manual run, its props to edit, deletion, and its streams.
import { useEffect, useState } from 'preact/hooks';
import { del, describeError, get, type Page, patch, post } from './api';
import { ConfirmDialog } from './confirm-dialog';
import { CopyButton } from './copy-button';
import { EventsTable, type Stream } from './events-table';
import { endpointUrl, sourceKind, timerSchedule } from './format';
import { useNotify } from './notices';
import { collectValues, errorsFromServer, type FieldErrors, focusFirstInvalid, initialValues, PropFields, type RawValues } from './prop-form';
import { href, navigate } from './router';
import type { Component, EventSummary, Source } from './types';
import { useLoad } from './use-load';
import { LoadError } from './load-error';
import { RunNow } from './run-now';

const TABS: Array<[Stream, string]> = [
  ['emit', 'Events'],
  ['$logs', '$logs'],
  ['$errors', '$errors'],
];

/** Which stream of the source holds event `eventId` among its 100 newest (the most a live table shows), or null. */
async function streamOf(sourceId: string, eventId: string): Promise<Stream | null> {
  for (const [stream] of TABS) {
    const prefix = stream === 'emit' ? '' : `${stream}/`;
    const page = await get<Page<Pick<EventSummary, 'id'>>>(`/sources/${encodeURIComponent(sourceId)}/${prefix}event_summaries?limit=100&include=id`);
    if (page.data.some((summary) => summary.id === eventId)) return stream;
  }
  return null;
}

/** `eventId`: an event to open at once, in whichever of the streams holds it (a link from a webhook's delivery). */
export function SourceDetail(props: { id: string; eventId?: string | undefined }) {
  const notify = useNotify();
  const loaded = useLoad(() => get<{ data: Source }>(`/sources/${encodeURIComponent(props.id)}`), [props.id]);
  const [deleting, setDeleting] = useState(false);
  const [tab, setTab] = useState<Stream>('emit');
  const linked = useLoad(() => (props.eventId ? streamOf(props.id, props.eventId) : Promise.resolve(undefined)), [props.id, props.eventId]);
  const linkedStream = linked.data ?? undefined;
  useEffect(() => {
    if (linkedStream) setTab(linkedStream);
  }, [linkedStream, props.eventId]);
  const source = loaded.data?.data;

  if (loaded.error) {
    return (
      <section>
        <p class="crumbs">
          <a href={href('sources')}>Sources</a> /
        </p>
        <LoadError loads={[loaded]} />
      </section>
    );
  }
  if (!source) return <p aria-busy="true">Loading…</p>;

  const endpoint = endpointUrl(source.configured_props);
  const schedule = timerSchedule(source.configured_props);
  const setActive = async (active: boolean) => {
    try {
      await patch(`/sources/${encodeURIComponent(source.id)}`, { active });
      notify({ kind: 'ok', text: active ? `Activated ${source.name}.` : `Deactivated ${source.name}.` });
      await loaded.reload();
    } catch (failure) {
      notify({ kind: 'error', text: describeError(failure) });
    }
  };
  const remove = async () => {
    setDeleting(false);
    try {
      await del(`/sources/${encodeURIComponent(source.id)}`);
      notify({ kind: 'ok', text: `Deleted ${source.name}.` });
      navigate('sources');
    } catch (failure) {
      notify({ kind: 'error', text: describeError(failure) });
    }
  };

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
          <button type="button" onClick={() => setActive(!source.active)}>
            {source.active ? 'Deactivate' : 'Activate'}
          </button>
          <button type="button" class="danger" onClick={() => setDeleting(true)}>
            Delete
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
          const answer = await post<{ data: { id: string } }>(`/sources/${encodeURIComponent(source.id)}/run`, event);
          notify({ kind: 'ok', text: `Run queued (${answer.data.id}).` });
        }}
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
          Event <code>{props.eventId}</code> is not among the newest events of this source: it was deleted, or newer events have replaced it.
        </p>
      )}
      <div role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`}>
        <EventsTable sourceId={source.id} stream={tab} key={tab} openId={linkedStream === tab ? props.eventId : undefined} />
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
  const [errors, setErrors] = useState<FieldErrors>({});
  const [formError, setFormError] = useState<string | undefined>(undefined);
  const descriptors = component.data?.data.configurable_props;
  const values = raw ?? (descriptors ? initialValues(descriptors, source.configured_props) : undefined);

  const save = async (event: Event) => {
    event.preventDefault();
    // Read now: the event's currentTarget is gone once the request has been awaited.
    const form = event.currentTarget as HTMLFormElement;
    if (!descriptors || !values) return;
    const { values: configured, errors: found } = collectValues(descriptors, values);
    setErrors(found);
    if (Object.keys(found).length) {
      setFormError('Some values need fixing: see the marked fields.');
      focusFirstInvalid(form);
      return;
    }
    try {
      await patch(`/sources/${encodeURIComponent(source.id)}`, { configured_props: configured });
      setFormError(undefined);
      setRaw(undefined);
      notify({ kind: 'ok', text: `Saved the props of ${source.name}.` });
      await props.onSaved();
    } catch (failure) {
      const { fields, general } = errorsFromServer(failure, descriptors);
      setErrors(fields);
      setFormError(general ?? 'The server refused some values: see the marked fields.');
      focusFirstInvalid(form);
    }
  };

  return (
    <details class="panel" onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>Edit props</summary>
      {component.error && (
        <p class="error" role="alert">
          {component.error}
        </p>
      )}
      {descriptors && values && (
        <form onSubmit={save} noValidate>
          {descriptors.length === 0 && <p class="muted">This component has no props.</p>}
          <PropFields componentId={source.component_id} props={descriptors} raw={values} onChange={setRaw} errors={errors} idPrefix="edit" />
          <p class="field-error" role={formError ? 'alert' : undefined}>
            {formError ?? ''}
          </p>
          <button type="submit">Save props</button>
        </form>
      )}
    </details>
  );
}
