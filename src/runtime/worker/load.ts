// Loads a component's bundle in the worker, finds the exported component and describes it.
import { createRequire } from 'node:module';
import type { ComponentInfo, PropDescriptor } from '../types.js';
import { LoadFailure } from './failure.js';
import { isPlainObject, normalizeProps } from './props.js';

export type Component = Record<string, unknown>;

export interface LoadedComponent {
  component: Component;
  info: ComponentInfo;
  props: PropDescriptor[];
}

const DEDUPE = new Set(['unique', 'greatest', 'last']);
const HOOKS = ['deploy', 'activate', 'deactivate'] as const;
const require = createRequire(import.meta.url);
const loaded = new Map<string, LoadedComponent>();

/** `export default` arrives as `.default` of the CommonJS module the bundler produced; `module.exports = …` as itself. */
function exportedComponent(exports: unknown): Component {
  const candidate = isPlainObject(exports) && isPlainObject(exports.default) ? exports.default : exports;
  if (!isPlainObject(candidate) || Object.keys(candidate).length === 0) {
    throw new LoadFailure('no_component_exported', 'the module exports no component: use `module.exports = {…}` or `export default {…}`');
  }
  return candidate;
}

function describe(component: Component): LoadedComponent {
  const { name, version, key, type, description, dedupe, hooks, run } = component;
  if (typeof name !== 'string' || name.trim() === '') throw new LoadFailure('missing_name', 'the component has no `name` (a string)');
  if (typeof version !== 'string' || version.trim() === '') {
    throw new LoadFailure('missing_version', 'the component has no `version` (a string)');
  }
  if (dedupe !== undefined && (typeof dedupe !== 'string' || !DEDUPE.has(dedupe))) {
    throw new LoadFailure('load_failed', `dedupe must be "unique", "greatest" or "last", not ${JSON.stringify(dedupe)}`);
  }
  if (hooks !== undefined && !isPlainObject(hooks)) throw new LoadFailure('load_failed', 'hooks must be an object of functions');
  if (component.methods !== undefined && !isPlainObject(component.methods)) {
    throw new LoadFailure('load_failed', 'methods must be an object of functions');
  }
  const props = normalizeProps(component.props);
  const info: ComponentInfo = {
    name,
    version,
    props,
    hooks: {
      deploy: typeof hooks?.deploy === 'function',
      activate: typeof hooks?.activate === 'function',
      deactivate: typeof hooks?.deactivate === 'function',
    },
    hasRun: typeof run === 'function',
  };
  if (typeof key === 'string') info.key = key;
  if (type === 'action') info.type = type;
  if (typeof description === 'string') info.description = description;
  if (typeof dedupe === 'string') info.dedupe = dedupe as ComponentInfo['dedupe'];
  for (const hook of HOOKS) {
    if (hooks?.[hook] !== undefined && typeof hooks[hook] !== 'function') {
      throw new LoadFailure('load_failed', `hooks.${hook} must be a function`);
    }
  }
  return { component, info, props };
}

/** Requires the bundle once per worker; a failure is not cached, so a later call sees the same error again. */
export function loadComponent(artifactPath: string): LoadedComponent {
  const cached = loaded.get(artifactPath);
  if (cached) return cached;
  let exports: unknown;
  try {
    exports = require(artifactPath);
  } catch (error) {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    throw new LoadFailure('load_failed', `the component threw while loading: ${message}`);
  }
  const result = describe(exportedComponent(exports));
  loaded.set(artifactPath, result);
  return result;
}
