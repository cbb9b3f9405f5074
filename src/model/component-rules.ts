// What the specification asks of a component beyond loading: an action has `run` and none of a source's parts.
import type { ComponentInfo } from '../runtime/types.js';
import { quote } from '../runtime/worker/quote.js';

/** Why this component breaks the authoring contract, or undefined. A source without `run` is allowed: it emits its triggering event. */
export function authoringProblem(info: ComponentInfo): string | undefined {
  if (info.type !== 'action') return undefined;
  const name = info.key ?? info.name;
  if (!info.hasRun) return `action ${quote(name)} has no run method; an action needs one`;
  const hooks = (['deploy', 'activate', 'deactivate'] as const).filter((hook) => info.hooks[hook]);
  if (hooks.length) return `action ${quote(name)} declares hooks (${hooks.join(', ')}); hooks are for sources`;
  if (info.dedupe !== undefined) return `action ${quote(name)} declares dedupe; dedupe is for sources`;
  // A step's interface was taken and did nothing: no endpoint, no timer. A workflow's trigger is its one interface.
  const interfaces = info.props.filter((prop) => prop.type === '$.interface.http' || prop.type === '$.interface.timer');
  if (interfaces.length)
    return `action ${quote(name)} declares ${interfaces.map((prop) => `${quote(prop.name)} (${prop.type})`).join(', ')}; interface props are for sources (a workflow's HTTP endpoint or timer is its trigger)`;
  return undefined;
}
