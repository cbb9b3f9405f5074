// A list read a page at a time: the pages loaded so far as one list, and the next page a press away.
import { useState } from 'preact/hooks';
import { getFirst, query, type Span } from './api';
import { type Loaded, useLoad } from './use-load';

export interface Pages<T> {
  /** The items of every page loaded so far, newest first. */
  items: T[];
  /** The read of those pages (its error and state, for LoadError; its `reload` is the list's refresh). */
  page: Loaded<Span<T>>;
  /** The list holds more than is loaded: `loadMore` reads the next page. */
  more: boolean;
  loadMore: () => void;
}

/**
 * Reads `path` (a list route, `params` its filters) `size` items at a time: never stopping short of the whole list
 * without saying so. A reload (a refresh, a poll of unfinished items) reads again every page shown, from the newest,
 * rather than the last page alone: the items that came in since are at the top, none twice, and the older pages the
 * user opened stay open. Other filters start again from one page.
 */
export function usePages<T>(path: string, size: number, params: Record<string, string | undefined> = {}): Pages<T> {
  const key = `${path}${query(params)}`;
  const [wanted, setWanted] = useState({ key, count: size });
  const count = wanted.key === key ? wanted.count : size;
  const page = useLoad(() => getFirst<T>(path, count, params), [key, count]);
  const items = page.data?.items ?? [];
  const more = page.data !== undefined && items.length >= count && items.length < page.data.total;
  return { items, page, more, loadMore: () => setWanted({ key, count: Math.max(count, items.length) + size }) };
}
