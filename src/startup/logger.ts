// The server's logger: JSON lines at the configured level, with secrets redacted wherever they might appear.
import pino, { type Logger } from 'pino';
import type { Config } from '../config.js';

/** Query parameters whose values are credentials: the API takes keys in a header only, but a client may send one here. */
const CREDENTIAL_PARAM = /key|token|secret|passw|auth|signature|sig$/i;

/** `url` with the values of its credential-looking query parameters replaced; everything else as received. */
export function redactedUrl(url: string): string {
  const at = url.indexOf('?');
  if (at < 0) return url;
  const pairs = url
    .slice(at + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq < 0) return pair;
      let name = pair.slice(0, eq);
      try {
        name = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {
        // A malformed escape is judged as written.
      }
      return CREDENTIAL_PARAM.test(name) ? `${pair.slice(0, eq)}=[redacted]` : pair;
    });
  return `${url.slice(0, at + 1)}${pairs.join('&')}`;
}

/** What Fastify's own serializer logs of a request (its "incoming request" line at debug), the URL redacted. */
interface LoggedRequest {
  method: string;
  url: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

/** `destination`: where the JSON lines go (standard output by default; tests read them). */
export function createLogger(config: Pick<Config, 'logLevel'>, destination?: pino.DestinationStream): Logger {
  const options = {
    level: config.logLevel,
    // Connected accounts' credentials and the `$auth` built from them, should anything ever log them whole.
    redact: {
      paths: ['req.headers.authorization', 'apiKey', 'api_key', 'secret', '*.secret', 'credentials', '*.credentials', 'auths', '*.auths'],
      censor: '[redacted]',
    },
    serializers: {
      req: (req: LoggedRequest) => ({
        method: req.method,
        url: redactedUrl(req.url),
        host: req.host,
        remoteAddress: req.ip,
        remotePort: req.socket?.remotePort,
      }),
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
