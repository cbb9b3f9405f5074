// Request loggers: the child logger that carries a request's id is made only when the request logs something.
import { type FastifyBaseLogger, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type LogFn = FastifyBaseLogger['info'];

/**
 * Fastify gives every request a child of the server's logger. pino takes microseconds to make one, paid by every
 * ingress request although at the default level most requests log nothing; this makes it on the first call at an
 * enabled level. Calls below the level cost one check.
 */
class LazyChildLogger implements FastifyBaseLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger & { isLevelEnabled(level: string): boolean },
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get real(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.options));
  }

  private write(level: Level, args: Parameters<LogFn>): void {
    if (!this.made && !this.parent.isLevelEnabled(level)) return;
    const real = this.real;
    (real[level] as (...a: unknown[]) => void).apply(real, args);
  }

  // Methods on the prototype, not closures per instance: a request would otherwise pay for six of them.
  fatal(...args: Parameters<LogFn>): void {
    this.write('fatal', args);
  }
  error(...args: Parameters<LogFn>): void {
    this.write('error', args);
  }
  warn(...args: Parameters<LogFn>): void {
    this.write('warn', args);
  }
  info(...args: Parameters<LogFn>): void {
    this.write('info', args);
  }
  debug(...args: Parameters<LogFn>): void {
    this.write('debug', args);
  }
  trace(...args: Parameters<LogFn>): void {
    this.write('trace', args);
  }
  silent(): void {}

  get level(): string {
    return this.made?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.real.level = level;
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real.child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: a lazy child, unless the route sets options of its own (a level, serializers). */
export function lazyChildLoggerFactory(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  const parent = logger as FastifyBaseLogger & { isLevelEnabled?(level: string): boolean };
  if (typeof parent.isLevelEnabled !== 'function' || Object.keys(options).length) return logger.child(bindings, options);
  return new LazyChildLogger(parent as FastifyBaseLogger & { isLevelEnabled(level: string): boolean }, bindings, options);
}

/** Fastify's request lines (incoming, completed, route not found) at debug instead of info; a failed response stays an error. */
export class DebugRequestLines extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, _request: FastifyRequest, reply: FastifyReply): void {
    if (error) reply.log.error({ res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }

  override routeNotFound(request: FastifyRequest): void {
    request.log.debug(`Route ${request.raw.method}:${request.raw.url} not found`);
  }
}
