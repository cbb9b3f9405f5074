// Values no database stores as sent: NUL characters (PostgreSQL's text holds none, and no identifier or name needs one),
// unpaired UTF-16 surrogates (which are not text: stored as U+FFFD on PostgreSQL, as sent on SQLite), and JSON numbers
// too large for a double (`1e400` parses as Infinity, which JSON writes as null). The API refuses them in a request
// (api/text-guard.ts); what it offers to be sent back (options()) leaves them out.

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The text with each unpaired surrogate replaced by U+FFFD (String.prototype.toWellFormed, which Node 20 lacks). */
export function wellFormed(text: string): string {
  return text.replace(new RegExp(UNPAIRED_SURROGATE.source, 'g'), '\uFFFD');
}

/** Any character either flaw starts from: most text has none, and one test of this settles it. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the NUL is what the check is for.
const SUSPECT = /[\u0000\uD800-\uDFFF]/;

/** What is wrong with this text, or undefined. */
export function flawOf(text: string): string | undefined {
  if (!SUSPECT.test(text)) return undefined;
  if (text.includes('\u0000')) return 'a NUL character (\\u0000), which no field accepts';
  if (UNPAIRED_SURROGATE.test(text)) return 'an unpaired UTF-16 surrogate, which is not text';
  return undefined;
}

/**
 * What a number past a double's range is: JSON.parse reads `1e400` as Infinity, and JSON.stringify writes that as null,
 * so a record or an event would keep null in its place, unsaid.
 */
const UNBOUNDED_NUMBER =
  'a number past the largest a JSON number may be (about 1.8e308: it reads as Infinity, and would be stored as null), which no field accepts';

/** The first string (or key) in `value` that is not storable text, or number past a double, named within `where`, with what is wrong. */
export function flawIn(value: unknown, where: string): { where: string; flaw: string } | undefined {
  const found = findFlaw(value);
  return found && { where: `${where}${found.path.reverse().join('')}`, flaw: found.flaw };
}

/**
 * The flaw and the path to it, innermost segment first. The path is built only for a flaw found: a body of 200,000
 * keys spent a third of a second naming each key's path on the way (BENCHMARKS.md, session 33).
 */
function findFlaw(value: unknown): { path: string[]; flaw: string } | undefined {
  if (typeof value === 'string') {
    const flaw = flawOf(value);
    return flaw ? { path: [], flaw } : undefined;
  }
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : { path: [], flaw: UNBOUNDED_NUMBER };
  if (typeof value !== 'object' || value === null) return undefined;
  const isArray = Array.isArray(value);
  const keys = Object.keys(value);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const keyFlaw = flawOf(key);
    if (keyFlaw) return { path: [], flaw: keyFlaw };
    const found = findFlaw((value as Record<string, unknown>)[key]);
    if (found) {
      found.path.push(isArray ? `[${key}]` : `.${key}`);
      return found;
    }
  }
  return undefined;
}
