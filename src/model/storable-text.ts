// Text no database stores as sent: NUL characters (PostgreSQL's text holds none, and no identifier or name needs one)
// and unpaired UTF-16 surrogates (which are not text: stored as U+FFFD on PostgreSQL, as sent on SQLite). The API
// refuses such text in a request (api/text-guard.ts); what it offers to be sent back (options()) leaves it out.

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The text with each unpaired surrogate replaced by U+FFFD (String.prototype.toWellFormed, which Node 20 lacks). */
export function wellFormed(text: string): string {
  return text.replace(new RegExp(UNPAIRED_SURROGATE.source, 'g'), '\uFFFD');
}

/** What is wrong with this text, or undefined. */
export function flawOf(text: string): string | undefined {
  if (text.includes('\u0000')) return 'a NUL character (\\u0000), which no field accepts';
  if (UNPAIRED_SURROGATE.test(text)) return 'an unpaired UTF-16 surrogate, which is not text';
  return undefined;
}

/** The first string (or key) in `value` that is not storable text, named within `where`, with what is wrong. */
export function flawIn(value: unknown, where: string): { where: string; flaw: string } | undefined {
  if (typeof value === 'string') {
    const flaw = flawOf(value);
    return flaw ? { where, flaw } : undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, child] of Object.entries(value)) {
    const flaw = flawOf(key);
    if (flaw) return { where, flaw };
    const found = flawIn(child, Array.isArray(value) ? `${where}[${key}]` : `${where}.${key}`);
    if (found) return found;
  }
  return undefined;
}
