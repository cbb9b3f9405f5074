// Tells whether component code changed the built-in prototypes the account's other components and the worker share.
//
// Component code runs in the globals it shares with the account's other components: a `toJSON`, `then` or setter it
// adds to Object.prototype (or any getter on a prototype the worker's holders and the next component's values
// inherit from) would rewrite their calls. Rather than make every object of every later call immune, the worker says
// so once such a change is made, and the server retires the worker after the call (WorkerProcess.spoiled): a
// component may fool itself, never the next one. Replacing an existing method of the other prototypes (a data
// property that stays one) is not counted: the worker calls its own copies (primordials.ts), and tests rely on a
// worker surviving it (replaced-builtins-effects.test.ts).

import type { Send } from './harden.js';

const { getOwnPropertyDescriptor, getPrototypeOf, isExtensible, ownKeys } = Reflect;

/**
 * Built-ins whose own keys (added, removed or reordered), prototype and extensibility must stay as at start: those the
 * worker's own values and messages (null-prototype holders aside) inherit from or go through, and the constructors
 * whose statics an `await` or the worker reaches. A key added elsewhere (String.prototype, Map.prototype, …) reaches only
 * code that asks for it, and listing every prototype's keys cost 52–65 µs a request (BENCHMARKS.md, session 32).
 */
const KEYED: readonly object[] = [
  Object,
  Array,
  Function,
  Promise,
  Error,
  Array.prototype,
  Error.prototype,
  getPrototypeOf([][Symbol.iterator]()) as object,
  getPrototypeOf(getPrototypeOf([][Symbol.iterator]()) as object) as object,
  getPrototypeOf(async () => {}) as object,
];

/**
 * Prototypes whose every own property must also keep its descriptor: the worker's own holders, functions and promises
 * inherit from them, so even a replaced accessor or method there reaches the worker (an `await` looks up a promise's
 * `constructor`, Node's internals call `Function.prototype.apply`). Object.prototype comes first: its keys are checked
 * before any descriptor is read, so a descriptor's missing `get` or `value` finds nothing added there.
 */
const DESCRIBED: readonly object[] = [Object.prototype, Function.prototype, Promise.prototype];

interface Shape {
  target: object;
  proto: object | null;
  extensible: boolean;
  keys: (string | symbol)[];
  /** Per key, for DESCRIBED targets: value or getter, setter, and the flags packed in one number. */
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
  for (const target of DESCRIBED) {
    const keys = ownKeys(target);
    recorded[recorded.length] = { target, proto: getPrototypeOf(target), extensible: isExtensible(target), keys, described: describe(target, keys) };
  }
  for (const target of KEYED) recorded[recorded.length] = { target, proto: getPrototypeOf(target), extensible: isExtensible(target), keys: ownKeys(target) };
  shapes = recorded;
}

function sameKeys(now: (string | symbol)[], then: (string | symbol)[]): boolean {
  if (now.length !== then.length) return false;
  for (let i = 0; i < now.length; i++) if (now[i] !== then[i]) return false;
  return true;
}

/** Whether any recorded prototype lost or gained a key, changed its prototype or extensibility, or (DESCRIBED) a descriptor. */
export function builtinsChanged(): boolean {
  for (let s = 0; s < shapes.length; s++) {
    const { target, proto, extensible, keys, described } = shapes[s]!;
    if (getPrototypeOf(target) !== proto || isExtensible(target) !== extensible) return true;
    const now = ownKeys(target);
    if (!sameKeys(now, keys)) return true;
    if (described === undefined) continue;
    for (let i = 0, d = 0; i < keys.length; i++, d += 3) {
      const descriptor = getOwnPropertyDescriptor(target, keys[i]!)!;
      if ((descriptor.get ?? descriptor.value) !== described[d] || descriptor.set !== described[d + 1] || flags(descriptor) !== described[d + 2]) return true;
    }
  }
  return false;
}

let spoiled = false;

/**
 * Tells the server, once, that the worker's built-ins changed: called just before the message that ends each request,
 * so the server hears it while that call is still the current one and retires the worker after it. Not before every
 * message: the check costs tens of microseconds, and a run may log ten thousand lines, each sent as logged.
 */
export function reportIfSpoiled(send: Send): void {
  if (spoiled || !builtinsChanged()) return;
  spoiled = true;
  send({ t: 'spoiled' });
}
