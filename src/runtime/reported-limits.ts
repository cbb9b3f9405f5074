// Holds what a worker reports of its calls to the limits its runtime enforces, again, on the server's side of the channel.
import type { CallResult } from './protocol.js';
import type { InvocationRequest } from './types.js';
import {
  MAX_DATA_STORE_BYTES,
  MAX_DATA_STORE_KEY_BYTES,
  MAX_DATA_STORE_TTL_SECONDS,
  MAX_DB_BYTES_PER_CALL,
  MAX_DB_KEY_BYTES,
  MAX_DB_TOTAL_BYTES,
  MAX_DB_VALUE_BYTES,
  MAX_EMIT_BYTES_PER_CALL,
  MAX_EMITS_PER_CALL,
  MAX_EVENT_BYTES,
  MAX_LOG_CHARS_PER_CALL,
  MAX_LOG_LINE_CHARS,
  MAX_LOG_LINES_PER_CALL,
  MAX_STEP_BYTES_PER_CALL,
  MAX_STEP_SENDS_PER_CALL,
} from './worker/limits.js';
import { emitBytes } from './worker/json.js';
import { channelNameProblem, sseChannelProblem } from './worker/channel-rules.js';
import { dataStoreKeyLengthProblem, storeTooLarge, valueTooLarge } from './worker/data-store-rules.js';
import { keyProblem } from './worker/key-rules.js';
import { quote } from './worker/quote.js';

/** UTF-8 takes at most 3 bytes per UTF-16 unit: JSON text of this many units or fewer holds no value past `bytes`. */
function fitsSurely(textChars: number | undefined, bytes: number): boolean {
  return textChars !== undefined && textChars * 3 <= bytes;
}

function jsonSize(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}

/** An entry's size as the worker counts it: the key's UTF-8 bytes and the value's JSON. */
function entrySize(key: string, value: unknown): number {
  return Buffer.byteLength(key, 'utf8') + jsonSize(value);
}

/** The channels of a step's `$.send.emit()` and `$.send.sse()` calls, held to the rules the worker applies as they are made. */
function sendsProblem(sends: NonNullable<CallResult['outcome']['step']>['sends']): string | undefined {
  for (const { kind, payload } of sends) {
    if (kind !== 'emit' && kind !== 'sse') continue;
    const { name, channel } = (payload ?? {}) as { name?: unknown; channel?: unknown };
    if (kind === 'emit' && name !== undefined && name !== null) {
      if (typeof name !== 'string') return '$.send.emit() name (the channel) must be a string';
      const problem = channelNameProblem(name, '$.send.emit() name', 'workflow');
      if (problem) return problem;
    }
    if (kind === 'sse') {
      if (typeof channel !== 'string' || channel === '') return '$.send.sse() needs a channel (a non-empty string)';
      const problem = sseChannelProblem(channel, '$.send.sse(): channel');
      if (problem) return problem;
    }
  }
  return undefined;
}

/**
 * Component code runs in the worker's process, so it can change what the worker's runtime reports (a patched
 * `JSON.stringify` rewrites a call's outcome on its way out): the limits on events, `$.service.db`, data stores, step
 * results and logs are checked again here, before anything is kept, or a tenant could fill the database. One per
 * request: the totals (a db, a store) run on from one call to the next, as in the worker. Messages small enough that
 * no value in them can pass a size limit skip the measuring.
 */
export class ReportedLimits {
  private dbTotal: number | undefined;
  /** Sizes of the db entries written so far (key and value), by key. */
  private readonly dbEntries = new Map<string, number>();
  private readonly storeTotals = new Map<string, number>();
  private readonly storeEntries = new Map<string, Map<string, number>>();

  constructor(private readonly request: InvocationRequest) {}

  /** Why a call's report passes a limit (the message of the RangeError it fails with), or undefined; `textChars`: its message's length. */
  excess(result: CallResult, textChars: number | undefined): string | undefined {
    const { outcome } = result;
    return (
      this.emitsExcess(outcome.emits, textChars) ??
      this.logsExcess(outcome.logs) ??
      this.stepExcess(outcome.step, textChars) ??
      this.dbExcess(result.dbWrites, result.dbRemovals ?? [], textChars) ??
      this.dataStoresExcess(result.dataStores ?? [], textChars)
    );
  }

  private emitsExcess(emits: CallResult['outcome']['emits'], textChars: number | undefined): string | undefined {
    if (emits.length > MAX_EMITS_PER_CALL) return `one call may emit at most ${MAX_EMITS_PER_CALL} events`;
    for (const { name } of emits) {
      const problem = name === undefined ? undefined : channelNameProblem(name, '$emit name', 'source');
      if (problem) return problem;
    }
    if (fitsSurely(textChars, MAX_EVENT_BYTES)) return undefined;
    let total = 0;
    for (const emit of emits) {
      const bytes = emitBytes(jsonSize(emit.event), emit);
      if (bytes > MAX_EVENT_BYTES) return `the emitted event is ${bytes} bytes of JSON, id and summary; an event may be at most ${MAX_EVENT_BYTES} bytes`;
      total += bytes;
      if (total > MAX_EMIT_BYTES_PER_CALL) return `the events emitted by one call may total at most ${MAX_EMIT_BYTES_PER_CALL} bytes of JSON`;
    }
    return undefined;
  }

  /**
   * Also for the lines a call sends ahead of its outcome, one message a line: `earlierLines` and `earlierChars` count
   * those it sent before (checked then), so that each line is measured once rather than the call's whole output again.
   */
  logsExcess(logs: CallResult['outcome']['logs'], earlierLines = 0, earlierChars = 0): string | undefined {
    // The worker cuts a line past MAX_LOG_LINE_CHARS (adding a note) and drops lines past MAX_LOG_CHARS_PER_CALL (one note).
    if (earlierLines + logs.length > MAX_LOG_LINES_PER_CALL + 1) return `the log output of one call may be at most ${MAX_LOG_LINES_PER_CALL} lines`;
    const lineBound = MAX_LOG_LINE_CHARS + 100;
    let total = earlierChars;
    for (const { msg } of logs) {
      if (msg.length > lineBound) return `a log line may be at most ${MAX_LOG_LINE_CHARS} characters`;
      total += msg.length;
    }
    return total > MAX_LOG_CHARS_PER_CALL + lineBound ? `the log output of one call may be at most ${MAX_LOG_CHARS_PER_CALL} characters` : undefined;
  }

  private stepExcess(step: CallResult['outcome']['step'], textChars: number | undefined): string | undefined {
    if (!step) return undefined;
    if (step.sends.length > MAX_STEP_SENDS_PER_CALL) return `a step may call $.send at most ${MAX_STEP_SENDS_PER_CALL} times per call`;
    const problem = sendsProblem(step.sends);
    if (problem) return problem;
    if (fitsSurely(textChars, MAX_STEP_BYTES_PER_CALL)) return undefined;
    // The worker counts the values alone; their keys and the list around them are allowed for.
    const bound = MAX_STEP_BYTES_PER_CALL + 64 * (step.sends.length + Object.keys(step.exports).length) + 1024;
    return jsonSize(step) > bound
      ? `a step's return value, exports, sends and $.flow.exit() reason may total at most ${MAX_STEP_BYTES_PER_CALL} bytes of JSON per call`
      : undefined;
  }

  private dbExcess(writes: Record<string, unknown>, removals: string[], textChars: number | undefined): string | undefined {
    const keys = Object.keys(writes);
    if (!keys.length && !removals.length) return undefined;
    for (const key of [...keys, ...removals]) {
      const problem = keyProblem(key, '$.service.db', MAX_DB_KEY_BYTES);
      if (problem) return problem.message;
    }
    const sizes = keys.map((key) => [key, Buffer.byteLength(key, 'utf8'), jsonSize(writes[key])] as const);
    if (!fitsSurely(textChars, MAX_DB_VALUE_BYTES)) {
      let bytes = 0;
      for (const [key, , size] of sizes) {
        if (size > MAX_DB_VALUE_BYTES) return `a $.service.db value may be at most ${MAX_DB_VALUE_BYTES} bytes of JSON; ${quote(key)} would be ${size}`;
        bytes += size;
      }
      if (bytes > MAX_DB_BYTES_PER_CALL) return `one call may write at most ${MAX_DB_BYTES_PER_CALL} bytes of JSON to $.service.db`;
    }
    const db = this.request.db ?? {};
    this.dbTotal ??= Object.entries(db).reduce((sum, [key, value]) => sum + entrySize(key, value), 0);
    let total = this.dbTotal;
    const before = (key: string) => this.dbEntries.get(key) ?? (Object.hasOwn(db, key) ? entrySize(key, db[key]) : 0);
    for (const [key, keySize, size] of sizes) total += keySize + size - before(key);
    for (const key of removals) total -= before(key);
    if (total > MAX_DB_TOTAL_BYTES) return `a source's $.service.db may hold at most ${MAX_DB_TOTAL_BYTES} bytes of JSON`;
    this.dbTotal = total;
    for (const [key, keySize, size] of sizes) this.dbEntries.set(key, keySize + size);
    for (const key of removals) this.dbEntries.set(key, 0);
    return undefined;
  }

  private dataStoresExcess(changes: NonNullable<CallResult['dataStores']>, textChars: number | undefined): string | undefined {
    // Checked on an overlay of the keys this call touches, kept only when every change passes.
    const pending: Array<{ name: string; cleared: boolean; sizes: Map<string, number>; total: number }> = [];
    let written = 0;
    for (const change of changes) {
      const entries = this.entriesOf(change.name);
      const sizes = new Map<string, number>();
      const sizeOf = (key: string) => sizes.get(key) ?? (change.cleared ? 0 : (entries.get(key) ?? 0));
      let total = change.cleared ? 0 : this.storeTotals.get(change.name)!;
      for (const write of change.writes) {
        const problem = dataStoreKeyLengthProblem(write.key) ?? keyProblem(write.key, 'data store', MAX_DATA_STORE_KEY_BYTES);
        if (problem) return problem.message;
        if (typeof write.ttlSeconds === 'number' && write.ttlSeconds > MAX_DATA_STORE_TTL_SECONDS) {
          return `a data store ttl may be at most ${MAX_DATA_STORE_TTL_SECONDS} seconds (100 years; null for none), not ${write.ttlSeconds}`;
        }
        if (write.op === 'ttl') continue;
        total -= sizeOf(write.key);
        sizes.set(write.key, 0);
        if (write.op === 'delete') continue;
        const size = jsonSize(write.value);
        const tooLarge = fitsSurely(textChars, MAX_DB_VALUE_BYTES) ? undefined : valueTooLarge(write.key, size);
        if (tooLarge) return tooLarge;
        written += size;
        if (written > MAX_DB_BYTES_PER_CALL) return `one call may write at most ${MAX_DB_BYTES_PER_CALL} bytes of JSON to data stores`;
        const entry = entrySize(write.key, write.value);
        sizes.set(write.key, entry);
        total += entry;
      }
      if (total > MAX_DATA_STORE_BYTES) return storeTooLarge(change.name);
      pending.push({ name: change.name, cleared: change.cleared, sizes, total });
    }
    for (const { name, cleared, sizes, total } of pending) {
      const entries = this.entriesOf(name);
      if (cleared) entries.clear();
      for (const [key, size] of sizes) {
        if (size === 0) entries.delete(key);
        else entries.set(key, size);
      }
      this.storeTotals.set(name, total);
    }
    return undefined;
  }

  /** The sizes of a store's entries, measured from what the request was given the first time it is written. */
  private entriesOf(name: string): Map<string, number> {
    let entries = this.storeEntries.get(name);
    if (!entries) {
      const contents = this.request.dataStores?.find((store) => store.name === name)?.entries ?? [];
      entries = new Map(contents.map(([key, value]) => [key, entrySize(key, value)]));
      this.storeEntries.set(name, entries);
      let total = 0;
      for (const size of entries.values()) total += size;
      this.storeTotals.set(name, total);
    }
    return entries;
  }
}
