// Tells whether component code changed the built-in prototypes the account's other components and the worker share.
//
// Component code runs in the globals it shares with the account's other components: a `toJSON`, `then` or setter it
// adds to Object.prototype (or any getter on a prototype the worker's holders and the next component's values
// inherit from) would rewrite their calls. Rather than make every object of every later call immune, the worker says
// so once such a change is made, and the server retires the worker after the call (WorkerProcess.spoiled): a
// component may fool itself, never the next one. Replacing an existing method of the other prototypes (a data
// property that stays one) is not counted: the worker calls its own copies (primordials.ts), and tests rely on a
// worker surviving it (replaced-builtins-effects.test.ts). Nor is a new static on a constructor (a polyfill's
// `Promise.withResolvers`). The call that ends with a change is told so in its logs, with what changed.

import type { Send } from './harden.js';
import { JSONStringify, ReflectApply } from './primordials.js';

const { getOwnPropertyDescriptor, getPrototypeOf, isExtensible, ownKeys } = Reflect;
const SymbolPrototypeToString = Symbol.prototype.toString;

/**
 * The constructors among the keyed built-ins, by name: a string key added to one of them (a polyfill's
 * `Promise.withResolvers` or `Object.groupBy`) is allowed, since nothing looks a new static up unasked, and the worker
 * calls its own copies of those it uses. `Error.prepareStackTrace` is the exception: V8 calls it for every later stack.
 */
const CONSTRUCTORS: ReadonlyArray<readonly [string, object]> = [
  ['Object', Object],
  ['Array', Array],
  ['Function', Function],
  ['Promise', Promise],
  ['Error', Error],
];
const UNASKED_STATIC = 'prepareStackTrace';

/**
 * Built-ins whose own keys (added, removed or reordered), prototype and extensibility must stay as at start: those the
 * worker's own values and messages (null-prototype holders aside) inherit from or go through, and the constructors
 * whose statics an `await` or the worker reaches. A key added elsewhere (String.prototype, Map.prototype, …) reaches only
 * code that asks for it, and listing every prototype's keys cost 52–65 µs a request (BENCHMARKS.md, session 32).
 */
const KEYED: ReadonlyArray<readonly [string, object]> = [
  ...CONSTRUCTORS,
  ['Array.prototype', Array.prototype],
  ['Error.prototype', Error.prototype],
  ['the array iterators’ prototype', getPrototypeOf([][Symbol.iterator]()) as object],
  ['the iterators’ prototype', getPrototypeOf(getPrototypeOf([][Symbol.iterator]()) as object) as object],
  ['the async functions’ prototype', getPrototypeOf(async () => {}) as object],
];

/**
 * Prototypes whose every own property must also keep its descriptor: the worker's own holders, functions and promises
 * inherit from them, so even a replaced accessor or method there reaches the worker (an `await` looks up a promise's
 * `constructor`, Node's internals call `Function.prototype.apply`). Object.prototype comes first: its keys are checked
 * before any descriptor is read, so a descriptor's missing `get` or `value` finds nothing added there.
 */
const DESCRIBED: ReadonlyArray<readonly [string, object]> = [
  ['Object.prototype', Object.prototype],
  ['Function.prototype', Function.prototype],
  ['Promise.prototype', Promise.prototype],
];

interface Shape {
  name: string;
  target: object;
  proto: object | null;
  extensible: boolean;
  keys: (string | symbol)[];
  /** New string keys are allowed (the constructors): the recorded keys need only stay, in their order. */
  staticsMayGrow: boolean;
  /** Keys whose descriptors must stay too: every key of DESCRIBED targets, Error's `prepareStackTrace`. */
  describedKeys?: (string | symbol)[];
  /** Per described key: value or getter, setter, and the flags packed in one number. */
  described?: unknown[];
}

let shapes: Shape[] = [];

function flags(descriptor: PropertyDescriptor): number {
  return (descriptor.writable ? 1 : 0) | (descriptor.enumerable ? 2 : 0) | (descriptor.configurable ? 4 : 0) | (descriptor.get || descriptor.set ? 8 : 0);
}

function describe(target: object, keys: (string | symbol)[]): unknown[] {
  const described: unknown[] = [];
  for (let i = 0; i < keys.length; i++) {
    const descriptor = getOwnPropertyDescriptor(target, keys[i]!)!;
    described[described.length] = descriptor.get ?? descriptor.value;
    described[described.length] = descriptor.set;
    described[described.length] = flags(descriptor);
  }
  return described;
}

/** Records the shapes to compare with; called once, after the worker's own changes and before any component code. */
export function recordPristineBuiltins(): void {
  const recorded: Shape[] = [];
  const shapeOf = ([name, target]: readonly [string, object], staticsMayGrow: boolean): Shape => {
    return { name, target, proto: getPrototypeOf(target), extensible: isExtensible(target), keys: ownKeys(target), staticsMayGrow };
  };
  const withDescriptors = (shape: Shape, keys: (string | symbol)[]): Shape => {
    shape.describedKeys = keys;
    shape.described = describe(shape.target, keys);
    return shape;
  };
  for (const entry of DESCRIBED) {
    const shape = shapeOf(entry, false);
    recorded[recorded.length] = withDescriptors(shape, shape.keys);
  }
  for (let i = 0; i < KEYED.length; i++) recorded[recorded.length] = shapeOf(KEYED[i]!, i < CONSTRUCTORS.length);
  // Node defines Error.prepareStackTrace itself: a new value there, not a new key, is what reaches every later stack.
  const error = recorded.find((shape) => shape.target === Error)!;
  if (Object.hasOwn(Error, UNASKED_STATIC)) withDescriptors(error, [UNASKED_STATIC]);
  shapes = recorded;
}

function keyName(key: string | symbol): string {
  return typeof key === 'symbol' ? `[${ReflectApply(SymbolPrototypeToString, key, []) as string}]` : JSONStringify(key);
}

/** How `now` differs from the recorded `then`, or undefined; with `staticsMayGrow`, new string keys are not a difference. */
function keysChange(now: (string | symbol)[], then: (string | symbol)[], staticsMayGrow: boolean): string | undefined {
  let matched = 0;
  for (let i = 0; i < now.length; i++) {
    const key = now[i]!;
    if (matched < then.length && key === then[matched]) matched++;
    else if (!staticsMayGrow || typeof key !== 'string' || key === UNASKED_STATIC) return `gained ${keyName(key)}`;
  }
  if (matched < then.length) return `lost or reordered ${keyName(then[matched]!)}`;
  return undefined;
}

/** The first change found to a recorded built-in (a key gained, lost or reordered, its prototype, extensibility or a DESCRIBED descriptor), or undefined. */
function builtinsChange(): string | undefined {
  for (let s = 0; s < shapes.length; s++) {
    const { name, target, proto, extensible, keys, staticsMayGrow, describedKeys, described } = shapes[s]!;
    if (getPrototypeOf(target) !== proto) return `${name} got another prototype`;
    if (isExtensible(target) !== extensible) return `${name} was made non-extensible`;
    const now = ownKeys(target);
    const changed = keysChange(now, keys, staticsMayGrow);
    if (changed !== undefined) return `${name} ${changed}`;
    if (describedKeys === undefined || described === undefined) continue;
    for (let i = 0, d = 0; i < describedKeys.length; i++, d += 3) {
      const descriptor = getOwnPropertyDescriptor(target, describedKeys[i]!)!;
      if ((descriptor.get ?? descriptor.value) !== described[d] || descriptor.set !== described[d + 1] || flags(descriptor) !== described[d + 2]) {
        return `${name}'s ${keyName(describedKeys[i]!)} was redefined`;
      }
    }
  }
  return undefined;
}

/** The change found, once one is: the worker is spoiled for good, and is not checked again. */
let change: string | undefined;
let told = false;

/**
 * Checks the built-ins for the call about to end and, the first time a change shows, returns the line its logs get: the
 * cause of the new worker the account's next call starts in, which a module that polyfills as it loads pays on every call.
 */
export function builtinsChangeWarning(): string | undefined {
  if (change !== undefined) return undefined;
  change = builtinsChange();
  if (change === undefined) return undefined;
  return `tributary: built-ins the account's components share were changed by this call or code before it (${change}), so the worker that ran it is replaced and the account's next call starts a new one; code that changes them as its module loads starts a new worker for every call`;
}

/** Tells the server of a change builtinsChangeWarning found, once: called after it, before the request's last message. */
export function reportSpoiled(send: Send): void {
  if (change === undefined || told) return;
  told = true;
  send({ t: 'spoiled' });
}

/**
 * Checks, then tells the server, for requests that run no call (load, configure): just before the message that ends the
 * request, so the server hears it while that request is still the current one and retires the worker after it. Not
 * before every message: the check costs tens of microseconds, and a run may log ten thousand lines, each sent as logged.
 */
export function reportIfSpoiled(send: Send): void {
  if (change === undefined) change = builtinsChange();
  reportSpoiled(send);
}
