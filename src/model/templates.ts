// Step prop templates: `{{ steps.trigger.event.body.x }}` read from a run's step data, as the reference service writes them.

const WHOLE = /^\s*\{\{\s*([^{}]+?)\s*\}\}\s*$/;
const ANY = /\{\{\s*([^{}]+?)\s*\}\}/g;
/** `a.b`, `a[0]`, `a["b c"]`, `a['b']`: a path into the step data, nothing that runs code. */
const PATH = /^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*|\[\d+\]|\["[^"]*"\]|\['[^']*'\])*$/;
const SEGMENT = /\.([A-Za-z_$][\w$]*)|\[(\d+)\]|\["([^"]*)"\]|\['([^']*)'\]/g;

/** True when the value holds a template: the step's prop is not checked as written, and gets what it evaluates to. */
export function isTemplate(value: unknown): value is string {
  return typeof value === 'string' && value.includes('{{') && /\{\{[^{}]+\}\}/.test(value);
}

/** A key as a path segment: `.key` when it is an identifier, else `["key"]`. */
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/**
 * Each template expression in `value`, in its arrays and objects too, with where it stands (`at` extended:
 * `label.nested[0]`), so that a refusal names the very value at fault and a nested template is checked as a top one.
 */
export function templateExpressions(value: unknown, at: string): Array<{ at: string; expression: string }> {
  if (Array.isArray(value)) return value.flatMap((item, index) => templateExpressions(item, `${at}[${index}]`));
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([key, item]) => templateExpressions(item, IDENTIFIER.test(key) ? `${at}.${key}` : `${at}[${JSON.stringify(key)}]`));
  }
  if (!isTemplate(value)) return [];
  return [...value.matchAll(ANY)].map((m) => ({ at, expression: m[1]! }));
}

/** True when the expression is a path (`a.b`, `a[0]`, `a["b c"]`), nothing that runs code. */
export function isTemplatePath(expression: string): boolean {
  return PATH.test(expression);
}

/**
 * True when the path reads nothing a run can hold: the data is `{ steps }`, and of it only `steps.trigger` and the
 * steps in `earlier` are set when the step runs. Such a path (a typo in a step's name, a later step, `process.env.X`)
 * would evaluate to nothing on every run, without a word.
 */
export function isUnreadablePath(expression: string, earlier: ReadonlySet<string>): boolean {
  const head = /^[A-Za-z_$][\w$]*/.exec(expression)![0];
  if (head !== 'steps') return true;
  const first = expression.slice(head.length).matchAll(SEGMENT).next().value;
  if (!first) return false;
  const name = first[1] ?? first[2] ?? first[3] ?? first[4]!;
  return name !== 'trigger' && !earlier.has(name);
}

function lookUp(data: Record<string, unknown>, expression: string): unknown {
  const head = /^[A-Za-z_$][\w$]*/.exec(expression)![0];
  let value: unknown = Object.hasOwn(data, head) ? data[head] : undefined;
  for (const match of expression.slice(head.length).matchAll(SEGMENT)) {
    const key = match[1] ?? match[2] ?? match[3] ?? match[4]!;
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/**
 * A prop value with its templates evaluated against `data` (`{ steps }`): a value that is one template becomes
 * what it names (an object stays an object); templates inside text are replaced by their values as text.
 */
export function evaluateTemplate(value: string, data: Record<string, unknown>): unknown {
  const whole = WHOLE.exec(value);
  if (whole && PATH.test(whole[1]!)) return lookUp(data, whole[1]!);
  return value.replace(ANY, (text, expression: string) => {
    if (!PATH.test(expression)) return text;
    const found = lookUp(data, expression);
    if (found === undefined || found === null) return '';
    return typeof found === 'object' ? JSON.stringify(found) : String(found);
  });
}

/** Every template in the props (top-level values and inside arrays and objects) evaluated. */
export function evaluateProps(props: Record<string, unknown>, data: Record<string, unknown>): Record<string, unknown> {
  const walk = (value: unknown): unknown => {
    if (isTemplate(value)) return evaluateTemplate(value, data);
    if (Array.isArray(value)) return value.map(walk);
    if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v)]));
    return value;
  };
  return Object.fromEntries(Object.entries(props).map(([k, v]) => [k, walk(v)]));
}
