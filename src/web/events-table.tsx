// A live table of one stream of a source (emits, $logs or $errors): the retained events, then new ones over SSE as they
// come, with pause and resume, older pages a Load more away, each row opening the full event, and deletion of a range
// of emitted events.
import { useEffect, useRef, useState } from 'preact/hooks';
import { del, describeError, get, getFirst, type Page, query } from './api';
import { ConfirmDialog } from './confirm-dialog';
import { compareIds, formatTime } from './format';
import { DeleteRangeForm } from './delete-range';
import { JsonView } from './json-view';
import { LoadMore } from './load-more';
import { useNotify } from './notices';
import { followStream } from './sse';
import type { EventSummary } from './types';
import { useBusy } from './use-busy';
import { EmptyRow } from './table';

export type Stream = 'emit' | '$logs' | '$errors';
/** Events to delete, from `start` to `end` (either open), and the button that asked. */
interface Removal {
  start?: string | undefined;
  end?: string | undefined;
  from: 'event' | 'range';
}
const RETAINED = 100;

/** The API path of one stream's event summaries of a source. */
export function summariesPath(sourceId: string, stream: Stream): string {
  return `/sources/${encodeURIComponent(sourceId)}/${stream === 'emit' ? '' : `${stream}/`}event_summaries`;
}

function preview(summary: EventSummary): string {
  if (summary.metadata.summary) return summary.metadata.summary;
  const text = JSON.stringify(summary.event);
  return text === undefined ? '' : text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/**
 * `openId`: an event to open once its row is in the table (a link to it); `openDepth`: how many of the newest events
 * reach it, read at once when it is older than the first page.
 */
export function EventsTable(props: { sourceId: string; stream: Stream; openId?: string | undefined; openDepth?: number | undefined }) {
  const { sourceId, stream, openId, openDepth } = props;
  const notify = useNotify();
  const [rows, setRows] = useState<EventSummary[]>([]);
  const [held, setHeld] = useState<EventSummary[]>([]);
  const [paused, setPaused] = useState(false);
  const [state, setState] = useState<'loading' | 'live' | 'reconnecting' | 'stopped'>('loading');
  const [error, setError] = useState<string | undefined>(undefined);
  /** Why the server refused the stream, while it is asked again. */
  const [refused, setRefused] = useState<string | undefined>(undefined);
  const [selected, setSelected] = useState<string | undefined>(undefined);
  const [announcement, setAnnouncement] = useState('');
  /** The range asked about, and which button asked: "Delete this event" (`event`) or the range form's (`range`). */
  const [confirming, setConfirming] = useState<Removal | undefined>(undefined);
  // One DELETE per confirmation, and no second question while it runs, the button pressed saying Deleting… (as every
  // other Delete does): on a slow server a second press, confirmed, sent a second DELETE.
  const removal = useBusy();
  const [removing, setRemoving] = useState<Removal['from'] | undefined>(undefined);
  const pausedRef = useRef(paused);
  pausedRef.current = paused;
  const [generation, setGeneration] = useState(0);
  /** The stream holds older events than the table shows (so many came live that the oldest rows went, or never read). */
  const [more, setMore] = useState(false);
  const [olderError, setOlderError] = useState<string | undefined>(undefined);
  /** Most rows the table keeps as new ones come: the newest 100, or as many as the user paged back to. */
  const keep = useRef(RETAINED);
  /** Every event the table holds or held (rows, held by a pause, read by Load more): the stream adds none twice. */
  const seen = useRef(new Set<string>());
  const loadingOlder = useRef(false);
  const table = useRef<HTMLElement>(null);
  const path = summariesPath(sourceId, stream);

  useEffect(() => {
    const abort = new AbortController();
    seen.current = new Set<string>();
    const add = (summary: EventSummary) => {
      if (seen.current.has(summary.id)) return;
      seen.current.add(summary.id);
      if (pausedRef.current) setHeld((h) => [summary, ...h]);
      else setRows((r) => trim([summary, ...r]));
      setAnnouncement(`New event ${summary.id}: ${preview(summary).slice(0, 80)}`);
    };
    (async () => {
      try {
        const page = await get<Page<EventSummary>>(`${path}?limit=${RETAINED}&expand=event`);
        if (abort.signal.aborted) return;
        for (const summary of page.data) seen.current.add(summary.id);
        keep.current = RETAINED;
        setRows(page.data);
        setMore(page.data.length < page.page_info.total_count);
        setHeld([]);
        setError(undefined);
        setOlderError(undefined);
        // With no event yet, "after 0-0" replays whatever arrived between the list and the stream's start.
        await followStream(
          `/sources/${encodeURIComponent(sourceId)}/sse${query({ event_name: stream === 'emit' ? undefined : stream })}`,
          page.data[0]?.id ?? '0-0',
          abort.signal,
          {
            onEvent: (_id, data) => add(JSON.parse(data) as EventSummary),
            onState: (next, why) => {
              setState(next);
              setRefused(why);
            },
            onFatal: (status) => {
              setState('stopped');
              setError(status === 404 ? 'This source no longer exists.' : 'The stream refused the key.');
            },
          },
        );
      } catch (failure) {
        if (!abort.signal.aborted) {
          setState('stopped');
          setError(describeError(failure));
        }
      }
    })();
    return () => abort.abort();
  }, [sourceId, stream, generation]);

  /** The newest `keep` rows: the ones past it are older events again, which Load more reads back. */
  const trim = (list: EventSummary[]) => {
    if (list.length <= keep.current) return list;
    setMore(true);
    return list.slice(0, keep.current);
  };

  // Reads again every page shown and the next one, from the newest (not from the last row's cursor: rows that live
  // events pushed out, or deletions, would leave a gap); rows that came live since the read began stay on top.
  const loadOlder = async (atLeast = 0) => {
    if (loadingOlder.current) return;
    loadingOlder.current = true;
    try {
      const span = await getFirst<EventSummary>(path, Math.max(rows.length + RETAINED, atLeast), { expand: 'event' });
      const newest = span.items[0]?.id;
      // The read starts at the newest event, so it holds those a pause is holding, and ones the stream has yet to
      // bring: while paused, those past the table's top are held (they were shown paused, then twice on Resume), and
      // none of them is added again when the stream brings it.
      const top = pausedRef.current ? rows[0]?.id : undefined;
      const fresh = top === undefined ? [] : span.items.filter((item) => compareIds(item.id, top) > 0);
      const shown = top === undefined ? span.items : span.items.filter((item) => compareIds(item.id, top) <= 0);
      const unseen = fresh.filter((item) => !seen.current.has(item.id));
      for (const item of span.items) seen.current.add(item.id);
      if (unseen.length) setHeld((h) => [...h, ...unseen].sort((a, b) => compareIds(b.id, a.id)));
      setRows((r) => {
        const merged = [...r.filter((row) => newest !== undefined && compareIds(row.id, newest) > 0), ...shown];
        keep.current = Math.max(RETAINED, merged.length);
        return merged;
      });
      setMore(span.items.length < span.total);
      setOlderError(undefined);
    } catch (failure) {
      setOlderError(`Could not read older events: ${describeError(failure)}`);
    } finally {
      loadingOlder.current = false;
    }
  };

  const resume = () => {
    setRows((r) => trim([...held, ...r]));
    setHeld([]);
    setPaused(false);
  };

  const deleteRange = ({ start, end, from }: Removal) =>
    removal.run(async () => {
      setConfirming(undefined);
      setRemoving(from);
      try {
        await del(`/sources/${encodeURIComponent(sourceId)}/events${query({ start_id: start, end_id: end })}`);
        const inRange = (id: string) => (!start || compareIds(id, start) >= 0) && (!end || compareIds(id, end) <= 0);
        setRows((r) => r.filter((row) => !inRange(row.id)));
        setHeld((h) => h.filter((row) => !inRange(row.id)));
        setSelected((open) => (open && inRange(open) ? undefined : open));
        notify({ kind: 'ok', text: start && start === end ? `Deleted event ${start}.` : 'Deleted the events.' });
      } catch (failure) {
        notify({ kind: 'error', text: `Could not delete: ${describeError(failure)}` });
      } finally {
        setRemoving(undefined);
      }
    });

  // Opened once, when its row arrives: closing it afterwards keeps it closed. An older one is read once, down to it.
  const linkedOpened = useRef<string | undefined>(undefined);
  const linkedRead = useRef<string | undefined>(undefined);
  useEffect(() => {
    if (!openId || linkedOpened.current === openId) return;
    if (rows.some((row) => row.id === openId)) {
      linkedOpened.current = openId;
      setSelected(openId);
    } else if (more && openDepth !== undefined && openDepth > rows.length && linkedRead.current !== openId) {
      linkedRead.current = openId;
      void loadOlder(openDepth);
    }
  }, [openId, openDepth, rows, more]);

  const open = rows.find((row) => row.id === selected);
  const detail = useRef<HTMLDivElement>(null);
  // An event opened below a long table would open out of sight: bring it into view.
  useEffect(() => {
    if (selected) detail.current?.scrollIntoView({ block: 'nearest' });
  }, [selected]);
  const label = stream === 'emit' ? 'Events' : stream;
  return (
    <div class="events">
      <div class="toolbar">
        <span class={`live-state ${state}`}>
          {state === 'live' ? (paused ? 'Paused' : 'Live') : state === 'loading' ? 'Loading…' : state === 'reconnecting' ? 'Reconnecting…' : 'Stopped'}
        </span>
        {paused ? (
          <button type="button" onClick={resume}>
            Resume{held.length ? ` (${held.length} new)` : ''}
          </button>
        ) : (
          <button type="button" onClick={() => setPaused(true)}>
            Pause
          </button>
        )}
        {state === 'stopped' && (
          <button type="button" onClick={() => setGeneration((g) => g + 1)}>
            Reconnect
          </button>
        )}
        <span class="muted">
          {rows.length} {rows.length === 1 ? 'event' : 'events'}
        </span>
      </div>
      {/* Read out as events arrive; polite, so that it waits for the reader to finish. */}
      <p class="sr-only" aria-live="polite">
        {paused ? '' : announcement}
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {state === 'reconnecting' && refused && (
        <p class="error" role="alert">
          The server refused the live stream: {refused}. Trying again.
        </p>
      )}
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must take focus for keyboard users to scroll it */}
      <section class="events-scroll" tabIndex={0} aria-label={`${label} of this source`} ref={table}>
        <table class="events-table">
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Summary</th>
              <th scope="col">Channel</th>
            </tr>
          </thead>
          <tbody>
            {/* One tab stop a row, its time's button (Enter or Space opens the event), which the row's summary describes:
                rows of the same second are told apart by what they hold. A click anywhere on the row opens it too. */}
            {rows.map((row) => (
              <tr key={row.id} class={row.id === selected ? 'selected' : undefined} onClick={() => setSelected(row.id)} data-event-id={row.id}>
                <td>
                  <button
                    type="button"
                    class="link"
                    onClick={() => setSelected(row.id)}
                    aria-expanded={row.id === selected}
                    aria-controls="event-detail"
                    aria-describedby={`summary-${stream}-${row.id}`}
                  >
                    {formatTime(row.indexed_at_ms)}
                  </button>
                </td>
                <td class="summary" id={`summary-${stream}-${row.id}`}>
                  {preview(row)}
                </td>
                <td class="channel" title={row.metadata.name || 'default'}>
                  {row.metadata.name || 'default'}
                </td>
              </tr>
            ))}
            {rows.length === 0 && state !== 'loading' && (
              <EmptyRow columns={3}>No {stream === 'emit' ? 'events' : stream} yet: they appear here as they happen.</EmptyRow>
            )}
          </tbody>
        </table>
      </section>
      <LoadMore pages={{ items: rows, page: { error: olderError }, more, loadMore: loadOlder }} rows={table} />
      {olderError && (
        <p class="error" role="alert">
          {olderError}
        </p>
      )}
      <div id="event-detail" class="event-detail" aria-live="off" ref={detail}>
        {open && (
          <section aria-label={`Event ${open.id}`}>
            <div class="title-row">
              <h3>
                Event <code>{open.id}</code>
              </h3>
              <div class="actions">
                {stream === 'emit' && (
                  <button
                    type="button"
                    class="danger"
                    onClick={() => removal.busy || setConfirming({ start: open.id, end: open.id, from: 'event' })}
                    aria-disabled={removal.busy ? 'true' : undefined}
                  >
                    {removing === 'event' ? 'Deleting…' : 'Delete this event'}
                  </button>
                )}
                <button type="button" onClick={() => setSelected(undefined)}>
                  Close
                </button>
              </div>
            </div>
            <JsonView value={open} label="Event JSON" />
          </section>
        )}
      </div>
      {stream === 'emit' && (
        <DeleteRangeForm
          sourceId={sourceId}
          oldest={rows.at(-1)?.id}
          newest={rows[0]?.id}
          busy={removal.busy}
          deleting={removing === 'range'}
          onAsk={(start, end) => setConfirming({ start, end, from: 'range' })}
        />
      )}
      {confirming && (
        <ConfirmDialog title="Delete events?" confirmLabel="Delete" onCancel={() => setConfirming(undefined)} onConfirm={() => deleteRange(confirming)}>
          <p>
            {confirming.start && confirming.start === confirming.end
              ? `Event ${confirming.start} will be deleted.`
              : `Events ${confirming.start ? `from ${confirming.start}` : 'from the oldest'} ${confirming.end ? `to ${confirming.end}` : 'to the newest'} will be deleted.`}{' '}
            This cannot be undone.
          </p>
        </ConfirmDialog>
      )}
    </div>
  );
}
