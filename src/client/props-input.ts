// A deploy's configured_props from the command line: --props-file, then --prop key=value (typed by the component's
// props), then answers to prompts for required props still missing when the terminal is interactive.
import fs from 'node:fs';
import { ApiError, type ApiClient } from './api.js';
import { UsageError } from './usage-error.js';

/** A prop as the component's `configurable_props` describe it (the fields the client uses). */
export interface PropInfo {
  name: string;
  type: string;
  label?: string;
  description?: string;
  optional?: boolean;
  /** Not shown in a form: never asked for. */
  hidden?: boolean;
  default?: unknown;
  secret?: boolean;
  options?: unknown[];
  remoteOptions?: boolean;
  app?: string;
}

/** Props the platform fills in: never asked for. */
const FILLED_IN = new Set(['$.interface.http', '$.service.db']);

function parseJson(raw: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(raw) };
  } catch {
    return { ok: false };
  }
}

/** A command-line value as the prop's type wants it: `--prop n=5` is the integer 5 for an integer prop, "5" for a string. */
export function typedValue(prop: PropInfo | undefined, raw: string): unknown {
  const json = parseJson(raw);
  const type = prop?.type ?? '';
  const fail = (what: string): never => {
    throw new UsageError(`--prop ${prop!.name}=${raw}: ${prop!.name} is ${what}`);
  };
  switch (type) {
    case 'string':
      return raw;
    case 'integer':
      return /^-?\d+$/.test(raw.trim()) ? Number(raw) : fail('an integer');
    case 'boolean':
      return raw === 'true' ? true : raw === 'false' ? false : fail('a boolean: true or false');
    case 'app':
      return /^apn_/.test(raw) ? { authProvisionId: raw } : json.ok ? json.value : fail('an app prop: give a connected account id (apn_…)');
    case '$.interface.timer':
      if (/^\d+$/.test(raw)) return { intervalSeconds: Number(raw) };
      return json.ok ? json.value : { cron: raw };
    case 'string[]':
      return json.ok && Array.isArray(json.value) ? json.value : raw.split(',').map((part) => part.trim());
    case 'integer[]':
      return json.ok && Array.isArray(json.value) ? json.value : raw.split(',').map((part) => Number(part.trim()));
    case 'object':
      return json.ok && typeof json.value === 'object' && json.value !== null && !Array.isArray(json.value)
        ? json.value
        : fail('an object: give it as JSON, {"key": "value"}');
    default:
      // any, and props the client does not know (added by additionalProps()): JSON if it parses, else the text.
      return json.ok ? json.value : raw;
  }
}

/**
 * Refuses an unreadable --props-file or a --prop not written name=value before anything is bundled or saved; typing
 * the values needs the saved component's props, so that waits for givenProps.
 */
export function checkGivenProps(propsFile: string | undefined, pairs: string[]): void {
  givenProps([], propsFile, pairs);
}

/** `--props-file` then `--prop` values; later ones win. */
export function givenProps(props: PropInfo[], propsFile: string | undefined, pairs: string[]): Record<string, unknown> {
  let configured: Record<string, unknown> = {};
  if (propsFile !== undefined) {
    let text: string;
    try {
      text = fs.readFileSync(propsFile, 'utf8');
    } catch (error) {
      throw new UsageError(
        `cannot read --props-file ${propsFile}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`,
      );
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      // Where the JSON breaks, which "must hold a JSON object" would not say of a file that nearly is one.
      throw new UsageError(`--props-file ${propsFile} is not JSON: ${(error as Error).message}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new UsageError(`--props-file ${propsFile} must hold a JSON object of prop values`);
    }
    configured = { ...(parsed as Record<string, unknown>) };
  }
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new UsageError(`--prop ${pair}: write it as name=value`);
    const name = pair.slice(0, at);
    configured[name] = typedValue(
      props.find((p) => p.name === name),
      pair.slice(at + 1),
    );
  }
  return configured;
}

/**
 * The full prop list for these values (`props/reload`): the static props, then those additionalProps() returns;
 * undefined from a server without the route (a 404 for a component just saved), which knows the static props only.
 */
export async function listProps(
  api: ApiClient,
  componentId: string,
  configured: Record<string, unknown>,
): Promise<{ props: PropInfo[]; errors: string[] } | undefined> {
  try {
    const answer = await api.call<{ data: { configurable_props: PropInfo[]; errors: string[] } }>(
      'POST',
      `/v1/components/${componentId}/props/reload`,
      { configured_props: configured },
      // additionalProps() runs in a worker, which may first have to start.
      'code',
    );
    return { props: answer.data.configurable_props, errors: answer.data.errors };
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return undefined;
    throw error;
  }
}

/** Required props without a value: not optional or hidden, no default, not filled in by the platform. */
export function missingProps(props: PropInfo[], configured: Record<string, unknown>): PropInfo[] {
  return props.filter(
    (p) => !FILLED_IN.has(p.type) && p.type !== 'app' && !p.optional && !p.hidden && p.default === undefined && configured[p.name] === undefined,
  );
}

/** How a prop is named to a user: its label and name, type and description. */
export function describeProp(prop: PropInfo): string {
  const label = prop.label && prop.label !== prop.name ? `${prop.label} (${prop.name})` : prop.name;
  return `${label}: ${prop.type}${prop.description ? `. ${prop.description}` : ''}`;
}

/** Asks one question; answers come from the terminal (or stdin's lines with --interactive). */
export type Ask = (question: string, options?: { secret?: boolean }) => Promise<string>;

interface Choice {
  label: string;
  value: unknown;
}

function asChoices(options: unknown[]): Choice[] {
  return options.map((o) =>
    typeof o === 'object' && o !== null && 'value' in o
      ? { label: String((o as Choice).label ?? (o as Choice).value), value: (o as Choice).value }
      : { label: String(o), value: o },
  );
}

/** The choices of a prop: its static options, else its options() through the API (first page), else accounts of its app. */
/**
 * A prop's choices: its static options, or what its options() gave. An answer with choices and errors (some choices left
 * out) offers the choices and prints the errors; one with errors alone stops, naming them.
 */
async function choicesFor(
  api: ApiClient,
  componentId: string,
  prop: PropInfo,
  configured: Record<string, unknown>,
  print: (line: string) => void,
): Promise<Choice[]> {
  if (prop.options?.length) return asChoices(prop.options);
  if (prop.remoteOptions) {
    const answer = await api.call<{ data: { options: unknown[]; errors: string[] } }>(
      'POST',
      `/v1/components/${componentId}/props/${encodeURIComponent(prop.name)}/options`,
      { configured_props: configured },
      // options() runs in a worker, which may first have to start.
      'code',
    );
    const { options, errors } = answer.data;
    if (errors.length && !options.length) throw new UsageError(`the options of ${prop.name} could not be listed: ${errors.join('; ')}`);
    if (errors.length) print(`note: ${errors.join('; ')}`);
    return asChoices(options);
  }
  return [];
}

/**
 * The value an answer picks by number: `2` is the second choice, and for a list prop `1,3` the first and third (a
 * single number a list of one: "2" of a string[] prop was sent as a string and refused). Undefined when the answer is
 * not such numbers, and so a value.
 */
function chosen(prop: PropInfo, choices: Choice[], answer: string): unknown {
  const list = prop.type.endsWith('[]');
  const numbers = list ? answer.split(',').map((part) => part.trim()) : [answer];
  if (!choices.length || !numbers.every((n) => /^\d+$/.test(n) && Number(n) >= 1 && Number(n) <= choices.length)) return undefined;
  const values = numbers.map((n) => choices[Number(n) - 1]!.value);
  return list ? values : values[0];
}

/** Asks for each missing prop in turn, offering its choices by number; values are typed as --prop values are. */
export async function promptForProps(
  api: ApiClient,
  componentId: string,
  missing: PropInfo[],
  configured: Record<string, unknown>,
  ask: Ask,
  print: (line: string) => void,
): Promise<Record<string, unknown>> {
  const out = { ...configured };
  for (const prop of missing) {
    const choices = await choicesFor(api, componentId, prop, out, print);
    print(describeProp(prop));
    choices.slice(0, 50).forEach((choice, i) => print(`  ${i + 1}) ${choice.label}`));
    for (;;) {
      const answer = (await ask(choices.length ? `${prop.name} (number or value): ` : `${prop.name}: `, { secret: prop.secret === true })).trim();
      if (answer === '') {
        print(`${prop.name} is required`);
        continue;
      }
      const shown = Math.min(choices.length, 50);
      try {
        const value = chosen(prop, choices.slice(0, shown), answer) ?? typedValue(prop, answer);
        // A static option list is all the server takes: "9" of two choices was sent as the value "9" and refused with
        // a 422 after every other question was answered.
        const picked = prop.type.endsWith('[]') && Array.isArray(value) ? value : [value];
        const offered = new Set(choices.map((choice) => JSON.stringify(choice.value)));
        if (prop.options?.length && !picked.every((one) => offered.has(JSON.stringify(one)))) {
          print(`"${answer}" is not one of the choices: answer 1 to ${shown}, or one of their values`);
          continue;
        }
        out[prop.name] = value;
        break;
      } catch (error) {
        if (!(error instanceof UsageError)) throw error;
        // typedValue speaks of --prop name=value, which nobody typed here.
        print(`"${answer}": ${error.message.replace(/^--prop [^:]*: /, '')}; try again`);
      }
    }
  }
  return out;
}
