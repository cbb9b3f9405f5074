// Keyset pagination shared by every paginated list: newest first, opaque cursors that stay valid under inserts.
import { ServiceError } from './errors.js';
import { quote } from '../runtime/worker/quote.js';

export interface PageRequest {
  limit: number;
  /** Items that come before this cursor in list order (newer items). */
  before?: string | undefined;
  /** Items that come after this cursor in list order (older items). */
  after?: string | undefined;
}

export interface Page<T> {
  items: T[];
  totalCount: number;
  startCursor: string;
  endCursor: string;
}

/**
 * The position of the list's newest end. An empty page has no item to name, but the specification's cursors are
 * strings, so it gives the position it stands at: the cursor it was asked from, else this one. `after` it is the
 * first page; `before` it nothing. It cannot be taken for a real cursor: it decodes to no valid key.
 */
export const HEAD_CURSOR = 'head';

/** What to query for a page request: `empty` when the request asks for what lies before the newest end. */
export function resolveHead(page: PageRequest): PageRequest | 'empty' {
  if (page.before === HEAD_CURSOR) return 'empty';
  if (page.after === HEAD_CURSOR) return { limit: page.limit };
  return page;
}

export function encodeCursor(key: string): string {
  return Buffer.from(key, 'utf8').toString('base64url');
}

/** Decodes a cursor and checks it with `isValidKey`; a malformed cursor is a 400, never a silent empty page. */
export function decodeCursor(cursor: string, isValidKey: (key: string) => boolean): string {
  const key = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  if (!key || !isValidKey(key)) throw new ServiceError('invalid_cursor', `invalid cursor ${quote(cursor)}`);
  return key;
}

/** Builds a page from rows already in list order, given how to read each row's sort key and what was asked. */
export function toPage<T>(items: T[], totalCount: number, keyOf: (item: T) => string, asked: PageRequest): Page<T> {
  if (items.length === 0) {
    const position = asked.after ?? asked.before ?? HEAD_CURSOR;
    return { items, totalCount, startCursor: position, endCursor: position };
  }
  return { items, totalCount, startCursor: encodeCursor(keyOf(items[0]!)), endCursor: encodeCursor(keyOf(items[items.length - 1]!)) };
}
