// The console's tables of things (column heads, a row a thing, the line of an empty one) and the lists read a page at a time around them.
import type { ComponentChildren, Ref, VNode } from 'preact';
import { useRef } from 'preact/hooks';
import { LoadError } from './load-error';
import { LoadMore } from './load-more';
import type { Pages } from './use-pages';

/** A column's head: its text, or `{ hidden }` for one that only a screen reader names (the rows' buttons). */
export type Column = string | { hidden: string };

export interface TableProps<T> {
  columns: Column[];
  items: T[];
  /** A thing's row: a `tr`, or a component that draws it, with its key. */
  row: (item: T, index: number) => VNode;
  class?: string;
  /** Said to a screen reader only: what the rows are, where the page's heading does not say it. */
  caption?: string;
  /** The id of the heading that names the table, where one does. */
  labelledBy?: string;
  /** The muted line across the columns while `items` is empty; none while it is undefined (the first read on its way). */
  empty?: ComponentChildren;
  /** The scrolling box around the table, where LoadMore (and a page's own focus moves) find the rows. */
  wrap?: Ref<HTMLDivElement>;
}

export function Table<T>(props: TableProps<T>) {
  return (
    <div class="table-wrap" ref={props.wrap}>
      <table class={props.class} aria-labelledby={props.labelledBy}>
        {props.caption && <caption class="sr-only">{props.caption}</caption>}
        <thead>
          <tr>
            {props.columns.map((column) => (
              <th scope="col" key={typeof column === 'string' ? column : column.hidden}>
                {typeof column === 'string' ? column : <span class="sr-only">{column.hidden}</span>}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.items.map(props.row)}
          {props.empty !== undefined && props.items.length === 0 && <EmptyRow columns={props.columns.length}>{props.empty}</EmptyRow>}
        </tbody>
      </table>
    </div>
  );
}

/**
 * The muted line of an empty table, across its `columns`, wrapped within what the frame shows: on a phone the column
 * heads make the table wider than the screen, and the line ran on past the edge, cut ("No runs yet: its timer starts
 * one on its schedule, o").
 */
export function EmptyRow(props: { columns: number; children: ComponentChildren }) {
  return (
    <tr>
      <td colSpan={props.columns} class="muted empty-line">
        <span>{props.children}</span>
      </td>
    </tr>
  );
}

/** A row's head: the thing's name, linking to its page, whole on hover where the column cuts it. */
export function NameCell(props: { href: string; name: string }) {
  return (
    <th scope="row">
      <a href={props.href} title={props.name}>
        {props.name}
      </a>
    </th>
  );
}

/**
 * A list read a page at a time (usePages), as every list of one kind of thing shows it: why the read failed, with Try
 * again; `empty` as a paragraph once the list is read and holds nothing (what makes one, so that the empty page is not
 * taken for a missing button); the table once it holds anything; and Load more while there is more.
 */
export function PagedTable<T>(props: Omit<TableProps<T>, 'items' | 'empty' | 'wrap'> & { pages: Pages<T>; empty: ComponentChildren }) {
  const { pages, empty, ...table } = props;
  const rows = useRef<HTMLDivElement>(null);
  return (
    <>
      <LoadError loads={[pages.page]} />
      {pages.page.data && pages.items.length === 0 && <p>{empty}</p>}
      {pages.items.length > 0 && <Table {...table} items={pages.items} wrap={rows} />}
      <LoadMore pages={pages} rows={rows} />
    </>
  );
}
