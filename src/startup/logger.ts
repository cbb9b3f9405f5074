// The server's logger: JSON lines at the configured level, with secrets redacted wherever they might appear.
import pino, { type Logger } from 'pino';
import type { Config } from '../config.js';

/** `destination`: where the JSON lines go (standard output by default; tests read them). */
export function createLogger(config: Pick<Config, 'logLevel'>, destination?: pino.DestinationStream): Logger {
  const options = {
    level: config.logLevel,
    // Connected accounts' credentials and the `$auth` built from them, should anything ever log them whole.
    redact: {
      paths: ['req.headers.authorization', 'apiKey', 'api_key', 'secret', '*.secret', 'credentials', '*.credentials', 'auths', '*.auths'],
      censor: '[redacted]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
