// Sends what components print through `console` to the log lines of the call that printed it.
import { format, inspect } from 'node:util';
import type { LogLine } from '../types.js';
import { ReflectApply } from './primordials.js';

type Sink = (k: LogLine['k'], msg: string) => void;

const LEVELS: Record<string, LogLine['k']> = { log: 'log', info: 'info', warn: 'warn', error: 'error', debug: 'debug', trace: 'debug' };

/** Replaces the console methods for the life of the worker; output outside any call goes nowhere. */
export function captureConsole(sink: Sink): void {
  const target = console as unknown as Record<string, unknown>;
  for (const [method, k] of Object.entries(LEVELS)) {
    target[method] = (...args: unknown[]) => sink(k, ReflectApply(format, undefined, args));
  }
  target.dir = (value: unknown, options?: object) => sink('log', inspect(value, options));
}
