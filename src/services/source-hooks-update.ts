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
 * Runs an update's hooks and saves the change with their effects (`save`). When the new activate() throws after the old
 * deactivate() took down what the old activate() set up (a remote webhook), the source stays with its old code and
 * props, so the old activate() runs again to set it up anew, its effects committed, before the 422 is thrown: without
 * it the source would look active yet receive nothing. When the save fails after the hooks ran (a connected account
 * deleted meanwhile), the new deactivate() takes down what the new activate() set up, then the old activate() runs again.
 */
export async function runUpdateHooks<Saved>(
  hooks: SourceHooks,
  input: UpdateHooksInput,
  save: (effects: HookEffects) => Promise<Saved>,
  /** Commits what the restoring activate() did (with the deactivate() before it), the source left as it was. */
  commitRestored: (effects: HookEffects) => Promise<void>,
): Promise<Saved> {
  const { current, next, db } = input;
  const off = input.wasActive ? await hooks.run(current.source, current.component, current.info, ['deactivate'], db) : undefined;
  const afterOff = { ...db, ...off?.dbWrites };
  let on: HookEffects | undefined;
  try {
    if (input.active) on = await hooks.run(next.source, next.component, next.info, ['activate'], afterOff, off);
  } catch (error) {
    throw await restoreOld(hooks, current, off, afterOff, error, commitRestored);
  }
  const changed = mergeHookEffects(off, on);
  try {
    return await save(changed);
  } catch (error) {
    // Best effort: whatever the undoing meets, the save's error is the answer. A deactivate() run alone that throws
    // hands back its failure rather than throwing.
    const undone = async () => {
      if (on?.outcomes.length) await hooks.undo(next.source, next.component, next.info, on, afterOff, changed);
      return restoreOld(hooks, current, off, afterOff, error, commitRestored);
    };
    throw await undone().catch(() => error);
  }
}

/**
 * Runs the old code's activate() again after its deactivate() ran and the update failed with `error`, commits what it
 * did, and hands back the error to throw: `error`, or one that adds the restoring activate()'s own failure.
 */
async function restoreOld(
  hooks: SourceHooks,
  current: HookedSource,
  off: HookEffects | undefined,
  afterOff: Record<string, unknown>,
  error: unknown,
  commitRestored: (effects: HookEffects) => Promise<void>,
): Promise<unknown> {
  // An old code without deactivate() took nothing down: its activate() run again would set things up twice.
  if (!off?.outcomes.length) return error;
  const restored = await hooks.run(current.source, current.component, current.info, ['activate'], afterOff, off, true);
  await commitRestored(mergeHookEffects(off, restored));
  const failure = restored.outcomes.find(({ outcome }) => outcome.error)?.outcome;
  if (!failure?.error || !(error instanceof ServiceError)) return error;
  const { name, message, stack } = failure.error;
  return new ServiceError(
    error.code,
    `${error.message}; the replaced code's activate(), run again to restore what its deactivate() took down, failed as well: ${name}: ${message}`,
    [...(error.details ?? []), { hook: 'activate', restoring: true, error: { name, message, stack }, logs: failure.logs }],
  );
}
