// Turns pino's JSON lines into one readable line each, for a person at a terminal (`--log-format pretty`).
import type { DestinationStream } from 'pino';

const LEVELS: Record<number, { name: string; color: string }> = {
  10: { name: 'TRACE', color: '\u001b[90m' },
  20: { name: 'DEBUG', color: '\u001b[36m' },
  30: { name: 'INFO ', color: '\u001b[32m' },
  40: { name: 'WARN ', color: '\u001b[33m' },
  50: { name: 'ERROR', color: '\u001b[31m' },
  60: { name: 'FATAL', color: '\u001b[35m' },
};
const RESET = '\u001b[0m';
/** Always on every line or shown in its own place: not repeated among the fields. */
const OMITTED = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'module', 'err']);

function value(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  return JSON.stringify(v);
}

/** One entry as `12:03:04.567 WARN  [module] message key=value …`, then an error's stack, indented. */
export function prettyLine(json: string, colors: boolean): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const level = LEVELS[Number(entry.level)] ?? { name: String(entry.level), color: '' };
  const time = typeof entry.time === 'number' ? new Date(entry.time).toISOString().slice(11, 23) : '';
  const parts = [time, colors ? `${level.color}${level.name}${RESET}` : level.name];
  if (entry.module !== undefined) parts.push(`[${String(entry.module)}]`);
  if (entry.msg !== undefined) parts.push(String(entry.msg));
  for (const [key, v] of Object.entries(entry)) if (!OMITTED.has(key) && v !== undefined) parts.push(`${key}=${value(v)}`);
  let line = parts.join(' ');
  const err = entry.err as { type?: string; message?: string; stack?: string } | undefined;
  if (err) line += `\n    ${(err.stack ?? `${err.type ?? 'Error'}: ${err.message ?? ''}`).split('\n').join('\n    ')}`;
  return `${line}\n`;
}

/** A pino destination that writes each entry pretty to `out` (standard output by default). */
export function prettyDestination(out: NodeJS.WritableStream = process.stdout, colors = (out as { isTTY?: boolean }).isTTY === true): DestinationStream {
  return { write: (chunk: string) => void out.write(prettyLine(chunk.trimEnd(), colors)) };
}
