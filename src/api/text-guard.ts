// Refuses values no database stores as sent (model/storable-text.ts): NUL characters, unpaired UTF-16 surrogates, and
// JSON numbers past a double (read as Infinity); and query parameters whose %-escapes are not UTF-8.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { invalid } from '../model/errors.js';
import { flawIn } from '../model/storable-text.js';
import { shorten } from '../runtime/worker/quote.js';

/** Checks the named parts of every request the plugin serves. */
export function refuseUnstorableText(app: FastifyInstance, parts: Array<'params' | 'query' | 'body'>): void {
  app.addHook('preValidation', async (request) => {
    // A change only: a read ignores what it does not know (a cache-buster), and a bad value of one it knows fails its schema.
    if (parts.includes('query') && request.method !== 'GET' && request.method !== 'HEAD') refuseUndecodableQuery(request);
    for (const part of parts) {
      const found = flawIn(request[part], part);
      if (found) throw invalid(`${shorten(found.where)} holds ${found.flaw}`);
    }
  });
}

/**
 * Refuses a query whose %-escapes are not UTF-8. Changes get it from the hook above; a read whose parameter names
 * what it reads (a data store record's key) calls it itself, so that it does not read some other key.
 */
export function refuseUndecodableQuery(request: FastifyRequest): void {
  const undecodable = undecodableQueryParameter(request.url);
  if (undecodable) {
    throw invalid(
      `query.${shorten(undecodable.name)} holds %-escapes that are not UTF-8 (${shorten(undecodable.raw)}): percent-encode the UTF-8 bytes of the text, and a % itself as %25`,
    );
  }
}

/** The text of a query name or value, undefined when its escapes are not UTF-8 or a `%` starts no escape. */
function decoded(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

/**
 * The first query parameter whose escapes decode to no UTF-8 (`%ff`, a lone surrogate `%ED%A0%80`, a cut `%E2%82`, a
 * `%` that starts no escape). The query parser keeps such a value as sent, every escape in it undecoded: `name=%ff`
 * was stored as the three characters "%ff", and `50%25 off 100%` as itself.
 */
function undecodableQueryParameter(url: string): { name: string; raw: string } | undefined {
  const start = url.indexOf('?');
  if (start < 0) return undefined;
  for (const pair of url.slice(start + 1).split('&')) {
    const equals = pair.indexOf('=');
    const rawName = equals < 0 ? pair : pair.slice(0, equals);
    const rawValue = equals < 0 ? '' : pair.slice(equals + 1);
    const name = decoded(rawName);
    if (name === undefined) return { name: rawName, raw: rawName };
    if (decoded(rawValue) === undefined) return { name, raw: rawValue };
  }
  return undefined;
}
