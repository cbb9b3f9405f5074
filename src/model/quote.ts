// How an error message quotes what the request sent: JSON-quoted, and a long value cut short, so that a 400 KB cron or
// id does not come back whole in the error body (and the log line beside it).

/** The most characters (code points) of a value an error message quotes. */
export const MAX_QUOTED = 100;

/** `text` whole when it is at most MAX_QUOTED characters, else its first MAX_QUOTED and how long it was. */
function cut(text: string, wrap: (head: string) => string): string {
  // Counted in code points, so that a cut never splits a surrogate pair; the short path avoids the array.
  if (text.length <= MAX_QUOTED) return wrap(text);
  const points = Array.from(text);
  if (points.length <= MAX_QUOTED) return wrap(text);
  return `${wrap(points.slice(0, MAX_QUOTED).join(''))}… (${points.length} characters)`;
}

/**
 * A value from the request as an error message quotes it: a string as JSON (`"abc"`), anything else as its JSON
 * text, either cut to its first 100 characters and followed by `… (N characters)` when longer.
 */
export function quote(value: unknown): string {
  if (typeof value === 'string') return cut(value, (head) => JSON.stringify(head));
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return cut(text, (head) => head);
}

/** Unquoted text from the request (a field path, a prop name) cut as `quote` cuts. */
export function shorten(text: string): string {
  return cut(text, (head) => head);
}
