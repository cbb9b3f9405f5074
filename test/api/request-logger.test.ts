// Request loggers are made lazily: what a request logs at an enabled level carries its id, the rest costs nothing.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { lazyChildLoggerFactory } from '../../src/api/request-logger.js';

function serverLogger(level: string) {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines };
}

describe('request loggers', () => {
  it('write enabled levels with the request id, and drop the rest', () => {
    const { logger, lines } = serverLogger('warn');
    const log = lazyChildLoggerFactory(logger, { reqId: 'r-1' }, {});
    log.info({ a: 1 }, 'below the level');
    log.debug('below the level');
    expect(lines).toEqual([]);
    log.warn({ a: 2 }, 'kept');
    log.error(new Error('boom'));
    expect(lines.map(({ level, reqId, msg, a }) => ({ level, reqId, msg, a }))).toEqual([
      { level: 40, reqId: 'r-1', msg: 'kept', a: 2 },
      { level: 50, reqId: 'r-1', msg: 'boom', a: undefined },
    ]);
    expect((lines[1]!.err as { message: string }).message).toBe('boom');
  });

  it('follow the server logger and its own level, and make children with both bindings', () => {
    const { logger, lines } = serverLogger('info');
    const log = lazyChildLoggerFactory(logger, { reqId: 'r-2' }, {});
    expect(log.level).toBe('info');
    log.level = 'error';
    log.warn('now below the level');
    log.child({ part: 'x' }).error('from a child');
    expect(lines.map(({ reqId, part, msg }) => ({ reqId, part, msg }))).toEqual([{ reqId: 'r-2', part: 'x', msg: 'from a child' }]);
    expect(logger.level).toBe('info');
  });

  it('make a plain pino child when the route sets its own level', () => {
    const { logger } = serverLogger('warn');
    const log = lazyChildLoggerFactory(logger, { reqId: 'r-3' }, { level: 'debug' });
    expect(log.level).toBe('debug');
    expect(typeof (log as unknown as { bindings(): unknown }).bindings).toBe('function');
  });
});
