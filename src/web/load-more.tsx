// The Load more button under a list read a page at a time, which takes the keyboard to the first row it brought.
import type { RefObject } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import type { Pages } from './use-pages';

/**
 * Shown while the list holds more. Once the next page is in, the focus goes to the first new row's link (else the row
 * itself): the button goes away with the last page, and the focus with it to the top of the page, so that a keyboard
 * user had to tab through every row again to reach the new ones. `rows` is the element whose `tbody tr` are the rows.
 */
export function LoadMore<T>(props: {
  pages: Pick<Pages<T>, 'items' | 'more' | 'loadMore'> & { page: { error: string | undefined } };
  rows: RefObject<HTMLElement | null>;
}) {
  const { items, page, more, loadMore } = props.pages;
  // How many rows there were when pressed: the first new one is the next. A failed read forgets the press.
  const pressed = useRef<number | undefined>(undefined);
  useEffect(() => {
    const before = pressed.current;
    if (page.error) pressed.current = undefined;
    if (before === undefined || items.length <= before) return;
    pressed.current = undefined;
    // A row's opened detail (a store key's value) is a row of its own, not one of the list's.
    const row = props.rows.current?.querySelectorAll<HTMLElement>('tbody tr:not(.row-detail)')[before];
    const target = row?.querySelector<HTMLElement>('a[href], button') ?? row;
    if (target === row) row?.setAttribute('tabindex', '-1');
    target?.focus();
  }, [items.length, page.error]);
  if (!more) return null;
  return (
    <button
      type="button"
      onClick={() => {
        pressed.current = items.length;
        loadMore();
      }}
    >
      Load more
    </button>
  );
}
