// Turns component data into JSON strictly, so data that JSON would silently mangle is refused where it is produced.
import {
  ArrayIsArray,
  ArrayPrototype,
  BufferByteLength,
  firstLine,
  JSONParse,
  JSONStringify,
  matches,
  ObjectHasOwn,
  ObjectKeys,
  ObjectPrototype,
  ReflectGetPrototypeOf,
} from './primordials.js';
import { quote } from './quote.js';

export interface JsonCopy {
  /** The data as JSON text (what its size is measured on). */
  json: string;
  /** A fresh copy, so later mutation by the component cannot change what was recorded. */
  value: unknown;
}

/**
 * Functions, symbols and BigInts anywhere, cycles, and `undefined` at the top level are refused with a
 * TypeError naming `what`; `undefined` inside an object is dropped, as JSON does.
 */
export function jsonCopy(value: unknown, what: string): JsonCopy {
  if (value === undefined) throw new TypeError(`${what} is not JSON-serialisable: undefined`);
  let json: string | undefined;
  try {
    json = JSONStringify(value, (key, v: unknown) => {
      if (typeof v === 'function' || typeof v === 'symbol') {
        throw new TypeError(`a ${typeof v}${key === '' ? '' : ` at key ${quote(key)}`}`);
      }
      return v;
    });
  } catch (error) {
    const reason = error instanceof Error ? firstLine(error.message) : String(error);
    throw new TypeError(`${what} is not JSON-serialisable: ${reason}`);
  }
  if (json === undefined) throw new TypeError(`${what} is not JSON-serialisable`);
  return { json, value: JSONParse(json) };
}

/**
 * A high surrogate not followed by a low one, or a low one not preceded by a high one. model/storable-text.ts has its
 * twin: the worker cannot import the server's modules.
 */
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether `text` holds an unpaired UTF-16 surrogate: neither database keeps one as sent (U+FFFD on PostgreSQL, other bytes on SQLite). */
export function hasUnpairedSurrogate(text: string): boolean {
  return matches(UNPAIRED_SURROGATE, text);
}

export function jsonBytes(json: string): number {
  return BufferByteLength(json, 'utf8');
}

/**
 * The bytes an emitted event takes where it is stored and listed: its JSON, with its `id` and `summary` as text. They
 * count against the same limits as the event, or a summary of any size would ride on a small event.
 */
export function emitBytes(eventJsonBytes: number, meta: { id?: string | number | undefined; summary?: string | undefined }): number {
  const id = typeof meta.id === 'string' ? BufferByteLength(meta.id, 'utf8') : 0;
  return eventJsonBytes + id + (meta.summary === undefined ? 0 : BufferByteLength(meta.summary, 'utf8'));
}

/** Whether `JSON.stringify` would call a `toJSON` component code put where the worker's plain objects and arrays inherit it. */
function toJsonReachable(): boolean {
  return ObjectHasOwn(ObjectPrototype, 'toJSON') || ObjectHasOwn(ArrayPrototype, 'toJSON') || ReflectGetPrototypeOf(ArrayPrototype) !== ObjectPrototype;
}

/** JSON text of plain data, written without looking up `toJSON` (objects by their own keys, arrays by index). */
function plainJsonText(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSONStringify(value) ?? 'null';
  if (ArrayIsArray(value)) {
    let out = '[';
    for (let index = 0; index < value.length; index++) out += `${index === 0 ? '' : ','}${plainJsonText(value[index])}`;
    return `${out}]`;
  }
  const object = value as Record<string, unknown>;
  const keys = ObjectKeys(object);
  let out = '{';
  for (let index = 0; index < keys.length; index++) {
    const item = object[keys[index]!];
    if (item !== undefined) out += `${out === '{' ? '' : ','}${JSONStringify(keys[index]!)}:${plainJsonText(item)}`;
  }
  return `${out}}`;
}

/**
 * The JSON text of a message the worker sends, or of what it measures: plain data the worker built (a prop's options,
 * whose limits the server does not check again). A `toJSON` that component code put on `Object.prototype` (or
 * `Array.prototype`) would be called on every object in it and could rewrite the answer, and every later one in the
 * worker (another component's), so once there is one the text is written without it; until then `JSON.stringify`
 * does it at full speed. Run outcomes still go through JSON.stringify: the server checks each reported call again.
 */
export function messageJson(message: unknown): string {
  return toJsonReachable() ? plainJsonText(message) : JSONStringify(message)!;
}
