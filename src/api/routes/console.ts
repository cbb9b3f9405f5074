// The web console at `/`: its page and its bundled script and stylesheet, with headers that keep the API key safe.
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { notFound } from '../../model/errors.js';
import { loadConsole } from '../console-assets.js';
import { quote } from '../../runtime/worker/quote.js';

/**
 * Scripts and styles from this origin only, no inline script and no eval: an injected `<script>` cannot run and read
 * the key from session storage. `connect-src 'self'` keeps the key from being sent anywhere but this API.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function secure(reply: FastifyReply): FastifyReply {
  return reply.headers({
    'content-security-policy': CONSOLE_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    'cross-origin-opener-policy': 'same-origin',
  });
}

/** What the console checks as the server does, told in the page (a `<meta>`: the CSP allows no inline script). */
export interface ConsoleSettings {
  /** `--min-timer-interval`: the timer field's `min` and its message say the same as a deploy's 422. */
  minTimerInterval: number;
}

export function consoleRoutes(settings: ConsoleSettings): FastifyPluginAsync {
  return async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();

    app.get('/', { schema: { hide: true } }, async (_request, reply) => {
      const bundle = await loadConsole();
      const html = bundle.html.replace('<!-- settings -->', `<meta name="tributary-min-timer-interval" content="${settings.minTimerInterval}">`);
      // Always revalidated: it names the current build's assets.
      return secure(reply).header('cache-control', 'no-cache').type('text/html; charset=utf-8').send(html);
    });

    app.get('/console/:file', { schema: { hide: true, params: Type.Object({ file: Type.String({ maxLength: 100 }) }) } }, async (request, reply) => {
      const asset = (await loadConsole()).assets.get(request.params.file);
      if (!asset) throw notFound(`console asset ${quote(request.params.file)}`);
      return secure(reply).header('cache-control', 'public, max-age=31536000, immutable').type(asset.contentType).send(asset.body);
    });
  };
}
