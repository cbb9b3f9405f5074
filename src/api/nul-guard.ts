// Refuses text holding NUL characters: PostgreSQL cannot store them in text, and no identifier or name needs one.
import type { FastifyInstance } from 'fastify';
import { invalid } from '../model/errors.js';

/** The name of the first string (or key) in `value` that holds a NUL character, found within `where`. */
function nulIn(value: unknown, where: string): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? where : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, child] of Object.entries(value)) {
    if (key.includes('\u0000')) return where;
    const found = nulIn(child, Array.isArray(value) ? `${where}[${key}]` : `${where}.${key}`);
    if (found) return found;
  }
  return undefined;
}

/** Checks the named parts of every request the plugin serves. */
export function refuseNulCharacters(app: FastifyInstance, parts: Array<'params' | 'query' | 'body'>): void {
  app.addHook('preValidation', async (request) => {
    for (const part of parts) {
      const found = nulIn(request[part], part);
      if (found) throw invalid(`${found} holds a NUL character (\\u0000), which no field accepts`);
    }
  });
}
