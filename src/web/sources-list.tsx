// The sources page: every source with its kind, state, last event and a sparkline of its events per minute, each read again on a timer.
import { get, type Page } from './api';
import { eventTime, formatAgo, sourceKind } from './format';
import { href } from './router';
import { perMinute, Sparkline } from './sparkline';
import type { EventSummary, Source } from './types';
import { useLoad } from './use-load';
import { usePages } from './use-pages';
import { NameCell, PagedTable } from './table';
import { IDLE_POLL_MS, usePoll } from './use-poll';

const PAGE = 50;
/** How often a row's events are read again: each is a read of up to 100 events, one per listed source. */
const ROW_POLL_MS = 30_000;

export function SourcesList() {
  const pages = usePages<Source>('/users/me/sources', PAGE);
  // Sources are created and deleted elsewhere too (the CLI, the API, another tab): the list, read once, kept a deleted
  // one and lacked a new one until the page was loaded again. Read again (every page opened) as a workflow's runs are.
  usePoll(pages.page, IDLE_POLL_MS);
  return (
    <section aria-labelledby="sources-title">
      <div class="title-row">
        <h1 id="sources-title">Sources</h1>
        <a class="button" href={href('sources', 'new')}>
          New source
        </a>
      </div>
      <PagedTable
        pages={pages}
        class="sources"
        columns={['Name', 'Type', 'Active', 'Last event', 'Events per minute']}
        row={(source) => <SourceRow source={source} key={source.id} />}
        empty={
          <>
            No sources yet. <a href={href('sources', 'new')}>Deploy one</a> from code or from the registry.
          </>
        }
      />
    </section>
  );
}

function SourceRow(props: { source: Source }) {
  const { source } = props;
  // The last 100 events (what the API keeps) are enough for the last 30 minutes of all but the busiest sources.
  const events = useLoad(() => get<Page<EventSummary>>(`/sources/${encodeURIComponent(source.id)}/event_summaries?limit=100`), [source.id]);
  // Its last event and sparkline follow the source's events as the list follows the sources, at a slower pace.
  usePoll(events, ROW_POLL_MS);
  const times = events.data?.data.map((e) => eventTime(e.id)) ?? [];
  const last = times.length ? Math.max(...times) : undefined;
  return (
    <tr>
      <NameCell href={href('sources', source.id)} name={source.name} />
      <td>{sourceKind(source.configured_props)}</td>
      <td>{source.active ? 'Active' : <span class="muted">Inactive</span>}</td>
      {/* A failed read says so (its reason on hover), rather than the "…" of a read still on its way, forever. */}
      <td>
        {events.data ? (
          formatAgo(last)
        ) : events.error ? (
          <span class="muted" title={events.error}>
            could not be read
          </span>
        ) : (
          '…'
        )}
      </td>
      <td>{events.data ? <Sparkline counts={perMinute(times)} capped={times.length >= 100} /> : <span class="spark-placeholder" />}</td>
    </tr>
  );
}
