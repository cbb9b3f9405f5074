// One webhook's delivery log: each attempt's state, status code, error, duration and when the next retry is due.
import { useRef } from 'preact/hooks';
import { get } from './api';
import { formatDuration, formatTime } from './format';
import { href } from './router';
import type { Delivery, Webhook } from './types';
import { useLoad } from './use-load';
import { usePages } from './use-pages';
import { LoadMore } from './load-more';
import { LoadError } from './load-error';
import { Table } from './table';
import { IDLE_POLL_MS, usePoll } from './use-poll';

const PAGE = 100;

export function WebhookDeliveries(props: { id: string }) {
  const webhook = useLoad(() => get<{ data: Webhook }>(`/webhooks/${encodeURIComponent(props.id)}`), [props.id]);
  // Older attempts are a Load more away; Refresh reads again every page opened.
  const pages = usePages<Delivery>(`/webhooks/${encodeURIComponent(props.id)}/deliveries`, PAGE);
  const { items, page: deliveries } = pages;
  const rows = useRef<HTMLDivElement>(null);

  // The log is read again (every page opened), so that an attempt's outcome and the attempts of events emitted since
  // show without a Refresh: every second while a pending one (on its way, or a retry) is due, else every few seconds
  // (an empty log said "Nothing delivered yet." under deliveries made since, until Refresh was pressed).
  // A failed attempt's retry time counts too: once it passes, its row no longer shows it (see retryOf), and the read
  // then is what redraws the row.
  const now = Date.now();
  const due = items
    .filter((d) => d.state === 'pending' || (d.state === 'failed' && d.next_attempt_at_ms !== null && d.next_attempt_at_ms > now))
    .map((d) => d.next_attempt_at_ms ?? 0);
  const next = due.length ? Math.min(...due) : undefined;
  usePoll(deliveries, next === undefined ? IDLE_POLL_MS : Math.min(Math.max(next - now, 1000), IDLE_POLL_MS));
  const attempts = new Map(items.map((d) => [attemptKey(d, d.attempt), d]));

  // No such webhook (deleted, a mistyped address): a Refresh and an empty log would say there is one, never called.
  if (webhook.missing) {
    return (
      <section aria-labelledby="deliveries-title">
        <p class="crumbs">
          <a href={href('webhooks')}>Webhooks</a> /
        </p>
        <h1 id="deliveries-title">Deliveries of {props.id}</h1>
        <LoadError loads={[webhook]} />
      </section>
    );
  }
  return (
    <section aria-labelledby="deliveries-title">
      <p class="crumbs">
        <a href={href('webhooks')}>Webhooks</a> /
      </p>
      <h1 id="deliveries-title">Deliveries of {webhook.data?.data.name || props.id}</h1>
      {webhook.data && (
        <p class="wrap">
          <code>{webhook.data.data.url}</code>
        </p>
      )}
      {/* The description typed at its creation: the console showed it nowhere, on no page. */}
      {webhook.data?.data.description && <p class="wrap description">{webhook.data.data.description}</p>}
      <LoadError loads={[webhook, deliveries]} />
      <div class="toolbar">
        <button type="button" onClick={() => deliveries.reload()}>
          Refresh
        </button>
      </div>
      {/* Not a PagedTable: the log stands from the first read, beside its Refresh, and an empty one is a row of it. */}
      <Table
        wrap={rows}
        class="deliveries"
        caption="Delivery attempts, newest first"
        columns={['Attempted', 'Event', 'Attempt', 'State', 'Status', 'Error', 'Duration', 'Next retry']}
        items={items}
        row={(d) => (
          <tr key={d.id}>
            <td>{formatTime(d.attempted_at_ms)}</td>
            <td>
              {/* A source's event opens on its page; a workflow's emits have no page in the console to open on. */}
              {d.emitter_id.startsWith('dc_') ? (
                <a href={href('sources', d.emitter_id, 'events', d.event_id)} aria-label={`Event ${d.event_id} of source ${d.emitter_id}`}>
                  <code>{d.event_id}</code>
                </a>
              ) : (
                <code>{d.event_id}</code>
              )}
            </td>
            <td>{d.attempt}</td>
            <td>
              <span class={`badge ${d.state}`}>{d.state}</span>
            </td>
            <td class="status-code">{d.status_code ?? '—'}</td>
            <td class="summary">{failureOf(d)}</td>
            <td>{formatDuration(d.duration_ms)}</td>
            <td>{retryOf(d, attempts.get(attemptKey(d, d.attempt + 1)), now)}</td>
          </tr>
        )}
        empty={deliveries.data ? 'Nothing delivered yet.' : undefined}
      />
      <LoadMore pages={pages} rows={rows} />
    </section>
  );
}

/** Why an attempt failed: the recorded error, or for an answer outside 2xx without one, that answer. */
function failureOf(delivery: Delivery): string {
  if (delivery.error) return delivery.error;
  if (delivery.state === 'failed' && delivery.status_code !== null) return `answered HTTP ${delivery.status_code}`;
  return '';
}

/** An event's attempt number `attempt` at this webhook; a retry is the same event's next attempt. */
function attemptKey(delivery: Delivery, attempt: number): string {
  return `${delivery.emitter_id} ${delivery.event_id} ${attempt}`;
}

/**
 * The Next retry cell. A failed attempt keeps the time its retry was due after that retry was made, so past it the
 * row showed a "next" retry in the past, beside the retry's own row: once the retry is made its outcome is said
 * instead, and while it is due but not yet made, that it is on its way.
 */
function retryOf(delivery: Delivery, retry: Delivery | undefined, now: number): string {
  if (delivery.state === 'succeeded') return '—';
  const due = delivery.next_attempt_at_ms;
  if (due === null) return 'none';
  if (delivery.state === 'pending') return due > now ? formatTime(due) : 'sending…';
  if (retry && retry.state !== 'pending') return `retried: attempt ${retry.attempt} ${retry.state}`;
  return due > now ? formatTime(due) : 'retrying…';
}
