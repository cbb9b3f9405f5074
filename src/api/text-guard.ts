// Refuses values no database stores as sent (model/storable-text.ts): NUL characters, unpaired UTF-16 surrogates, and
// JSON numbers past a double (read as Infinity).
import type { FastifyInstance } from 'fastify';
import { invalid } from '../model/errors.js';
import { flawIn } from '../model/storable-text.js';
import { shorten } from '../runtime/worker/quote.js';

/** Checks the named parts of every request the plugin serves. */
export function refuseUnstorableText(app: FastifyInstance, parts: Array<'params' | 'query' | 'body'>): void {
  app.addHook('preValidation', async (request) => {
    for (const part of parts) {
      const found = flawIn(request[part], part);
      if (found) throw invalid(`${shorten(found.where)} holds ${found.flaw}`);
    }
  });
}
