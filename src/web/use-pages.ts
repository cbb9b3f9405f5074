// A list read a page at a time: the pages loaded so far as one list, and the next page a press away.
import { useEffect, useState } from 'preact/hooks';
import { get, type Page, query } from './api';
import { type Loaded, useLoad } from './use-load';

export interface Pages<T> {
  /** The items of every page loaded so far, newest first. */
  items: T[];
  /** The last page's load (its error and state, for LoadError). */
  page: Loaded<Page<T>>;
  /** The list holds more than is loaded: `loadMore` reads the next page. */
  more: boolean;
  loadMore: () => void;
}

/** Reads `path` (a list route) `size` items at a time: never stopping short of the whole list without saying so. */
export function usePages<T>(path: string, size: number): Pages<T> {
  const [after, setAfter] = useState<string | undefined>(undefined);
  const [items, setItems] = useState<T[]>([]);
  const page = useLoad(() => get<Page<T>>(`${path}${query({ limit: size, after })}`), [path, after]);
  useEffect(() => {
    if (page.data) setItems((previous) => (after ? [...previous, ...page.data!.data] : page.data!.data));
  }, [page.data]);
  const more = page.data !== undefined && page.data.data.length === size && items.length < page.data.page_info.total_count;
  return { items, page, more, loadMore: () => setAfter(page.data?.page_info.end_cursor ?? undefined) };
}
