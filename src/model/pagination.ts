// Keyset pagination shared by every paginated list: newest first, opaque cursors that stay valid under inserts.
import { ServiceError } from './errors.js';

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
  startCursor: string | null;
  endCursor: string | null;
}

export function encodeCursor(key: string): string {
  return Buffer.from(key, 'utf8').toString('base64url');
}

/** Decodes a cursor and checks it with `isValidKey`; a malformed cursor is a 400, never a silent empty page. */
export function decodeCursor(cursor: string, isValidKey: (key: string) => boolean): string {
  const key = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  if (!key || !isValidKey(key)) throw new ServiceError('invalid_cursor', `invalid cursor "${cursor}"`);
  return key;
}

/** Builds a page from rows already in list order, given how to read each row's sort key. */
export function toPage<T>(items: T[], totalCount: number, keyOf: (item: T) => string): Page<T> {
  return {
    items,
    totalCount,
    startCursor: items.length ? encodeCursor(keyOf(items[0]!)) : null,
    endCursor: items.length ? encodeCursor(keyOf(items[items.length - 1]!)) : null,
  };
}
