// What a workflow is made of (its trigger and steps, as stored) and the rules a definition must follow.
import type { PropDescriptor } from '../runtime/types.js';
import { quote } from '../runtime/worker/quote.js';

/** How a workflow is started besides subscriptions and manual runs. */
export type WorkflowTrigger =
  | { type: 'http'; custom_response: boolean }
  | { type: 'timer'; interval_seconds: number }
  | { type: 'timer'; cron: string; timezone?: string }
  | { type: 'source'; source_id: string; event_name: string };

/** A workflow row's trigger as stored (JSON text, or null for none). */
export function storedTrigger(row: { trigger: string | null }): WorkflowTrigger | null {
  return row.trigger ? (JSON.parse(row.trigger) as WorkflowTrigger) : null;
}

/** A step as stored: its component (an action or a code step saved as a component) and its props as given. */
export interface StoredStep {
  name: string;
  component_id: string;
  /** Values as configured: secrets sealed, templates (`{{ … }}`) kept as written. */
  configured_props: Record<string, unknown>;
  /** The props `additionalProps()` added (or changed) for these values, computed at deploy; absent without it. */
  additional_props?: PropDescriptor[];
}

/** Step names become keys of `steps`: identifiers, never `trigger`, and never `__proto__`. */
const STEP_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** `metadata.name` of `$.send.sse` events: the prefix keeps them apart from emits on a channel of the same name. */
export const SSE_PREFIX = '$sse:';

/**
 * The deployment (`d_`, the spec's prefix) a workflow's runs belong to. Tributary keeps no versions of a workflow, so
 * each has one deployment, named after it: `p_<id>` runs in `d_<id>`.
 */
export function deploymentIdOf(workflowId: string): string {
  return `d_${workflowId.slice('p_'.length)}`;
}

export const MAX_STEPS = 50;
export const DEFAULT_RUN_TIMEOUT_SECONDS = 30;
export const MAX_RUN_TIMEOUT_SECONDS = 900;

/** Problems with the step names of a definition, one message each (empty when they are fine). */
export function stepNameProblems(names: string[]): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  names.forEach((name, i) => {
    if (!STEP_NAME.test(name)) problems.push(`steps[${i}].name ${quote(name)} must be an identifier (letters, digits, _; at most 64)`);
    else if (name === 'trigger') problems.push(`steps[${i}].name may not be "trigger": steps.trigger is the triggering event`);
    // Assigned as a key of `steps`, it would set that object's prototype: later steps and templates would not see it.
    else if (name === '__proto__') problems.push(`steps[${i}].name may not be "__proto__": later steps could not read it as steps.__proto__`);
    else if (seen.has(name)) problems.push(`steps[${i}].name ${quote(name)} is used by an earlier step`);
    seen.add(name);
  });
  return problems;
}

/** `steps.<name>` of a finished step: its exports beside `$return_value`, as the reference service shows them. */
export function stepData(returnValue: unknown, exports: Record<string, unknown>): Record<string, unknown> {
  return returnValue === undefined ? { ...exports } : { ...exports, $return_value: returnValue };
}

/**
 * How a run's end by `$.flow.exit()` is told where no `$.respond()` came: `step "s0" called $.flow.exit("bye")`. The
 * reason is quoted as a request's value is (its first 100 characters), as it may be megabytes long.
 */
export function exitCalled(stepName: string, exit: { reason?: string }): string {
  return `step ${quote(stepName)} called $.flow.exit(${exit.reason === undefined ? '' : quote(exit.reason)})`;
}
