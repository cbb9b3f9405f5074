// Turns the many ways a component may declare its props into PropDescriptors, in declaration order.
import type { PropDescriptor } from '../types.js';
import { LoadFailure } from './failure.js';
import { jsonCopy } from './json.js';
import {
  ArrayIsArray,
  ArrayPrototypeFind,
  ArrayPrototypeMap,
  ArrayPrototypePush,
  NumberIsFinite,
  NumberIsSafeInteger,
  ObjectEntries,
  ObjectKeys,
  SetPrototypeHas,
  StringPrototypeTrim,
} from './primordials.js';
import { quote } from './quote.js';

const BASE_TYPES = ['app', 'boolean', 'integer', 'string', 'object'];
const KNOWN_TYPES: ReadonlySet<string> = new Set([
  ...BASE_TYPES,
  ...BASE_TYPES.filter((t) => t !== 'app').map((t) => `${t}[]`),
  '$.interface.http',
  '$.interface.timer',
  '$.service.db',
  // Any JSON value (the reference service's `type: "any"`), checked only for being JSON.
  'any',
  // One of the account's key-value stores, named by the configured value (the data_stores app's prop).
  'data_store',
  // A note shown to whoever configures the component (`alertType`, `content`); it takes no value.
  'alert',
]);

type Obj = Record<string, unknown>;

/** The boolean settings of a prop; `customResponse` only of an HTTP interface, where it is read. */
const FLAGS = ['optional', 'secret', 'hidden', 'disabled', 'useQuery', 'reloadProps', 'customResponse'] as const;

const ALERT_TYPES: ReadonlySet<string> = new Set(['info', 'neutral', 'warning', 'error']);

export function isPlainObject(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !ArrayIsArray(value);
}

/** What kind of value this is, for messages: `an object`, `an array`, `a number`, `null`, `undefined`. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (ArrayIsArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `${typeof value === 'undefined' ? '' : 'a '}${typeof value}`;
}

/** An app object, whether placed directly as a prop value or written out as `{ type: "app", app }`. */
export function isApp(value: unknown): value is Obj {
  return isPlainObject(value) && value.type === 'app';
}

/** Data meant for the API must be JSON; anything else (a function default, a cycle) is left out. */
function jsonOrUndefined(value: unknown): unknown {
  try {
    return value === undefined ? undefined : jsonCopy(value, 'a prop setting').value;
  } catch {
    return undefined;
  }
}

function staticOptions(options: unknown[]): PropDescriptor['options'] {
  const out: NonNullable<PropDescriptor['options']> = [];
  for (let i = 0; i < options.length; i++) {
    const option = options[i];
    if (typeof option === 'string' || typeof option === 'number' || typeof option === 'boolean') {
      ArrayPrototypePush(out, option);
    } else if (isPlainObject(option) && 'value' in option) {
      ArrayPrototypePush(out, { label: String(option.label ?? option.value), value: jsonOrUndefined(option.value) ?? null });
    }
  }
  return out;
}

/** Follows `propDefinition: [app, name, inputValues?]` to the app's definition, the instance's own fields winning. */
function resolvePropDefinition(name: string, prop: Obj, props: Obj): { definition: Obj; ref: [string, string] } {
  // Indexed, not destructured: the array iterator is component code's to replace.
  const reference: unknown[] = ArrayIsArray(prop.propDefinition) ? prop.propDefinition : [];
  const app = reference[0];
  const definitionName = reference[1];
  if (!isApp(app) || typeof definitionName !== 'string') {
    throw new LoadFailure('load_failed', `prop ${quote(name)}: propDefinition must be [app, "definitionName", inputValues?]`, { prop: name });
  }
  const appPropName = ArrayPrototypeFind(ObjectKeys(props), (key) => props[key] === app);
  if (appPropName === undefined) {
    throw new LoadFailure('load_failed', `prop ${quote(name)}: the app of its propDefinition is not one of the component's props`, {
      prop: name,
    });
  }
  const definitions = isPlainObject(app.propDefinitions) ? app.propDefinitions : {};
  const inherited = definitions[definitionName];
  if (!isPlainObject(inherited)) {
    throw new LoadFailure('load_failed', `prop ${quote(name)}: app ${quote(String(app.app))} has no propDefinition ${quote(definitionName)}`, {
      prop: name,
    });
  }
  const { propDefinition: _ignored, ...overrides } = prop;
  return { definition: { ...inherited, ...overrides }, ref: [appPropName, definitionName] };
}

function describe(name: string, prop: Obj, propDefinition?: [string, string]): PropDescriptor {
  const type = prop.type;
  if (type === '$.interface.apphook') {
    // Known, but not served: the hosted service feeds these from its own apps' event subscriptions (Slack's, say).
    throw new LoadFailure(
      'unknown_prop_type',
      `prop ${quote(name)} is a $.interface.apphook, which takes events from the hosted service's own app integrations; Tributary has none: use a source that registers a webhook in its activate() hook, or an HTTP source the app posts to`,
      { prop: name },
    );
  }
  if (type === 'http_request') {
    // Known, but not served: the hosted service's request builder (what execute() sends and answers is its own), which
    // the HTTP app's request actions are made of; refused by name, so the porter knows it is not a typo.
    throw new LoadFailure(
      'unknown_prop_type',
      `prop ${quote(name)} is an http_request, the hosted service's request builder (the HTTP app's "Send any HTTP Request", GET, POST and PUT actions use it); Tributary does not offer it: make the request in run() with axios from @pipedream/platform, its URL, method, headers and body as string or object props`,
      { prop: name },
    );
  }
  if (typeof type !== 'string' || !SetPrototypeHas(KNOWN_TYPES, type)) {
    const shown = typeof type === 'string' ? quote(type) : 'no type';
    throw new LoadFailure('unknown_prop_type', `prop ${quote(name)} has an unknown type: ${shown}`, { prop: name });
  }
  // Without a prototype: a setter component code put on Object.prototype under a field's name (`secret`, `label`)
  // would take the assignments below, and the prop would be described without it.
  const d = { __proto__: null, name, type } as unknown as PropDescriptor;
  if (typeof prop.label === 'string') d.label = prop.label;
  if (typeof prop.description === 'string') d.description = prop.description;
  const def = jsonOrUndefined(prop.default);
  if (def !== undefined) d.default = def;
  // A flag that is not a boolean is refused, not dropped: `secret: "true"` dropped would store and show the value in
  // clear, `optional: 1` would make the prop required. `hidden`, `disabled` and `useQuery` are form hints the reference
  // service lists too: not shown (additionalProps() unhides them), shown but not editable, options() taking a query.
  for (const flag of FLAGS) {
    const value = prop[flag];
    if (value === undefined || (flag === 'customResponse' && type !== '$.interface.http')) continue;
    if (typeof value !== 'boolean')
      throw new LoadFailure('load_failed', `prop ${quote(name)}: ${flag} must be a boolean, not ${describeValue(value)}`, { prop: name });
    if (flag !== 'customResponse' && flag !== 'reloadProps') d[flag] = value;
  }
  const integral = type === 'integer' || type === 'integer[]';
  for (const bound of ['min', 'max'] as const) {
    const value = prop[bound];
    // Bounds bind integer props only (README): on another type a bound of any kind is kept lenient, as registry
    // components declare them; on an integer prop one that is no integer would bound nothing the spec allows.
    if (typeof value !== 'number' && !(integral && value !== undefined)) continue;
    // NaN or an infinity bounds nothing JSON can carry: said here, not as a malformed message of the worker's.
    if (typeof value === 'number' && !NumberIsFinite(value)) {
      throw new LoadFailure('load_failed', `prop ${quote(name)}: ${bound} must be a finite number, not ${value}`, { prop: name });
    }
    if (integral && !NumberIsSafeInteger(value)) {
      const shown = typeof value === 'number' ? `${value}` : describeValue(value);
      throw new LoadFailure('load_failed', `prop ${quote(name)}: ${bound} must be an integer (its prop is an integer), not ${shown}`, { prop: name });
    }
    d[bound] = value as number;
  }
  if (d.min !== undefined && d.max !== undefined && d.min > d.max) {
    throw new LoadFailure('load_failed', `prop ${quote(name)}: min ${d.min} is greater than max ${d.max}, so no value fits`, { prop: name });
  }
  if (ArrayIsArray(prop.options)) d.options = staticOptions(prop.options);
  else if (typeof prop.options === 'function') d.remoteOptions = true;
  else if (prop.options !== undefined) {
    throw new LoadFailure('load_failed', `prop ${quote(name)}: options must be an array or an async method`, { prop: name });
  }
  if (type === 'app') {
    if (typeof prop.app !== 'string' || StringPrototypeTrim(prop.app) === '') {
      throw new LoadFailure('load_failed', `prop ${quote(name)}: an app prop needs \`app\`, the app's name slug`, { prop: name });
    }
    d.app = prop.app;
  }
  if (type === '$.interface.http' && typeof prop.customResponse === 'boolean') d.customResponse = prop.customResponse;
  if (type === '$.interface.timer') {
    // Older components put the schedule on the prop itself rather than in `default`.
    if (typeof prop.intervalSeconds === 'number') d.intervalSeconds = prop.intervalSeconds;
    if (typeof prop.cron === 'string') d.cron = prop.cron;
    if (typeof prop.timezone === 'string') d.timezone = prop.timezone;
    // The reference registry's polling sources fix their schedule with `static: { intervalSeconds }` rather than a
    // `default`; it is taken as the default (a configured value still wins), so they deploy without a timer value.
    const fixed = jsonOrUndefined(prop.static);
    if (d.default === undefined && isPlainObject(fixed)) d.default = fixed;
  }
  if (type === 'alert') {
    // One of the four kinds the reference service knows; anything else would reach the console's markup as given.
    d.alertType = typeof prop.alertType === 'string' && SetPrototypeHas(ALERT_TYPES, prop.alertType) ? prop.alertType : 'info';
    if (typeof prop.content === 'string') d.content = prop.content;
    d.optional = true;
  }
  if (propDefinition) d.propDefinition = propDefinition;
  if (prop.reloadProps === true) d.reloadProps = true;
  return d;
}

export function normalizeProps(props: unknown): PropDescriptor[] {
  if (props === undefined || props === null) return [];
  if (!isPlainObject(props)) throw new LoadFailure('load_failed', 'props must be an object');
  return ArrayPrototypeMap(ObjectEntries(props), (entry) => {
    const name = entry[0];
    const value = entry[1];
    if (typeof value === 'string') return describe(name, { type: value });
    if (!isPlainObject(value)) {
      throw new LoadFailure('unknown_prop_type', `prop ${quote(name)} has an unknown type: ${typeof value}`, { prop: name });
    }
    if (value.propDefinition !== undefined) {
      const { definition, ref } = resolvePropDefinition(name, value, props);
      return describe(name, definition, ref);
    }
    return describe(name, value);
  });
}
