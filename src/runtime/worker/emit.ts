// `$emit`: checks what a component emits and records it on the call, within the size limits.
import type { EmittedEvent } from '../types.js';
import { emitBytes, jsonBytes, jsonCopy } from './json.js';
import { channelNameProblem } from './channel-rules.js';
import { MAX_EMIT_BYTES_PER_CALL, MAX_EMITS_PER_CALL, MAX_EVENT_BYTES } from './limits.js';
import { isPlainObject } from './props.js';
import type { CallScope } from './scope.js';
import { ArrayPrototypePush, NumberIsFinite, NumberIsNaN, NumberIsSafeInteger } from './primordials.js';

export type Emit = (event?: unknown, meta?: unknown) => void;

/** A breach of a size limit fails the whole call, even if the component catches the error. */
function overLimit(scope: CallScope, message: string): never {
  const error = new RangeError(message);
  scope.fail(error);
  throw error;
}

/** Independent of `this`, so `const { $emit } = this` works too. */
export function makeEmit(scope: CallScope, dedupe: string | undefined): Emit {
  return function $emit(event?: unknown, meta?: unknown): void {
    if (scope.closed) return;
    if (meta !== undefined && meta !== null && !isPlainObject(meta)) {
      throw new TypeError('$emit metadata must be an object: { id, name, summary, ts }');
    }
    const { id, name, summary, ts } = (meta ?? {}) as Record<string, unknown>;
    let emittedId: EmittedEvent['id'];
    let emittedName: string | undefined;
    let emittedSummary: string | undefined;
    let emittedTs: number | undefined;
    if (id === undefined || id === null) {
      if (dedupe !== undefined) throw new Error(`$emit needs an id when dedupe is "${dedupe}"`);
    } else if (typeof id === 'string' || (typeof id === 'number' && NumberIsFinite(id))) {
      emittedId = id;
    } else {
      throw new TypeError('$emit id must be a string or a number');
    }
    if (name !== undefined && name !== null) {
      if (typeof name !== 'string') throw new TypeError('$emit name (the channel) must be a string');
      const problem = channelNameProblem(name, '$emit name', 'source');
      if (problem) throw new TypeError(problem);
      emittedName = name;
    }
    if (summary !== undefined && summary !== null) {
      if (typeof summary !== 'string') throw new TypeError('$emit summary must be a string');
      emittedSummary = summary;
    }
    // NaN is taken as no ts, as the reference service does: it is what `Date.parse()` gives for a value it cannot read,
    // and registry sources pass `ts: Date.parse(event.created)` where `created` is epoch seconds (Stripe's webhooks).
    if (ts !== undefined && ts !== null && !NumberIsNaN(ts)) {
      if (!NumberIsSafeInteger(ts)) throw new TypeError('$emit ts must be an integer (epoch milliseconds)');
      emittedTs = ts as number;
    }
    const copy = jsonCopy(event === undefined ? null : event, 'the emitted event');
    // Every field in the literal (JSON leaves out those undefined): assigned later, a field would meet any setter
    // component code put on Object.prototype under its name, and the event would be recorded without its id.
    const emitted: EmittedEvent = { event: copy.value, id: emittedId, name: emittedName, summary: emittedSummary, ts: emittedTs };
    const bytes = emitBytes(jsonBytes(copy.json), emitted);
    if (bytes > MAX_EVENT_BYTES) {
      overLimit(scope, `the emitted event is ${bytes} bytes of JSON, id and summary; an event may be at most ${MAX_EVENT_BYTES} bytes`);
    }
    if (scope.emitBytes + bytes > MAX_EMIT_BYTES_PER_CALL) {
      overLimit(scope, `the events emitted by one call may total at most ${MAX_EMIT_BYTES_PER_CALL} bytes of JSON`);
    }
    if (scope.emits.length >= MAX_EMITS_PER_CALL) overLimit(scope, `one call may emit at most ${MAX_EMITS_PER_CALL} events`);
    scope.emitBytes += bytes;
    ArrayPrototypePush(scope.emits, emitted);
  };
}
