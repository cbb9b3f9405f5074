// The configured values a form holds so far, checked as a deploy checks them before options() or additionalProps() see them.
import type { PropDescriptor } from '../runtime/types.js';
import { ServiceError } from './errors.js';
import { type PropProblem, SECRET_PLACEHOLDER, validateProps } from './props.js';
import type { PropRules } from './timer-checks.js';

/** What validateProps seals is thrown away here: nothing checked for a form is stored. */
const NOTHING_STORED = { seal: () => SECRET_PLACEHOLDER, keep: (sealed: string) => sealed };

export interface ConfiguredValues {
  /** What the component is given: the values a deploy would take, as given (a data_store's name not yet resolved). */
  values: Record<string, unknown>;
  /** Why the others were left out, as a deploy's 422 words it. */
  problems: PropProblem[];
}

/**
 * The values a form holds so far, for a component's options() and additionalProps(): each value given is checked as a
 * deploy checks it (validateProps), and one a deploy would refuse is left out, so that the prop reads as unset (its
 * default, if any) rather than as a value no deploy keeps; its problems are answered. Nothing is required yet, and
 * `null` is unset, as at a deploy. A secret's `"********"` keeps a stored secret, which these calls, asked about a
 * component and not a source, cannot see: it is unset too, without a problem (the console's Edit props sends it back).
 * A name the component does not declare is a problem, as at a deploy, unless `open`: a component with
 * additionalProps() may declare it for these values, and it is given as it is.
 */
export function configuredValues(props: PropDescriptor[], given: Record<string, unknown>, rules: PropRules, open: boolean): ConfiguredValues {
  const byName = new Map(props.map((p) => [p.name, p]));
  // Entries, made into objects by Object.fromEntries, which defines: a name "__proto__" stays a name.
  const toCheck: Array<[string, unknown]> = [];
  const passed: Array<[string, unknown]> = [];
  for (const [name, value] of Object.entries(given)) {
    const prop = byName.get(name);
    if (!prop) (open ? passed : toCheck).push([name, value]);
    else if (value !== null && value !== undefined && !(prop.secret && value === SECRET_PLACEHOLDER)) toCheck.push([name, value]);
  }
  const checked = Object.fromEntries(toCheck);
  let problems: PropProblem[] = [];
  try {
    validateProps(
      props.filter((p) => Object.hasOwn(checked, p.name)),
      checked,
      {},
      NOTHING_STORED,
      rules,
    );
  } catch (error) {
    if (!(error instanceof ServiceError) || error.code !== 'props_invalid') throw error;
    problems = (error.details ?? []) as PropProblem[];
  }
  const refused = new Set(problems.map((p) => p.prop));
  const taken = toCheck.filter(([name]) => byName.has(name) && !refused.has(name));
  return { values: Object.fromEntries([...taken, ...passed]), problems };
}
