// Answers configure requests in the worker: one prop's choices from its `options()`, or the full prop list with what
// `additionalProps()` returns, with `this` bound as in `run` to the configured values. Built-ins come from
// primordials.ts, and arrays are walked by index: component code may have replaced the originals and the array iterator.
// What the async steps below hand on is wrapped in objects without a prototype: an async function resolving with an
// ordinary object or array looks up its `then`, which component code may have put on Object.prototype (and the
// account's next configure call would meet it too).
import type { ConfigureMessage } from '../protocol.js';
import type { PropDescriptor, PropOption } from '../types.js';
import { buildThis, type ComponentThis } from './context.js';
import { DataStores } from './data-store.js';
import { LoadFailure } from './failure.js';
import type { Send } from './harden.js';
import { call, toInvocationError } from './invoke.js';
import { jsonBytes, jsonCopy, messageJson } from './json.js';
import { MAX_COMPONENT_INFO_BYTES, MAX_OPTIONS, MAX_OPTIONS_BYTES } from './limits.js';
import { type Component, loadComponent, type LoadedComponent } from './load.js';
import {
  ArrayIsArray,
  ArrayPrototypeFind,
  ArrayPrototypeMap,
  JSONStringify,
  NumberIsFinite,
  ObjectEntries,
  ObjectHasOwn,
  ObjectKeys,
  ReflectApply,
  ReflectDefineProperty,
  StringPrototypeSlice,
} from './primordials.js';
import { describeValue, isPlainObject, normalizeProps } from './props.js';
import { CallScope } from './scope.js';

type Obj = Record<string, unknown>;

/** A question that has no answer (no such prop, no options): reported as its message alone, not as the component's error. */
class Unanswerable extends Error {}

/** What an async step resolves with: `then` is never looked up on it (see above). */
interface Held<T> {
  readonly held: T;
}

function hold<T>(held: T): Held<T> {
  return { __proto__: null, held } as unknown as Held<T>;
}

/** Runs component code as the scope's call and returns what it returned; anything that failed the call is thrown. */
async function callForResult(scope: CallScope, fn: () => unknown): Promise<Held<unknown>> {
  let result: unknown;
  await call(scope, async () => {
    result = await fn();
  });
  if (scope.failure !== undefined) throw scope.failure;
  return hold(result);
}

/** A plain object's shallow copy; an app (a propDefinition's first item) stays itself: propDefinitions name it by identity. */
function ownCopy(item: unknown): unknown {
  return isPlainObject(item) && item.type !== 'app' ? { ...item } : item;
}

/** A prop's own copy, its option lists and objects one level down included; apps and functions (async options) stay themselves. */
function copyProp(prop: unknown): unknown {
  if (!isPlainObject(prop) || prop.type === 'app') return prop;
  // Spread, then assigned only over its own keys: a setter component code put on Object.prototype under a field's name
  // (`type`, `label`) would take an assignment of a key the copy does not have yet.
  const copy: Obj = { ...prop };
  const entries = ObjectEntries(prop);
  for (let index = 0; index < entries.length; index++) {
    const value = entries[index]![1];
    copy[entries[index]![0]] = ArrayIsArray(value) ? ArrayPrototypeMap(value, ownCopy) : ownCopy(value);
  }
  return copy;
}

/** The component's declared props, plus what `additionalProps()` returns for the configured values (undefined: it has none). */
async function withAdditional(component: Component, self: ComponentThis, scope: CallScope): Promise<Held<Obj | undefined>> {
  const additional = component.additionalProps;
  if (typeof additional !== 'function') return hold(undefined);
  // The registry's components change the props they are given (`props.username.hidden = false`) and return {}: each
  // call gets its own copies, so that what one call changed is in its answer and never in the next call's.
  const declared: Obj = {};
  const entries = ObjectEntries(isPlainObject(component.props) ? component.props : {});
  for (let index = 0; index < entries.length; index++) {
    // Defined, not assigned (as Object.fromEntries does): a prop named "__proto__" must not become the prototype.
    const value = copyProp(entries[index]![1]);
    // The descriptor without a prototype: an inherited `get` or `value` would make it invalid.
    ReflectDefineProperty(declared, entries[index]![0], { __proto__: null, value, writable: true, enumerable: true, configurable: true } as PropertyDescriptor);
  }
  const returned = (await callForResult(scope, () => ReflectApply(additional as (this: unknown, previous: Obj) => unknown, self, [declared]))).held;
  if (returned === undefined || returned === null) return hold({ ...declared });
  if (!isPlainObject(returned)) throw new TypeError(`additionalProps() must return an object of props, not ${describeValue(returned)}`);
  return hold({ ...declared, ...returned });
}

/** Static props, then additional ones; a prop that does not describe (an unknown type) fails the whole answer. */
async function fullProps(loaded: LoadedComponent, self: ComponentThis, scope: CallScope): Promise<Held<PropDescriptor[]>> {
  const all = (await withAdditional(loaded.component, self, scope)).held;
  if (all === undefined) return hold(loaded.props);
  let props: PropDescriptor[];
  try {
    props = normalizeProps(all);
  } catch (error) {
    if (error instanceof LoadFailure) throw new TypeError(`additionalProps() returned a prop that cannot be used: ${error.message}`);
    throw error;
  }
  // The same bound as a component's own description (load.ts): the API answers with all of them at once.
  const bytes = jsonBytes(messageJson(props));
  if (bytes > MAX_COMPONENT_INFO_BYTES)
    throw new RangeError(`the props with additionalProps() are ${bytes} bytes of JSON; they may be at most ${MAX_COMPONENT_INFO_BYTES}`);
  return hold(props);
}

/** What `options()` gave in place of a choice, and so left out: why it is none. */
interface NoChoice {
  readonly noChoice: string;
}

const CHOICE_SHAPES = 'a string, a finite number, a boolean or { label, value }';

function noChoice(reason: string): NoChoice {
  return { noChoice: reason };
}

/**
 * One choice as the API gives it: a plain value, or `{ label, value }` with a string label; or why it is none (null, a
 * sparse array's hole, NaN, an object without `value`, a value that is not JSON). Such an entry is left out, not the
 * whole list: an API's list with one null item among many still offers the others.
 */
function toOption(option: unknown, index: number): PropOption | NoChoice {
  if (typeof option === 'string' || typeof option === 'boolean' || (typeof option === 'number' && NumberIsFinite(option))) return option;
  // NaN is of type number: "not a number" would contradict "a finite number".
  if (typeof option === 'number') return noChoice(`option ${index} must be ${CHOICE_SHAPES}, not ${option}`);
  if (isPlainObject(option) && 'value' in option) {
    const given = option.value;
    let value: unknown = null;
    try {
      if (given !== undefined) value = jsonCopy(given, `the value of option ${index}`).value;
    } catch (error) {
      // jsonCopy throws only its own TypeError, saying what is not JSON (a function, a cycle, a BigInt).
      return noChoice((error as Error).message);
    }
    const label = typeof option.label === 'string' ? option.label : typeof value === 'string' ? value : JSONStringify(option.label ?? value);
    return { label, value };
  }
  const what = isPlainObject(option) ? 'an object without a value' : describeValue(option);
  return noChoice(`option ${index} must be ${CHOICE_SHAPES}, not ${what}`);
}

function isNoChoice(option: PropOption | NoChoice): option is NoChoice {
  return typeof option === 'object' && ObjectHasOwn(option, 'noChoice');
}

/** What `options()` returned, as the worker answers it: the choices, the context, and the entries that were none. */
interface Choices {
  options: PropOption[];
  context: Obj | null;
  unusable?: { count: number; reason: string };
}

/** What `options()` may return: an array, or `{ options, context }` (context: `{ nextPageToken }`, for the next page). */
function toOptions(returned: unknown): Choices {
  let list = returned;
  let context: unknown = null;
  if (isPlainObject(returned) && ArrayIsArray(returned.options)) {
    list = returned.options;
    context = returned.context ?? null;
  }
  if (!ArrayIsArray(list)) throw new TypeError(`options() must return an array, or { options, context }, not ${describeValue(returned)}`);
  if (list.length > MAX_OPTIONS) throw new RangeError(`options() may return at most ${MAX_OPTIONS} choices, not ${list.length}`);
  // By index, not map(): map skips the holes of a sparse array (["a", , "c"]), which would reach the server as a
  // message it refuses, ending the worker, instead of as an entry left out. Added by index: push is component code's to replace.
  const options: PropOption[] = [];
  let unusable = 0;
  let reason = '';
  for (let index = 0; index < list.length; index++) {
    const option = toOption(list[index], index);
    if (!isNoChoice(option)) options[options.length] = option;
    else if (unusable++ === 0) reason = StringPrototypeSlice(option.noChoice, 0, 1024);
  }
  if (context !== null && !isPlainObject(context)) {
    throw new TypeError(`the context options() returned must be an object such as { nextPageToken }, not ${describeValue(context)}`);
  }
  const copied = context === null ? null : (jsonCopy(context, 'the context options() returned').value as Obj);
  // Measured as it is sent: a `toJSON` on Object.prototype could make JSON.stringify's text of it short.
  const bytes = jsonBytes(messageJson({ options, context: copied }));
  if (bytes > MAX_OPTIONS_BYTES) throw new RangeError(`options() may return at most ${MAX_OPTIONS_BYTES} bytes of JSON, not ${bytes}`);
  const choices = { __proto__: null, options, context: copied } as unknown as Choices;
  if (unusable) choices.unusable = { count: unusable, reason };
  return choices;
}

/**
 * The prop's `options` and what it is called on: its own method with the component as `this`, or, through
 * `propDefinition: [app, name, inputValues]`, the app's with the app (and its `$auth`) as `this` and the input values
 * (an object, or a function of the configured props) among its arguments.
 */
function optionsOf(props: Obj, propName: string, self: ComponentThis): { options: unknown; thisArg: unknown; inputs: Obj } {
  const prop = ObjectHasOwn(props, propName) ? props[propName] : undefined;
  if (prop === undefined) throw new Unanswerable(`"${propName}" is not a prop of this component`);
  if (!isPlainObject(prop)) return { options: undefined, thisArg: self, inputs: {} };
  if (prop.options !== undefined || !ArrayIsArray(prop.propDefinition)) return { options: prop.options, thisArg: self, inputs: {} };
  // Indexed, not destructured: the array iterator is component code's to replace.
  const reference = prop.propDefinition as unknown[];
  const app = reference[0];
  const definitionName = reference[1];
  const inputValues = reference[2];
  const definitions = isPlainObject(app) && isPlainObject(app.propDefinitions) ? app.propDefinitions : {};
  const definition = typeof definitionName === 'string' && ObjectHasOwn(definitions, definitionName) ? definitions[definitionName] : undefined;
  const appPropName = ArrayPrototypeFind(ObjectKeys(props), (key) => props[key] === app);
  const inputs = typeof inputValues === 'function' ? ReflectApply(inputValues as (configured: unknown) => unknown, self, [self]) : inputValues;
  return {
    options: isPlainObject(definition) ? definition.options : undefined,
    thisArg: appPropName === undefined ? app : self[appPropName],
    inputs: isPlainObject(inputs) ? inputs : {},
  };
}

async function propOptions(loaded: LoadedComponent, what: Extract<ConfigureMessage['what'], { kind: 'options' }>, self: ComponentThis, scope: CallScope) {
  const declared = isPlainObject(loaded.component.props) ? loaded.component.props : {};
  // A prop that only `additionalProps()` declares has choices too; it is asked only when the name is not a static prop.
  const props = ObjectHasOwn(declared, what.prop) ? declared : ((await withAdditional(loaded.component, self, scope)).held ?? declared);
  const found = optionsOf(props, what.prop, self);
  if (ArrayIsArray(found.options)) return toOptions(found.options);
  if (typeof found.options !== 'function') throw new Unanswerable(`prop "${what.prop}" has no options`);
  const fn = found.options as (this: unknown, args: Obj) => unknown;
  const args: Obj = { ...found.inputs, page: what.page, prevContext: what.prevContext };
  if (what.query !== undefined) args.query = what.query;
  return toOptions((await callForResult(scope, () => ReflectApply(fn, found.thisArg, [args]))).held);
}

/**
 * Read as a run's thrown value is (toInvocationError): a fetch's cause added, the server's paths left out, and a value
 * whose fields or prototype throw when read (getters, proxies) reported as such; a throw here would end the worker.
 */
function messageOf(error: unknown): string {
  let isError: boolean;
  try {
    if (error instanceof Unanswerable) return error.message;
    isError = error instanceof Error;
  } catch {
    isError = false;
  }
  const read = toInvocationError(error);
  return isError ? `${read.name}: ${read.message}` : read.message;
}

export async function configure(request: ConfigureMessage, send: Send): Promise<void> {
  const scope = new CallScope('configure', 0);
  let loaded: LoadedComponent;
  try {
    loaded = loadComponent(request.artifactPath, request.asStep);
  } catch (error) {
    if (!(error instanceof LoadFailure)) throw error;
    send({ t: 'configure_failed', id: request.id, message: `the component no longer loads: ${error.message}` });
    return;
  }
  try {
    const stores = new DataStores(request.dataStores, true);
    const self = buildThis(loaded, { customResponse: false, auths: request.auths, stores }, request.props, scope, new Map(), () => undefined);
    if (request.what.kind === 'props') {
      send({ t: 'props', id: request.id, props: (await fullProps(loaded, self, scope)).held });
    } else {
      const { options, context, unusable } = await propOptions(loaded, request.what, self, scope);
      send(messageJson({ t: 'options', id: request.id, options, context, unusable }));
    }
  } catch (error) {
    send({ t: 'configure_failed', id: request.id, message: StringPrototypeSlice(messageOf(error), 0, 4096) });
  } finally {
    scope.closed = true;
  }
}
