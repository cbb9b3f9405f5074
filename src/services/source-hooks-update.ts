// The hooks an update of a source runs (the old code's deactivate(), the new code's activate()), and the old code's activate() run again when the new one fails.
import type { ComponentRow } from '../store/components.js';
import type { SourceRow } from '../store/sources.js';
import type { ComponentInfo } from '../runtime/types.js';
import { ServiceError } from '../model/errors.js';
import { type HookEffects, mergeHookEffects, type SourceHooks } from './source-hooks.js';

/** A source's row with the code it runs. */
export interface HookedSource {
  source: SourceRow;
  component: ComponentRow;
  info: ComponentInfo;
}

export interface UpdateHooksInput {
  current: HookedSource;
  next: HookedSource;
  wasActive: boolean;
  active: boolean;
  /** The source's db as committed. */
  db: Record<string, unknown>;
}

/**
 * Runs an update's hooks and hands back their effects to commit with the change. When the new activate() throws after
 * the old deactivate() took down what the old activate() set up (a remote webhook), the source stays with its old code
 * and props, so the old activate() runs again to set it up anew, its effects committed, before the 422 is thrown:
 * without it the source would look active yet receive nothing.
 */
export async function runUpdateHooks(
  hooks: SourceHooks,
  input: UpdateHooksInput,
  /** Commits what the restoring activate() did (with the deactivate() before it), the source left as it was. */
  commitRestored: (effects: HookEffects) => Promise<void>,
): Promise<HookEffects> {
  const { current, next, db } = input;
  const off = input.wasActive ? await hooks.run(current.source, current.component, current.info, ['deactivate'], db) : undefined;
  const afterOff = { ...db, ...off?.dbWrites };
  if (!input.active) return mergeHookEffects(off);
  try {
    return mergeHookEffects(off, await hooks.run(next.source, next.component, next.info, ['activate'], afterOff, off));
  } catch (error) {
    // An old code without deactivate() took nothing down: its activate() run again would set things up twice.
    if (!off?.outcomes.length) throw error;
    const restored = await hooks.run(current.source, current.component, current.info, ['activate'], afterOff, off, true);
    await commitRestored(mergeHookEffects(off, restored));
    const failure = restored.outcomes.find(({ outcome }) => outcome.error)?.outcome;
    if (!failure?.error || !(error instanceof ServiceError)) throw error;
    const { name, message, stack } = failure.error;
    throw new ServiceError(
      error.code,
      `${error.message}; the replaced code's activate(), run again to restore what its deactivate() took down, failed as well: ${name}: ${message}`,
      [...(error.details ?? []), { hook: 'activate', restoring: true, error: { name, message, stack }, logs: failure.logs }],
    );
  }
}
