// Holds the `$.export`s a running step call sent ahead of its outcome, checked against the step limits as they come.
import { type ExportMessage, ProtocolError } from './protocol.js';
import { MAX_STEP_BYTES_PER_CALL } from './worker/limits.js';

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}

/**
 * The exports of the latest step call that sent any, by name, until its outcome comes. A call whose worker stops
 * before that (a time limit, process.exit, out of memory) keeps them, as a failed call keeps the exports it reports:
 * to tell how far it got. The worker measures and refuses as `$.export` does (step.ts); an export it sends past those
 * rules is its code rewriting the worker, a ProtocolError, and is not kept.
 */
export class StreamedExports {
  private index = -1;
  /** A Map, so that an export named "__proto__" stays an ordinary name. */
  private values = new Map<string, { value: unknown; bytes: number }>();
  private bytes = 0;

  /** Takes exports of call `m.index`; `reported` calls have their outcomes already, of `count`. */
  take(m: ExportMessage, reported: number, count: number): void {
    if (m.index < reported || m.index >= count || m.index < this.index) throw new ProtocolError(`unexpected exports of event ${m.index}`);
    if (m.index !== this.index) {
      // A later call is running: the earlier one ended, and its outcome carries its exports.
      this.index = m.index;
      this.values = new Map();
      this.bytes = 0;
    }
    for (const name of m.removed) this.remove(name);
    for (const [name, value] of Object.entries(m.values)) this.set(name, value);
  }

  private remove(name: string): void {
    this.bytes -= this.values.get(name)?.bytes ?? 0;
    this.values.delete(name);
  }

  private set(name: string, value: unknown): void {
    if (name === '' || name === '$return_value') throw new ProtocolError(`an export may not be named ${JSON.stringify(name)}`);
    if (name === '$summary' && typeof value !== 'string') throw new ProtocolError('the export $summary must be a string');
    const previous = this.values.get(name)?.bytes ?? 0;
    // Counted as the worker counts it: the name's JSON and the value's.
    const bytes = jsonBytes(name) + jsonBytes(value);
    if (this.bytes - previous + bytes > MAX_STEP_BYTES_PER_CALL) {
      throw new ProtocolError(`a step's exports may total at most ${MAX_STEP_BYTES_PER_CALL} bytes of JSON per call`);
    }
    this.values.set(name, { value, bytes });
    this.bytes += bytes - previous;
  }

  /** The outcomes of the first `reported` calls came: those of an earlier call are let go. */
  settled(reported: number): void {
    if (this.index >= reported || this.values.size === 0) return;
    this.values = new Map();
    this.bytes = 0;
  }

  /** The exports call `index` made, if it sent any (undefined for another call, or one that took back all it made). */
  of(index: number): Record<string, unknown> | undefined {
    if (index !== this.index || this.values.size === 0) return undefined;
    // fromEntries defines each key as the object's own, "__proto__" too.
    return Object.fromEntries([...this.values].map(([name, { value }]) => [name, value]));
  }
}
