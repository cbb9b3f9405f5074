// What a data store write may hold (its key, its ttl, its value and the store's size), worded once: the worker throws
// these as a component's set() runs, and the server answers them to a record written over the API, so both say alike.
import { hasControlCharacter } from './control-characters.js';
import { type KeyProblem, keyProblem } from './key-rules.js';
import {
  MAX_DATA_STORE_BYTES,
  MAX_DATA_STORE_KEY_BYTES,
  MAX_DATA_STORE_KEY_CHARS,
  MAX_DATA_STORE_NAME_CHARS,
  MAX_DATA_STORE_TTL_SECONDS,
  MAX_DB_VALUE_BYTES,
} from './limits.js';
import { codePointsOver, NumberIsFinite, StringPrototypeIndexOf, StringPrototypeTrim } from './primordials.js';
import { quote } from './quote.js';

export type { KeyProblem as WriteProblem } from './key-rules.js';

// Characters here, as in every limit the README gives in characters, are code points (what JSON Schema's `maxLength`
// counts on the API's own fields): an emoji is one, though it takes two UTF-16 units.

/** Whether `name` may name a data store: 1 to 200 characters, not blank, without control characters (the server's and the worker's rule). */
export function isDataStoreName(name: string): boolean {
  return StringPrototypeTrim(name) !== '' && codePointsOver(name, MAX_DATA_STORE_NAME_CHARS) === undefined && !hasControlCharacter(name);
}

/** A data store key's length past its limit, as a problem, or undefined. */
export function dataStoreKeyLengthProblem(key: string): KeyProblem | undefined {
  const chars = codePointsOver(key, MAX_DATA_STORE_KEY_CHARS);
  if (chars === undefined) return undefined;
  return { kind: 'range', message: `data store keys may have at most ${MAX_DATA_STORE_KEY_CHARS} characters; this one has ${chars}` };
}

/** What is wrong with `key` as a data store key, or undefined: `type` for what it holds, `range` for its length. */
export function dataStoreKeyProblem(key: unknown): KeyProblem | undefined {
  if (typeof key !== 'string' || key === '') return { kind: 'type', message: 'data store keys must be non-empty strings' };
  const tooLong = dataStoreKeyLengthProblem(key);
  if (tooLong) return tooLong;
  if (StringPrototypeIndexOf(key, '\0') !== -1) return { kind: 'type', message: 'data store keys may not contain the NUL character' };
  return keyProblem(key, 'data store', MAX_DATA_STORE_KEY_BYTES);
}

/** What is wrong with a time to live in seconds (a positive finite number, or null/undefined for none), or undefined. */
export function dataStoreTtlProblem(ttl: unknown): KeyProblem | undefined {
  if (ttl === undefined || ttl === null) return undefined;
  if (typeof ttl !== 'number' || !NumberIsFinite(ttl) || ttl <= 0) {
    return { kind: 'type', message: `a data store ttl is a positive number of seconds (or null for none), not ${quote(ttl)}` };
  }
  // A longer one would overflow PostgreSQL's bigint expiry (past about 9e15 s) and fail the write there only; null says never.
  if (ttl > MAX_DATA_STORE_TTL_SECONDS) {
    return { kind: 'range', message: `a data store ttl may be at most ${MAX_DATA_STORE_TTL_SECONDS} seconds (100 years; null for none), not ${ttl}` };
  }
  return undefined;
}

/** A value of `size` bytes of JSON for `key` is past the limit on one value. */
export function valueTooLarge(key: string, size: number): string | undefined {
  return size > MAX_DB_VALUE_BYTES ? `a data store value may be at most ${MAX_DB_VALUE_BYTES} bytes of JSON; ${quote(key)} would be ${size}` : undefined;
}

/** The store `name` would hold more than its limit. */
export function storeTooLarge(name: string): string {
  return `data store ${quote(name)} may hold at most ${MAX_DATA_STORE_BYTES} bytes of JSON`;
}
