// Reading a source's stored events back through the API (for counting and checking).
import { sleep } from './stats.mjs';

export async function totalCount(api, sourceId) {
  const res = await api.get(`/v1/sources/${sourceId}/event_summaries?limit=1`);
  if (res.status !== 200) throw new Error(`event_summaries answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.page_info.total_count;
}

/**
 * Polls total_count until it reaches `expected`, stops changing for `quietMs`, or `timeoutMs` passes.
 * Returns { count, reached, ms }.
 */
export async function waitForCount(api, sourceId, expected, { timeoutMs, quietMs = 10_000, pollMs = 250 }) {
  const start = Date.now();
  let last = -1;
  let lastChange = Date.now();
  for (;;) {
    const count = await totalCount(api, sourceId);
    if (count !== last) {
      last = count;
      lastChange = Date.now();
    }
    if (count >= expected) return { count, reached: true, ms: Date.now() - start };
    if (Date.now() - lastChange > quietMs || Date.now() - start > timeoutMs) return { count, reached: false, ms: Date.now() - start };
    await sleep(pollMs);
  }
}

/**
 * Every stored event of a source (newest first), with expand=event, calling onEvent(summary) for each;
 * stops after `maxPages` pages or `timeoutMs`. Returns { pages, events, complete }.
 */
export async function forEachEvent(api, sourceId, onEvent, { maxPages = 1e6, timeoutMs = 120_000, stopWhen } = {}) {
  const start = Date.now();
  let after;
  let pages = 0;
  let events = 0;
  while (pages < maxPages && Date.now() - start < timeoutMs) {
    const res = await api.get(`/v1/sources/${sourceId}/event_summaries?limit=100&expand=event${after ? `&after=${encodeURIComponent(after)}` : ''}`);
    if (res.status !== 200) throw new Error(`event_summaries answered ${res.status}: ${JSON.stringify(res.body)}`);
    pages++;
    let stop = false;
    for (const summary of res.body.data) {
      events++;
      onEvent(summary);
      if (stopWhen?.(summary)) stop = true;
    }
    if (stop || res.body.data.length < 100 || !res.body.page_info.end_cursor) return { pages, events, complete: true };
    after = res.body.page_info.end_cursor;
  }
  return { pages, events, complete: false };
}
