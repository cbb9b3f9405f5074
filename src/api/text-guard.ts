// Refuses text no database stores as sent: NUL characters (PostgreSQL's text holds none, and no identifier or name
// needs one) and unpaired UTF-16 surrogates (which are not text: stored as U+FFFD on PostgreSQL, as sent on SQLite).
import type { FastifyInstance } from 'fastify';
import { invalid } from '../model/errors.js';

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** What is wrong with this text, or undefined. */
function flawOf(text: string): string | undefined {
  if (text.includes('\u0000')) return 'a NUL character (\\u0000), which no field accepts';
  if (UNPAIRED_SURROGATE.test(text)) return 'an unpaired UTF-16 surrogate, which is not text';
  return undefined;
}

/** The first string (or key) in `value` that is not storable text, named within `where`, with what is wrong. */
function flawIn(value: unknown, where: string): { where: string; flaw: string } | undefined {
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

/** Checks the named parts of every request the plugin serves. */
export function refuseUnstorableText(app: FastifyInstance, parts: Array<'params' | 'query' | 'body'>): void {
  app.addHook('preValidation', async (request) => {
    for (const part of parts) {
      const found = flawIn(request[part], part);
      if (found) throw invalid(`${found.where} holds ${found.flaw}`);
    }
  });
}
