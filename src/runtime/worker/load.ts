// Loads a component's bundle in the worker, finds the exported component and describes it.
import { createRequire } from 'node:module';
import path from 'node:path';
import type { ComponentInfo, PropDescriptor } from '../types.js';
import { hasControlCharacter } from './control-characters.js';
import { LoadFailure } from './failure.js';
import { jsonBytes, messageJson } from './json.js';
import { MAX_COMPONENT_INFO_BYTES } from './limits.js';
import { withoutPackagePaths } from './package-paths.js';
import { describeValue, isPlainObject, normalizeProps } from './props.js';
import { MAX_QUOTED, quote } from './quote.js';
import {
  ArrayPrototypeFilter,
  ArrayPrototypeIncludes,
  ArrayPrototypeMap,
  matches,
  MapPrototypeGet,
  MapPrototypeSet,
  ObjectHasOwn,
  ObjectKeys,
  SafeMap,
  SafeSet,
  SetPrototypeAdd,
  SetPrototypeForEach,
  SetPrototypeHas,
  StringPrototypeIndexOf,
  StringPrototypeSlice,
  StringPrototypeTrim,
  safeSetOf,
} from './primordials.js';

export type Component = Record<string, unknown>;

export interface LoadedComponent {
  component: Component;
  info: ComponentInfo;
  props: PropDescriptor[];
}

const DEDUPE = new Set(['unique', 'greatest', 'last']);
const HOOKS = ['deploy', 'activate', 'deactivate'] as const;
/** What a code step that names neither is called (workflow steps are named by the workflow, not the code). */
const STEP_NAME = 'code step';
const STEP_VERSION = '0.0.0';
const require = createRequire(import.meta.url);
/** Keyed by `artifactPath` plus how it was loaded: the same bundle is described differently as a step. */
const loaded: Map<string, LoadedComponent> = new SafeMap();

/**
 * Pipedream code steps call `defineComponent(…)` without importing it. An identity function, fixed before any
 * component code runs so that one component of the account cannot change what the next one's call returns.
 */
export function installDefineComponent(): void {
  Object.defineProperty(globalThis, 'defineComponent', {
    value: function defineComponent<T>(definition: T): T {
      return definition;
    },
    writable: false,
    enumerable: false,
    configurable: false,
  });
}

/**
 * `export default` arrives as `.default` of the CommonJS module the bundler produced; `module.exports = …` as itself.
 * A default export that is an object is the component, even an empty one (`defineComponent({})`), whose missing
 * parts `describe` names; one that is not an object (`export default 5`) exports none.
 */
function exportedComponent(exports: unknown): Component {
  const exportsDefault = isPlainObject(exports) && ObjectHasOwn(exports, 'default');
  const candidate = exportsDefault ? exports.default : exports;
  if (isPlainObject(candidate) && (exportsDefault || ObjectKeys(candidate).length > 0)) return candidate;
  const what = exportsDefault ? `its default export is ${describeValue(candidate)}, not a component` : 'the module exports no component';
  throw new LoadFailure('no_component_exported', `${what}: use \`module.exports = {…}\` or \`export default {…}\``);
}

function isNamed(value: unknown): value is string {
  return typeof value === 'string' && StringPrototypeTrim(value) !== '';
}

/**
 * As a step, a component needs only `run`: a name or version that is missing (or not a non-empty string) takes
 * the step default, and the step is an action whatever its `type` says.
 */
function describe(component: Component, asStep: boolean): LoadedComponent {
  const { key, type, description, dedupe, hooks, run } = component;
  let { name, version } = component;
  if (asStep) {
    if (typeof run !== 'function') {
      throw new LoadFailure('load_failed', 'a step needs a `run` function: `export default defineComponent({ async run({ steps, $ }) { … } })`');
    }
    if (!isNamed(name)) name = STEP_NAME;
    if (!isNamed(version)) version = STEP_VERSION;
  }
  if (name === undefined) throw new LoadFailure('missing_name', 'the component has no `name` (a string)');
  if (version === undefined) throw new LoadFailure('missing_version', 'the component has no `version` (a string)');
  // Given but blank or not a string is not missing: each is said as what it is, as the key's is. Indexed, not
  // destructured in a for…of: the array iterator is component code's to replace.
  const named = [
    ['name', name],
    ['version', version],
    ['key', key],
  ] as const;
  for (let i = 0; i < named.length; i++) {
    const field = named[i]![0];
    const text = named[i]![1];
    if (text === undefined || isNamed(text)) continue;
    // A blank one is a string: "not a string" would send its author looking for the wrong mistake.
    const given = typeof text !== 'string' ? describeValue(text) : text === '' ? 'an empty string' : 'only whitespace';
    throw new LoadFailure('load_failed', `${field} must be a non-empty string, not ${given}`);
  }
  for (let i = 0; i < named.length; i++) {
    const field = named[i]![0];
    const text = named[i]![1];
    if (typeof text === 'string' && hasControlCharacter(text)) {
      throw new LoadFailure('load_failed', `${field} ${quote(text)} holds control characters, which names and keys may not`);
    }
  }
  if (!asStep && type !== undefined && type !== 'action' && type !== 'source') {
    throw new LoadFailure(
      'load_failed',
      `type must be "action", or "source" (the same as no type), not ${typeof type === 'string' ? quote(type) : describeValue(type)}`,
    );
  }
  if (run !== undefined && typeof run !== 'function') throw new LoadFailure('load_failed', `run must be a method, not ${describeValue(run)}`);
  if (dedupe !== undefined && (typeof dedupe !== 'string' || !SetPrototypeHas(DEDUPE, dedupe))) {
    throw new LoadFailure('load_failed', `dedupe must be "unique", "greatest" or "last", not ${quote(dedupe)}`);
  }
  if (hooks !== undefined && !isPlainObject(hooks)) throw new LoadFailure('load_failed', 'hooks must be an object of functions');
  if (component.methods !== undefined && !isPlainObject(component.methods)) {
    throw new LoadFailure('load_failed', 'methods must be an object of functions');
  }
  const props = normalizeProps(component.props);
  checkNames(props, component.methods, !asStep && type !== 'action');
  // Without a prototype, like each prop's description (props.ts): the fields below are assigned.
  const info = {
    __proto__: null,
    name,
    version,
    props,
    hooks: {
      deploy: typeof hooks?.deploy === 'function',
      activate: typeof hooks?.activate === 'function',
      deactivate: typeof hooks?.deactivate === 'function',
    },
    hasRun: typeof run === 'function',
  } as unknown as ComponentInfo;
  if (typeof key === 'string') info.key = key;
  if (asStep || type === 'action') info.type = 'action';
  if (typeof description === 'string') info.description = description;
  if (typeof dedupe === 'string') info.dedupe = dedupe as ComponentInfo['dedupe'];
  if (typeof component.additionalProps === 'function') info.additionalProps = true;
  for (let i = 0; i < HOOKS.length; i++) {
    const hook = HOOKS[i]!;
    if (hooks?.[hook] !== undefined && typeof hooks[hook] !== 'function') {
      throw new LoadFailure('load_failed', `hooks.${hook} must be a function`);
    }
  }
  // Measured as it is sent: a `toJSON` component code put on Object.prototype could make JSON.stringify's text short.
  const bytes = jsonBytes(messageJson(info));
  if (bytes > MAX_COMPONENT_INFO_BYTES) {
    throw new LoadFailure(
      'load_failed',
      `the component's description (name, version, key, description and props) is ${bytes} bytes of JSON; it may be at most ${MAX_COMPONENT_INFO_BYTES}`,
    );
  }
  return { component, info, props };
}

/** How code reads the member `name` of `this`, for messages: `this.token`, or `this["a b"]` quoted and cut. */
function memberOfThis(name: string): string {
  return matches(IDENTIFIER, name) && name.length <= MAX_QUOTED ? `this.${name}` : `this[${quote(name)}]`;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/**
 * `this` holds the props, then the methods, then (in a source) `$emit`: a method of a prop's name would hide the
 * configured value, and a prop or method named `$emit` would hide (or be hidden by) the emitter, each silently.
 */
function checkNames(props: PropDescriptor[], methods: unknown, isSource: boolean): void {
  const methodNames = isPlainObject(methods) ? ArrayPrototypeFilter(ObjectKeys(methods), (name) => typeof methods[name] === 'function') : [];
  const propNames = safeSetOf(ArrayPrototypeMap(props, (p) => p.name));
  for (let i = 0; i < methodNames.length; i++) {
    const name = methodNames[i]!;
    if (SetPrototypeHas(propNames, name)) {
      throw new LoadFailure(
        'load_failed',
        `prop ${quote(name)} and method ${quote(name)} share a name: ${memberOfThis(name)} would be the method, and the prop's value would be lost`,
        { prop: name },
      );
    }
  }
  if (!isSource) return;
  if (SetPrototypeHas(propNames, '$emit')) {
    throw new LoadFailure('load_failed', 'prop "$emit" has a reserved name: this.$emit is the function that emits events', { prop: '$emit' });
  }
  if (ArrayPrototypeIncludes(methodNames, '$emit')) {
    throw new LoadFailure('load_failed', 'method "$emit" has a reserved name: this.$emit is the function that emits events');
  }
}

/** `text` without any `part` in it. */
function withoutAll(text: string, part: string): string {
  let out = '';
  let from = 0;
  for (let at = StringPrototypeIndexOf(text, part); at !== -1; at = StringPrototypeIndexOf(text, part, from)) {
    out += StringPrototypeSlice(text, from, at);
    from = at + part.length;
  }
  return from === 0 ? text : out + StringPrototypeSlice(text, from);
}

/** The folders of the bundles this worker loaded (each with its trailing separator). */
const bundleDirs: Set<string> = new SafeSet();

/**
 * `text` (a stack or a message) naming the files of loaded bundles as `component.js:3:9` and those of npm packages
 * as `node_modules/axios/…`, not by where the server keeps them.
 */
export function withoutServerPaths(text: string): string {
  let out = text;
  SetPrototypeForEach(bundleDirs, (dir) => {
    out = withoutAll(out, dir);
  });
  return withoutPackagePaths(out);
}

/**
 * Requires the bundle once per worker; a failure is not cached, so a later call sees the same error again.
 * `asStep` describes it as a workflow step (LoadRequest.asStep).
 */
export function loadComponent(artifactPath: string, asStep = false): LoadedComponent {
  const cacheKey = `${asStep ? 'step' : 'component'}:${artifactPath}`;
  const cached = MapPrototypeGet(loaded, cacheKey);
  if (cached) return cached;
  let exports: unknown;
  SetPrototypeAdd(bundleDirs, path.dirname(artifactPath) + path.sep);
  try {
    exports = require(artifactPath);
  } catch (error) {
    throw new LoadFailure('load_failed', `the component threw while loading: ${thrown(error)}`);
  }
  let result: LoadedComponent;
  try {
    result = describe(exportedComponent(exports), asStep);
  } catch (error) {
    // A getter or a Proxy trap of the exported object runs component code while it is read.
    if (error instanceof LoadFailure) throw error;
    throw new LoadFailure('load_failed', `the component threw while its export was read: ${thrown(error)}`);
  }
  MapPrototypeSet(loaded, cacheKey, result);
  return result;
}

/** What component code threw, for a load failure's message. */
function thrown(error: unknown): string {
  let text: string;
  try {
    text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  } catch {
    text = 'a value that cannot be shown';
  }
  return withoutServerPaths(text);
}
