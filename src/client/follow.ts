// `tributary events` and `tributary logs`: a source's or workflow's recent items, then (with -f) new ones as they come:
// a source's over Server-Sent Events, reconnecting and resuming with Last-Event-ID; a workflow's by polling its lists.
import { EventSource } from 'eventsource';
import { ApiError, type ApiClient, type PageBody } from './api.js';
import { counted, segment } from './resources.js';

export type Stream = 'events' | '$logs' | '$errors';

export interface FollowOptions {
  stream: Stream;
  /** How many recent items to show first (0: none). */
  limit: number;
  follow: boolean;
  json: boolean;
  /** One line of output (standard output). */
  print: (line: string) => void;
  /** Connection news (standard error). */
  notice: (line: string) => void;
  /** Ends following (Ctrl-C); following resolves once it fires. */
  signal?: AbortSignal | undefined;
}

interface Summary {
  id: string;
  indexed_at_ms: number;
  event: unknown;
  metadata: { summary?: string; name?: string };
}

interface RunData {
  id: string;
  status: string;
  created_at_ms: number;
  finished_at_ms: number | null;
  exit_reason?: string;
  error?: { name?: string; message?: string };
  steps: Array<{
    name: string;
    status: string;
    duration_ms: number;
    logs: Array<{ k: string; ts: number; msg: string }>;
    error?: { name?: string; message?: string };
  }>;
}

const POLL_MS = 1000;
const time = (ms: number) => new Date(ms).toISOString();

/** One item as a line: the summary as JSON with --json, else time, then the log line, error or event. */
export function formatSummary(summary: Summary, stream: Stream, json: boolean): string {
  if (json) return JSON.stringify(summary);
  const event = summary.event as { k?: string; msg?: string; error?: { name?: string; message?: string } } | null;
  if (stream === '$logs') return `${time(summary.indexed_at_ms)}  ${String(event?.k ?? 'log').padEnd(5)}  ${event?.msg ?? JSON.stringify(event)}`;
  if (stream === '$errors') return `${time(summary.indexed_at_ms)}  ERROR  ${event?.error?.name ?? 'Error'}: ${event?.error?.message ?? JSON.stringify(event)}`;
  const summaryText = summary.metadata.summary ? `${summary.metadata.summary}  ` : '';
  const channel = summary.metadata.name && summary.metadata.name !== 'default' ? `[${summary.metadata.name}]  ` : '';
  return `${time(summary.indexed_at_ms)}  ${channel}${summaryText}${JSON.stringify(summary.event)}`;
}

function summariesPath(id: string, stream: Stream): string {
  const kind = id.startsWith('p_') ? 'workflows' : 'sources';
  return `/v1/${kind}/${segment(id)}/${stream === 'events' ? '' : `${stream}/`}event_summaries`;
}

/** Resolves when `signal` fires (never without one). */
function untilAborted(signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) resolve();
    signal?.addEventListener('abort', () => resolve(), { once: true });
  });
}

/**
 * Waits `ms`, or less if `signal` fires, and leaves no listener behind: a poll that raced a fresh `untilAborted` each
 * second piled up abort listeners (Node's leak warning after ten seconds of following).
 */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    if (signal?.aborted) done();
    else signal?.addEventListener('abort', done, { once: true });
  });
}

/** An empty answer said on standard error (as `list` says it), so that nothing shown is not taken for a command that hung or failed. */
function sayIfNothing(shown: number, id: string, options: FollowOptions): void {
  if (shown > 0 || options.limit === 0) return;
  options.notice(`${id} has no ${options.stream === 'events' ? 'events' : `${options.stream} lines`} yet`);
}

/** Shows recent items of a source or workflow stream, then follows it when asked. */
export async function showStream(api: ApiClient, id: string, options: FollowOptions): Promise<void> {
  if (id.startsWith('p_') && options.stream === '$logs') return showWorkflowLogs(api, id, options);
  const path = summariesPath(id, options.stream);
  const recent = await api.get<PageBody<Summary>>(`${path}?limit=${Math.max(options.limit, 1)}&expand=event`);
  const shown = options.limit > 0 ? recent.data.slice(0, options.limit).reverse() : [];
  for (const summary of shown) options.print(formatSummary(summary, options.stream, options.json));
  if (!options.follow) return sayIfNothing(shown.length, id, options);
  // Nothing seen yet: the poll asks for the newest page (`before=head` would stay empty however many come).
  if (id.startsWith('p_')) return pollSummaries(api, id, path, recent.data.length ? recent.page_info.start_cursor : null, options);
  // With nothing shown yet, "0-0" has the server replay whatever arrives before the stream is open.
  return followSource(api, id, recent.data[0]?.id ?? '0-0', options);
}

/** Answers to a stream's request that say "later", not "no": too many streams or requests, a server away or stopping. */
const RETRIED_STATUSES = new Set([429, 502, 503, 504]);
/** Answers to a stream's request that end the command, with the API's code for them (and so its hint). */
const STREAM_REFUSALS: Record<number, { code: string; why?: string }> = {
  401: { code: 'unauthorized', why: 'the key was refused (rotated or deleted meanwhile?)' },
  404: { code: 'not_found' },
};
/** The first wait after such an answer; each next one doubles, up to MAX_RETRY_MS. */
const FIRST_RETRY_MS = 1000;
const MAX_RETRY_MS = 10_000;

/**
 * A source's stream live: Last-Event-ID makes the server replay what came after the last item shown, on every reconnect.
 * A connection lost is retried by the library; an answer that says "later" (RETRIED_STATUSES) ends the library's stream,
 * so it is opened again here after a growing wait; any other answer (401, 404) ends the command.
 */
function followSource(api: ApiClient, sourceId: string, lastShown: string, options: FollowOptions): Promise<void> {
  const query = options.stream === 'events' ? '' : `?event_name=${encodeURIComponent(options.stream)}`;
  const url = api.url(`/v1/sources/${segment(sourceId)}/sse${query}`);
  let lastEventId = lastShown;
  let connectedOnce = false;
  let lost = false;
  let refusals = 0;
  let source: EventSource | undefined;
  let retry: NodeJS.Timeout | undefined;
  return new Promise<void>((resolve, reject) => {
    const stop = () => {
      clearTimeout(retry);
      source?.close();
      resolve();
    };
    untilAborted(options.signal).then(stop);
    const open = () => {
      const current = new EventSource(url, {
        fetch: (target, init) =>
          api.fetchStream(target, {
            ...init,
            headers: {
              ...init.headers,
              authorization: `Bearer ${api.server.key}`,
              // The library sends Last-Event-ID itself once it saw an id; a new stream resumes after the last item shown.
              ...(!('Last-Event-ID' in init.headers) && { 'Last-Event-ID': lastEventId }),
            },
          }),
      });
      source = current;
      current.onopen = () => {
        if (lost) options.notice('reconnected; resuming after the last event shown');
        else if (!connectedOnce) options.notice(`following ${sourceId} (Ctrl-C to stop)`);
        connectedOnce = true;
        lost = false;
        refusals = 0;
      };
      current.onmessage = (message) => {
        const summary = JSON.parse(message.data) as Summary;
        lastEventId = message.lastEventId || summary.id;
        options.print(formatSummary(summary, options.stream, options.json));
      };
      current.onerror = (error) => {
        if (error.code === undefined) {
          if (!lost) options.notice(`connection lost (${error.message ?? 'network error'}); reconnecting …`);
          lost = true;
          return;
        }
        current.close();
        if (RETRIED_STATUSES.has(error.code)) {
          const waitMs = Math.min(FIRST_RETRY_MS * 2 ** refusals++, MAX_RETRY_MS);
          if (!lost) options.notice(`the live stream of ${sourceId} answered ${error.code}; trying again, first in ${waitMs / 1000} s …`);
          lost = true;
          if (!options.signal?.aborted) retry = setTimeout(open, waitMs);
          return;
        }
        // Any other answer (401, 404): the command ends. The library's message ("Non-200 status code") says nothing
        // the code does not: a 404 after a stream is a source deleted meanwhile, a 401 a key rotated meanwhile, whose
        // code brings the hint to log in again.
        const refusal = STREAM_REFUSALS[error.code];
        const why =
          error.code === 404
            ? `no source ${sourceId} (deleted${connectedOnce ? ' while followed' : ''}, or never this account's)`
            : (refusal?.why ?? error.message);
        reject(new ApiError(error.code, refusal?.code ?? 'http_error', `the live stream of ${sourceId} answered ${error.code}${why ? `: ${why}` : ''}`));
      };
    };
    open();
  });
}

/** A workflow's events or errors by polling: each poll asks for what is newer than the newest seen (`before` its cursor). */
async function pollSummaries(api: ApiClient, id: string, path: string, startCursor: string | null, options: FollowOptions): Promise<void> {
  let cursor = startCursor;
  options.notice(`following ${id} (Ctrl-C to stop)`);
  const poll = politePoll(options);
  while (!options.signal?.aborted) {
    const page = await poll(() => api.get<PageBody<Summary>>(`${path}?limit=100&expand=event${cursor ? `&before=${encodeURIComponent(cursor)}` : ''}`));
    for (const summary of page ? [...page.data].reverse() : []) options.print(formatSummary(summary, options.stream, options.json));
    if (page?.data.length) cursor = page.page_info.start_cursor;
    await pause(POLL_MS, options.signal);
  }
}

/**
 * One poll of a followed workflow, riding out a server that is away (restarting, or 503 while stopping) as a source's
 * stream does: a notice once when it goes, another when it answers again. A 429 of the key's rate limit (other
 * clients of the key using it up) passes as well: the next minute lets the poll through. Other refusals (401, 404) end
 * the command.
 */
function politePoll(options: FollowOptions): <T>(get: () => Promise<T>) => Promise<T | undefined> {
  let lost: 'connection' | 'rate' | undefined;
  return async (get) => {
    try {
      const answer = await get();
      if (lost === 'connection') options.notice('reconnected; resuming after the last item shown');
      if (lost === 'rate') options.notice('the server answers again; resuming after the last item shown');
      lost = undefined;
      return answer;
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      if (error.status === 429 && error.code === 'rate_limited') {
        if (lost !== 'rate') options.notice(`the server refused a poll: ${error.message} (429 rate_limited); retrying each second …`);
        lost = 'rate';
        return undefined;
      }
      if (error.status !== 0 && error.status !== 503) throw error;
      if (lost !== 'connection') options.notice(`connection lost (${error.message}); retrying each second …`);
      lost = 'connection';
      return undefined;
    }
  };
}

function runLines(run: RunData, json: boolean): string[] {
  if (json) return [JSON.stringify(run)];
  const lines: string[] = [];
  for (const step of run.steps) {
    for (const log of step.logs) lines.push(`${time(log.ts)}  ${run.id}/${step.name}  ${log.k.padEnd(5)}  ${log.msg}`);
    if (step.error) lines.push(`${time(run.finished_at_ms ?? run.created_at_ms)}  ${run.id}/${step.name}  ERROR  ${step.error.name}: ${step.error.message}`);
  }
  const took = run.finished_at_ms === null ? '' : `, ${run.finished_at_ms - run.created_at_ms} ms`;
  // A run a step ended with $.flow.exit() ran fewer steps than the workflow has: the reason says why (quoted as JSON,
  // since a step may give any text, a line break too, and the line must stay one).
  const exited = run.exit_reason === undefined ? '' : `; exited: ${JSON.stringify(run.exit_reason)}`;
  lines.push(`${time(run.finished_at_ms ?? run.created_at_ms)}  ${run.id}  ${run.status} (${counted(run.steps.length, 'step')}${took}${exited})`);
  return lines;
}

/** Pages of runs one poll reads at most: past them, a burst is shown from its newest runs and the notice says so. */
const MAX_RUN_PAGES = 10;

/**
 * A workflow's logs are its runs' step logs: the last runs, then (with -f) each run as it finishes. Each poll reads
 * the runs back to `frontier`, the oldest run that was still unfinished at the last look (or, when none was, the newest
 * then): every run before it was shown, however many came or however long one ran.
 */
async function showWorkflowLogs(api: ApiClient, workflowId: string, options: FollowOptions): Promise<void> {
  const shown = new Set<string>();
  const page = (limit: number, after?: string | null) =>
    api.get<PageBody<RunData>>(`/v1/workflows/${segment(workflowId)}/runs?limit=${limit}${after ? `&after=${encodeURIComponent(after)}` : ''}`);
  const finished = (runs: RunData[]) => runs.filter((run) => run.finished_at_ms !== null).reverse();
  const recent = (await page(Math.max(options.limit, 1))).data;
  for (const run of finished(recent)) {
    if (options.limit > 0) for (const line of runLines(run, options.json)) options.print(line);
    shown.add(run.id);
  }
  if (!options.follow) return sayIfNothing(shown.size, workflowId, options);
  // Run ids grow with time, so "older than the frontier" is a comparison of ids.
  let frontier = frontierOf(recent, undefined);
  /** The runs since the frontier (newest first), and whether the page limit cut them short. */
  const runsSince = async (): Promise<{ runs: RunData[]; cut: boolean }> => {
    const runs: RunData[] = [];
    let after: string | null = null;
    for (let pages = 0; pages < MAX_RUN_PAGES; pages++) {
      const body: PageBody<RunData> = await page(100, after);
      runs.push(...body.data);
      const oldest = body.data.at(-1)?.id;
      // A page of large runs may hold fewer than asked (the server bounds its size): only an empty page, or all runs read, ends the list.
      const allRead = body.data.length === 0 || runs.length >= body.page_info.total_count;
      if (!body.page_info.end_cursor || allRead || (frontier !== undefined && oldest !== undefined && oldest <= frontier)) {
        return { runs, cut: false };
      }
      after = body.page_info.end_cursor;
    }
    return { runs, cut: true };
  };
  options.notice(`following ${workflowId} (Ctrl-C to stop)`);
  const poll = politePoll(options);
  while (!options.signal?.aborted) {
    await pause(POLL_MS, options.signal);
    if (options.signal?.aborted) break;
    const read = await poll(runsSince);
    if (!read) continue;
    const runs = read.runs.filter((run) => frontier === undefined || run.id >= frontier);
    if (read.cut) options.notice(`more than ${MAX_RUN_PAGES * 100} runs since the last look: showing the newest of them`);
    for (const run of finished(runs)) {
      if (shown.has(run.id)) continue;
      shown.add(run.id);
      for (const line of runLines(run, options.json)) options.print(line);
    }
    frontier = frontierOf(runs, frontier);
    // Runs before the frontier are not read again: what is remembered stays small however long it follows.
    for (const id of shown) if (frontier !== undefined && id < frontier) shown.delete(id);
  }
}

/** The oldest unfinished run among `runs` (newest first), else the newest of them, else the frontier as it was. */
function frontierOf(runs: RunData[], previous: string | undefined): string | undefined {
  const unfinished = runs.filter((run) => run.finished_at_ms === null);
  return unfinished.at(-1)?.id ?? runs[0]?.id ?? previous;
}
