// Validates configured_props against a component's prop descriptors, seals secrets, and shapes the API echo.
import type { PropDescriptor } from '../runtime/types.js';
import { listProblems, ServiceError } from './errors.js';
import { bindings, type PropSealer, SecretBox, UnreadableSecretError } from '../lib/secrets.js';
import { cronIntervalSeconds, type TimerSchedule } from './schedules.js';
import { checkTimer, type PropRules } from './timer-checks.js';
import { quote, shorten } from '../runtime/worker/quote.js';
import { isDataStoreName } from '../runtime/worker/data-store-rules.js';
import { MAX_DATA_STORE_NAME_CHARS } from '../runtime/worker/limits.js';

/** What the API shows instead of a secret; sending it back keeps the stored value. */
export const SECRET_PLACEHOLDER = '********';

export interface PropProblem {
  prop: string;
  message: string;
}

const SCALAR_TYPES = new Set(['boolean', 'integer', 'string', 'object', 'any']);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** `secret`: the value is never echoed (the message goes back to the caller and into the log), only its type. */
function checkScalar(type: string, value: unknown, secret: boolean): string | undefined {
  switch (type) {
    case 'boolean':
      return typeof value === 'boolean' ? undefined : `must be a boolean, got ${describeType(value)}`;
    case 'integer':
      return typeof value === 'number' && Number.isSafeInteger(value)
        ? undefined
        : `must be an integer, got ${typeof value === 'number' && !secret ? value : describeType(value)}`;
    case 'string':
      return typeof value === 'string' ? undefined : `must be a string, got ${describeType(value)}`;
    case 'any':
      return undefined;
    default:
      return isPlainObject(value) ? undefined : `must be an object, got ${describeType(value)}`;
  }
}

/**
 * Why an object value holds a field not among `known` (dropping it silently would hide a typo), or undefined: `takes
 * <shape>, not the field "<key>"`, naming the first such key.
 */
function unknownFieldProblem(value: unknown, known: string[], shape: string): string | undefined {
  const key = isPlainObject(value) ? Object.keys(value).find((name) => !known.includes(name)) : undefined;
  return key === undefined ? undefined : `takes ${shape}, not the field ${quote(key)}`;
}

/**
 * The store a `data_store` prop's configured value names: a name, or `{ name }`. Undefined for anything else (a
 * name must be 1 to 200 characters without control characters).
 */
export function dataStoreName(value: unknown): string | undefined {
  const name = isPlainObject(value) ? value.name : value;
  return typeof name === 'string' && isDataStoreName(name) ? name : undefined;
}

/** The store names the `data_store` props of `props` have in `values` (runtime props), each once. */
export function dataStoreNames(props: PropDescriptor[], values: Record<string, unknown>): string[] {
  const names = new Set<string>();
  for (const prop of props) {
    if (prop.type !== 'data_store') continue;
    const name = dataStoreName(Object.hasOwn(values, prop.name) ? values[prop.name] : prop.default);
    if (name !== undefined) names.add(name);
  }
  return [...names];
}

function optionValues(prop: PropDescriptor): unknown[] | undefined {
  if (!prop.options) return undefined;
  return prop.options.map((o) => (isPlainObject(o) && 'value' in o ? o.value : o));
}

/** Checks one user-input value (scalar or array) against type, options and bounds. */
function checkInput(prop: PropDescriptor, value: unknown): string[] {
  const isArray = prop.type.endsWith('[]');
  const base = isArray ? prop.type.slice(0, -2) : prop.type;
  const items = isArray ? value : [value];
  if (isArray && !Array.isArray(value)) return [`must be an array of ${base}, got ${describeType(value)}`];
  const problems: string[] = [];
  const allowed = optionValues(prop);
  (items as unknown[]).forEach((item, index) => {
    const where = isArray ? `item ${index} ` : '';
    const typeProblem = itemTypeProblem(prop, base, item);
    if (typeProblem) return problems.push(where + typeProblem);
    if (allowed && !allowed.some((a) => JSON.stringify(a) === JSON.stringify(item))) {
      // A secret's value is never echoed: the message goes back to the caller and into the log.
      const got = prop.secret ? '' : `, got ${quote(item)}`;
      problems.push(`${where}must be one of ${allowed.map((a) => JSON.stringify(a)).join(', ')}${got}`);
    }
    if (base === 'integer') {
      const got = prop.secret ? '' : `, got ${item}`;
      if (prop.min !== undefined && (item as number) < prop.min) problems.push(`${where}must be at least ${prop.min}${got}`);
      if (prop.max !== undefined && (item as number) > prop.max) problems.push(`${where}must be at most ${prop.max}${got}`);
    }
    return undefined;
  });
  return problems;
}

/** Why a value (a list prop's item) is not of the prop's `base` type, or undefined when it is. */
function itemTypeProblem(prop: PropDescriptor, base: string, item: unknown): string | undefined {
  // A string prop whose choices come from its async options() takes a number too: registry apps give numeric ids
  // as option values (cal_com's bookingId), and the value picked from those choices reaches the run as it was.
  if (base === 'string' && prop.remoteOptions && typeof item === 'number' && Number.isFinite(item)) return undefined;
  return checkScalar(base, item, prop.secret === true);
}

/** Why a deploy would refuse a choice `options()` offers, by the prop's type (a list prop's: as its item), if it would. */
export function choiceTypeProblem(prop: PropDescriptor, value: unknown): string | undefined {
  const base = prop.type.replace(/\[\]$/, '');
  return SCALAR_TYPES.has(base) ? itemTypeProblem(prop, base, value) : undefined;
}

/** The schedule of a timer prop: the configured value, else the prop's default, else fields written on the prop. */
export function timerSchedule(prop: PropDescriptor, configured: unknown): TimerSchedule | undefined {
  return scheduleOf(configured) ?? scheduleOf(prop.default) ?? scheduleOf(prop);
}

/**
 * The schedule an object gives, if any. Also takes the shape the API returns (`{ cron: null, interval_seconds }`), so
 * that a GET's value can be sent back: null means "not set", and beside a cron the echoed interval is derived.
 */
function scheduleOf(source: unknown): TimerSchedule | undefined {
  if (!isPlainObject(source)) return undefined;
  const schedule: TimerSchedule = {};
  const cron = source.cron ?? undefined;
  const interval = source.intervalSeconds ?? source.interval_seconds ?? undefined;
  if (cron !== undefined) schedule.cron = cron as string;
  else if (interval !== undefined) schedule.intervalSeconds = interval as number;
  if (source.timezone !== undefined && source.timezone !== null) schedule.timezone = source.timezone as string;
  return schedule.intervalSeconds !== undefined || schedule.cron !== undefined ? schedule : undefined;
}

/**
 * Validates `given` against the descriptors and returns the props to store (secrets sealed).
 * `stored` holds the previous values on update, so that a secret placeholder keeps the stored secret.
 * Every problem is reported in one 422. `secrets` seals what is stored (configured-values.ts stores nothing).
 */
export function validateProps(
  descriptors: PropDescriptor[],
  given: Record<string, unknown>,
  stored: Record<string, unknown>,
  secrets: PropSealer,
  rules: PropRules,
): Record<string, unknown> {
  const problems: PropProblem[] = [];
  const out: Record<string, unknown> = {};
  const known = new Set(descriptors.map((d) => d.name));
  for (const name of Object.keys(given)) {
    if (!known.has(name)) problems.push({ prop: shorten(name), message: 'is not a prop of this component' });
  }
  for (const prop of descriptors) {
    const value = given[prop.name];
    const fail = (message: string) => problems.push({ prop: prop.name, message });
    switch (prop.type) {
      case '$.service.db':
        // Dropped silently, a value would look taken: the db is the component's own, set by nothing a deploy sends.
        if (value !== undefined && value !== null) fail('is a $.service.db, which the component keeps for itself: it takes no value');
        break;
      case 'alert':
        if (value !== undefined && value !== null) fail('is an alert, a note for whoever configures the component: it takes no value');
        break;
      case '$.interface.http': {
        // Only its echo comes back (a GET's body sent to PUT); the endpoint is the source's, never chosen by a value.
        const echo = isPlainObject(value) ? value.endpoint_url : undefined;
        const httpProblem = unknownFieldProblem(value, ['endpoint_url'], '{ endpoint_url } (its echo) only');
        if (
          value !== undefined &&
          value !== null &&
          (!isPlainObject(value) || httpProblem || !(echo === undefined || echo === null || typeof echo === 'string'))
        ) {
          fail(httpProblem ?? 'is an HTTP interface, whose endpoint is made for the source: it takes no value, or its echo { endpoint_url }');
          break;
        }
        out[prop.name] = { customResponse: prop.customResponse === true };
        break;
      }
      case '$.interface.timer': {
        // A value given must be a schedule itself: a typo such as { intervalSecs } must not fall back to the default.
        if (value !== undefined && value !== null && !scheduleOf(value)) {
          fail('must be { intervalSeconds } or { cron } (with an optional timezone)');
          break;
        }
        const timerProblem = unknownFieldProblem(
          value,
          ['intervalSeconds', 'cron', 'timezone', 'interval_seconds'],
          '{ intervalSeconds } or { cron } (with an optional timezone)',
        );
        if (timerProblem !== undefined) {
          fail(timerProblem);
          break;
        }
        // Both is no schedule either: taking one would silently drop the other. (The echoed `interval_seconds` beside
        // a cron is derived from it, so a GET's value sent back still passes.)
        if (isPlainObject(value) && value.cron != null && value.intervalSeconds != null) {
          fail('takes { intervalSeconds } or { cron }, not both');
          break;
        }
        if (isPlainObject(value) && value.intervalSeconds != null && value.interval_seconds != null && value.intervalSeconds !== value.interval_seconds) {
          fail('takes intervalSeconds or interval_seconds, not two different intervals');
          break;
        }
        const schedule = timerSchedule(prop, value);
        // A schedule kept as stored is not held to a --min-timer-interval raised since: else the source could not even
        // be switched off or renamed. A new schedule must meet it.
        const kept = schedule !== undefined && JSON.stringify(schedule) === JSON.stringify(scheduleOf(stored[prop.name]));
        const timerProblems = checkTimer(schedule, rules, kept);
        timerProblems.forEach(fail);
        if (!timerProblems.length) out[prop.name] = schedule;
        break;
      }
      case 'data_store': {
        // The account's store of this name, made on its first write.
        if (value === undefined || value === null) {
          if (prop.default !== undefined && dataStoreName(prop.default) !== undefined) out[prop.name] = dataStoreName(prop.default);
          else if (!prop.optional && !prop.hidden) fail('is required: the name of a data store (made on first use)');
          break;
        }
        const name = dataStoreName(value);
        const storeProblem = unknownFieldProblem(value, ['name'], '{ name } only');
        if (storeProblem !== undefined) fail(storeProblem);
        else if (name === undefined) fail(`must name a data store: a string of 1 to ${MAX_DATA_STORE_NAME_CHARS} characters, or { name }`);
        else out[prop.name] = name;
        break;
      }
      case 'app': {
        const appProblem = unknownFieldProblem(value, ['authProvisionId'], '{ authProvisionId } only');
        if (value === undefined || value === null) out[prop.name] = {};
        else if (!isPlainObject(value) || (value.authProvisionId !== undefined && typeof value.authProvisionId !== 'string')) {
          fail('must be { authProvisionId: string }');
        } else if (appProblem !== undefined) fail(appProblem);
        else out[prop.name] = value.authProvisionId === undefined ? {} : { authProvisionId: value.authProvisionId };
        break;
      }
      default: {
        if (!SCALAR_TYPES.has(prop.type.replace(/\[\]$/, ''))) {
          fail(`has unsupported type ${prop.type}`);
          break;
        }
        if (value === undefined || value === null) {
          // A default is held to what a given value must be (as a timer's is): `default: "false"` would read as true.
          // A secret's default is sealed like a given value: the echo hides it, and the placeholder sent back keeps it.
          if (prop.default !== undefined) {
            const defaultProblems = checkInput(prop, prop.default);
            for (const problem of defaultProblems) fail(`is not configured, and the component's default does not fit: it ${problem}`);
            if (!defaultProblems.length) out[prop.name] = prop.secret ? secrets.seal(prop.default, prop.name) : prop.default;
          }
          // A hidden prop is never asked for (console, CLI) until additionalProps() unhides it: not required while hidden.
          else if (!prop.optional && !prop.hidden) fail('is required');
          break;
        }
        if (prop.secret && value === SECRET_PLACEHOLDER) {
          // The placeholder keeps a stored secret; with none stored it would become the secret itself.
          if (SecretBox.isSealed(stored[prop.name])) out[prop.name] = secrets.keep(stored[prop.name] as string, prop.name);
          else fail(`is "${SECRET_PLACEHOLDER}", which keeps a stored secret, but none is stored: give the value`);
          break;
        }
        const inputProblems = checkInput(prop, value);
        inputProblems.forEach(fail);
        if (!inputProblems.length) out[prop.name] = prop.secret ? secrets.seal(value, prop.name) : value;
      }
    }
  }
  if (problems.length) throw propsInvalid(problems);
  return out;
}

/** The one 422 that lists every problem of a deploy's configured_props; `label` names where they are (a step). */
export function propsInvalid(problems: PropProblem[], label = ''): ServiceError {
  const summary = listProblems(problems, (p) => `${p.prop} ${p.message}`);
  return new ServiceError('props_invalid', `${label}invalid configured_props: ${summary}`, problems);
}

/**
 * The static props with what `additionalProps()` added: a prop of the same name replaces the static one in place (as
 * the component's `{ ...props, ...added }` does), the others follow in their order.
 */
export function withAdditionalProps(props: PropDescriptor[], additional: PropDescriptor[] | undefined): PropDescriptor[] {
  if (!additional?.length) return props;
  const byName = new Map(additional.map((p) => [p.name, p]));
  const merged = props.map((p) => byName.get(p.name) ?? p);
  const staticNames = new Set(props.map((p) => p.name));
  return [...merged, ...additional.filter((p) => !staticNames.has(p.name))];
}

/** What a full prop list adds to the static props, or changes of them: all that needs storing beside them. */
export function addedProps(props: PropDescriptor[], full: PropDescriptor[]): PropDescriptor[] {
  const byName = new Map(props.map((p) => [p.name, JSON.stringify(p)]));
  return full.filter((p) => byName.get(p.name) !== JSON.stringify(p));
}

/**
 * Props that `additionalProps()` may add: those a run gets from their configured value alone. An interface needs an
 * endpoint or a timer, a db or data store prop an object the worker builds from the static props, an app prop its
 * account resolved before the run; none of that is set up for a prop only known at deploy.
 */
export function additionalPropProblems(added: PropDescriptor[]): PropProblem[] {
  return added
    .filter((p) => p.type !== 'alert' && !SCALAR_TYPES.has(p.type.replace(/\[\]$/, '')))
    .map((p) => ({
      prop: p.name,
      message: `is a prop of type ${p.type} added by additionalProps(); props it adds may only be of types string, integer, boolean, object or any (or arrays of them), or alerts`,
    }));
}

/**
 * The `configured_props` echo: timers as `{ cron, interval_seconds }`, HTTP as `{ endpoint_url }`, secrets hidden. A cron's
 * interval is read at `nowMs`, the server's clock, as the timer itself runs on it.
 */
export function echoProps(
  descriptors: PropDescriptor[],
  stored: Record<string, unknown>,
  endpointUrl: string | undefined,
  nowMs: number,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const prop of descriptors) {
    const value = stored[prop.name];
    if (prop.type === '$.service.db') continue;
    if (prop.type === '$.interface.http') out[prop.name] = { endpoint_url: endpointUrl ?? null };
    else if (prop.type === '$.interface.timer') {
      const schedule = (value ?? {}) as TimerSchedule;
      out[prop.name] =
        schedule.cron !== undefined
          ? { cron: schedule.cron, interval_seconds: cronIntervalSeconds(schedule, nowMs), ...(schedule.timezone && { timezone: schedule.timezone }) }
          : { cron: null, interval_seconds: schedule.intervalSeconds ?? null };
    } else if (value === undefined) continue;
    else out[prop.name] = prop.secret ? SECRET_PLACEHOLDER : value;
  }
  return out;
}

/**
 * The values the component sees as `this.<prop>`, secrets opened as `accountId`'s. Interface and db props are built by
 * the runtime.
 */
export function runtimeProps(descriptors: PropDescriptor[], stored: Record<string, unknown>, secrets: SecretBox, accountId: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const prop of descriptors) {
    const value = stored[prop.name];
    if (value === undefined) continue;
    try {
      out[prop.name] = prop.secret && SecretBox.isSealed(value) ? secrets.unseal(value, bindings.prop(accountId, prop.name)) : value;
    } catch (error) {
      if (!(error instanceof UnreadableSecretError)) throw error;
      throw new UnreadableSecretError(`secret prop "${prop.name}" cannot be opened: ${error.message}; set it again`);
    }
  }
  return out;
}
