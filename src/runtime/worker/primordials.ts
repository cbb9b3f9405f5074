// The built-ins the worker's own code calls, taken as this module loads, before any component code can replace them.
//
// Component code shares the worker's globals: a component that replaces `JSON.stringify` or `Array.prototype.push` must
// break only its own code, not the protocol that reports its runs and those of the account's other components (Node's
// own "primordials" do the same for Node's internals). Methods are "uncurried": `ArrayPrototypePush(list, item)` calls
// the original `push` through a bound original `call`, so neither a replaced method nor a replaced
// `Function.prototype.call` is ever looked up. Each is one call, as the method call it stands for.

import { types } from 'node:util';

const { apply, defineProperty, getPrototypeOf } = Reflect;
const { bind, call } = Function.prototype;

/** `fn` as a function taking its `this` as its first argument. */
function uncurryThis<T, A extends unknown[], R>(fn: (this: T, ...args: A) => R): (self: T, ...args: A) => R {
  return apply(bind, call, [fn]) as (self: T, ...args: A) => R;
}

export const ReflectApply = apply;
export const ReflectDefineProperty = defineProperty;
export const ReflectGetPrototypeOf = getPrototypeOf;
export const ObjectPrototype = Object.prototype;
export const ArrayPrototype = Array.prototype;

export const JSONStringify = JSON.stringify;
export const JSONParse = JSON.parse;

export const { entries: ObjectEntries, freeze: ObjectFreeze, hasOwn: ObjectHasOwn, keys: ObjectKeys } = Object;
export const { isArray: ArrayIsArray } = Array;
export const { isFinite: NumberIsFinite, isInteger: NumberIsInteger, isNaN: NumberIsNaN, isSafeInteger: NumberIsSafeInteger } = Number;
export const { min: MathMin } = Math;
export const { canParse: URLCanParse } = URL;
export const { isArrayBuffer: IsArrayBuffer, isUint8Array: IsUint8Array } = types;
export const { now: DateNow } = Date;
export const { byteLength: BufferByteLength, from: BufferFrom } = Buffer;
export const SafeStructuredClone = structuredClone;
export const SafePromise = Promise;
export const SafeMap = Map;
export const SafeSet = Set;
export const SafeError = Error;

export const ArrayPrototypePush = uncurryThis(Array.prototype.push) as <T>(list: T[], ...items: T[]) => number;
export const ArrayPrototypeShift = uncurryThis(Array.prototype.shift) as <T>(list: T[]) => T | undefined;
export const ArrayPrototypeSlice = uncurryThis(Array.prototype.slice) as <T>(list: readonly T[], start?: number, end?: number) => T[];
export const ArrayPrototypeMap = uncurryThis(Array.prototype.map) as <T, U>(list: readonly T[], fn: (item: T, index: number) => U) => U[];
export const ArrayPrototypeFilter = uncurryThis(Array.prototype.filter) as <T>(list: readonly T[], fn: (item: T) => boolean) => T[];
export const ArrayPrototypeFind = uncurryThis(Array.prototype.find) as <T>(list: readonly T[], fn: (item: T) => boolean) => T | undefined;
export const ArrayPrototypeIncludes = uncurryThis(Array.prototype.includes) as <T>(list: readonly T[], item: T) => boolean;
export const FunctionPrototypeBind = uncurryThis(Function.prototype.bind) as <F extends (...args: never[]) => unknown>(fn: F, self: unknown) => F;
export const MapPrototypeHas = uncurryThis(Map.prototype.has) as <K, V>(map: ReadonlyMap<K, V>, key: K) => boolean;
export const MapPrototypeGet = uncurryThis(Map.prototype.get) as <K, V>(map: ReadonlyMap<K, V>, key: K) => V | undefined;
export const MapPrototypeSet = uncurryThis(Map.prototype.set) as <K, V>(map: Map<K, V>, key: K, value: V) => Map<K, V>;
export const MapPrototypeDelete = uncurryThis(Map.prototype.delete) as <K, V>(map: Map<K, V>, key: K) => boolean;
export const MapPrototypeClear = uncurryThis(Map.prototype.clear) as <K, V>(map: Map<K, V>) => void;
export const MapPrototypeForEach = uncurryThis(Map.prototype.forEach) as <K, V>(map: ReadonlyMap<K, V>, fn: (value: V, key: K) => void) => void;
export const SetPrototypeAdd = uncurryThis(Set.prototype.add) as <T>(set: Set<T>, value: T) => Set<T>;
export const SetPrototypeHas = uncurryThis(Set.prototype.has) as <T>(set: ReadonlySet<T>, value: T) => boolean;
export const SetPrototypeForEach = uncurryThis(Set.prototype.forEach) as <T>(set: ReadonlySet<T>, fn: (value: T) => void) => void;
export const RegExpPrototypeExec = uncurryThis(RegExp.prototype.exec);
export const StringPrototypeSlice = uncurryThis(String.prototype.slice);
export const StringPrototypeCodePointAt = uncurryThis(String.prototype.codePointAt);
export const StringPrototypeIndexOf = uncurryThis(String.prototype.indexOf);
export const StringPrototypeToLowerCase = uncurryThis(String.prototype.toLowerCase);
export const StringPrototypeToUpperCase = uncurryThis(String.prototype.toUpperCase);
export const StringPrototypeTrim = uncurryThis(String.prototype.trim);
// Typed arrays' and ArrayBuffers' accessors sit on prototypes component code may redefine (harden.ts pins only `length`).
const TypedArrayPrototype = Reflect.getPrototypeOf(Uint8Array.prototype) as object;
const getter = (target: object, name: string) => uncurryThis(Reflect.getOwnPropertyDescriptor(target, name)!.get as (this: unknown) => number);
export const TypedArrayPrototypeGetByteLength = getter(TypedArrayPrototype, 'byteLength') as (view: Uint8Array) => number;
export const TypedArrayPrototypeGetByteOffset = getter(TypedArrayPrototype, 'byteOffset') as (view: Uint8Array) => number;
export const TypedArrayPrototypeGetBuffer = getter(TypedArrayPrototype, 'buffer') as unknown as (view: Uint8Array) => ArrayBuffer;
export const ArrayBufferPrototypeGetByteLength = getter(ArrayBuffer.prototype, 'byteLength') as (buffer: ArrayBuffer) => number;
export const PerformanceNow = FunctionPrototypeBind(performance.now, performance);

/** Whether `pattern` matches `text`: `test` looks `exec` up on the pattern, where component code could replace it. */
export function matches(pattern: RegExp, text: string): boolean {
  return RegExpPrototypeExec(pattern, text) !== null;
}

/**
 * A set of `values`, filled through the original `add`: `new Set(values)` looks `add` up on `Set.prototype` and walks
 * `values` with the array iterator, both of which component code could replace.
 */
export function safeSetOf<T>(values: readonly T[]): Set<T> {
  const set: Set<T> = new SafeSet();
  for (let i = 0; i < values.length; i++) SetPrototypeAdd(set, values[i]!);
  return set;
}

/** The code points in `text` (what `[...text].length` counts, without the string iterator component code could replace). */
function codePointCount(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    count++;
    if (StringPrototypeCodePointAt(text, i)! > 0xffff) i++;
  }
  return count;
}

/**
 * The code points in `text` when they are more than `max`, else undefined. A string of at most `max` UTF-16 units has
 * at most `max` code points, so only a longer one is counted (the checks of every emit's channel run this).
 */
export function codePointsOver(text: string, max: number): number | undefined {
  if (text.length <= max) return undefined;
  const count = codePointCount(text);
  return count > max ? count : undefined;
}

/** `text` up to its first line break (what `split('\n')[0]` gives, without a `split` component code could replace). */
export function firstLine(text: string): string {
  const end = StringPrototypeIndexOf(text, '\n');
  return end === -1 ? text : StringPrototypeSlice(text, 0, end);
}
