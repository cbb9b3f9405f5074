// How an error message quotes what the request or a component gave: JSON-quoted, and a long value cut short, so that
// a 400 KB cron or id does not come back whole in the error body (and the log line beside it). It lives with the
// worker, which may read only its own folder, so that the worker's messages quote a key as the server's do; it calls
// only the built-ins taken before component code runs (primordials.ts).
import { codePointsOver, JSONStringify, StringPrototypeCodePointAt, StringPrototypeSlice } from './primordials.js';

/** The most characters (code points) of a value an error message quotes. */
export const MAX_QUOTED = 100;

/**
 * The first `count` characters (code points) of `text`, all of it when shorter: a cut never splits a surrogate pair,
 * whose half alone neither database keeps as it was.
 */
export function firstCharacters(text: string, count: number): string {
  let end = 0;
  for (let taken = 0; taken < count && end < text.length; taken++) end += StringPrototypeCodePointAt(text, end)! > 0xffff ? 2 : 1;
  return end >= text.length ? text : StringPrototypeSlice(text, 0, end);
}

/** `text` whole when it is at most MAX_QUOTED characters, else its first MAX_QUOTED and how long it was. */
function cut(text: string, wrap: (head: string) => string): string {
  // Counted in code points, as every limit in characters.
  const points = codePointsOver(text, MAX_QUOTED);
  if (points === undefined) return wrap(text);
  return `${wrap(firstCharacters(text, MAX_QUOTED))}… (${points} characters)`;
}

/**
 * A value from the request as an error message quotes it: a string as JSON (`"abc"`), anything else as its JSON
 * text, either cut to its first 100 characters and followed by `… (N characters)` when longer.
 */
export function quote(value: unknown): string {
  if (typeof value === 'string') return cut(value, (head) => JSONStringify(head));
  let text: string;
  try {
    text = JSONStringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return cut(text, (head) => head);
}

/** Unquoted text from the request (a field path, a prop name) cut as `quote` cuts. */
export function shorten(text: string): string {
  return cut(text, (head) => head);
}
