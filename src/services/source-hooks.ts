// A source's deploy, activate and deactivate hooks, run in its worker with its db and the data stores its props name;
// what they did is handed back to commit with the change that ran them, and nothing of it if one of them throws.
import type { Clock } from '../lib/clock.js';
import type { Store } from '../store/database.js';
import type { ComponentRow } from '../store/components.js';
import { readDataStores } from '../store/data-stores.js';
import type { SourceRow } from '../store/sources.js';
import type { ComponentRuntime } from '../runtime/index.js';
import { applyDataStoreChanges, mergeDataStoreChanges } from '../runtime/data-store-changes.js';
import type { ComponentInfo, DataStoreChange, DataStoreContents, HookMethod, InvocationOutcome } from '../runtime/types.js';
import type { InvocationContext } from '../commit/effects.js';
import { ComputeBilling } from '../commit/usage.js';
import { CredentialError, credentialFailure, type InvocationBase, type InvocationBases } from '../engine/invocation-base.js';
import { newId } from '../model/ids.js';
import { dataStoreNames } from '../model/props.js';
import { ServiceError } from '../model/errors.js';

/** What hooks did, in the shape `commitEffects` takes. */
export interface HookEffects {
  outcomes: Array<{ outcome: InvocationOutcome; context: InvocationContext }>;
  dbWrites: Record<string, unknown>;
  dataStoreWrites: DataStoreChange[];
}

const NO_EFFECTS: HookEffects = { outcomes: [], dbWrites: {}, dataStoreWrites: [] };

/** The effects of hooks run one after the other (deactivate() of the old code, then activate() of the new), in order. */
export function mergeHookEffects(...effects: Array<HookEffects | undefined>): HookEffects {
  const ran = effects.filter((e): e is HookEffects => e !== undefined);
  return {
    outcomes: ran.flatMap((e) => e.outcomes),
    // Defined, not assigned: Object.assign would take a "__proto__" key a hook wrote as the result's prototype and drop it.
    dbWrites: Object.fromEntries(ran.flatMap((e) => Object.entries(e.dbWrites))),
    dataStoreWrites: mergeDataStoreChanges(...ran.map((e) => e.dataStoreWrites)),
  };
}

/** A hook that failed, as the change that ran it commits it: its error on $errors, none of its writes. */
function failedHook(outcome: InvocationOutcome, trigger: HookMethod): HookEffects {
  return { outcomes: [{ outcome, context: { invocationId: newId('hi'), trigger, event: null } }], dbWrites: {}, dataStoreWrites: [] };
}

export class SourceHooks {
  private readonly compute: ComputeBilling;
  /** What each run's hooks ran with, by the effects it handed back: an undo runs with the same credentials. */
  private readonly basesUsed = new WeakMap<HookEffects, InvocationBase>();

  constructor(
    private readonly store: Store,
    private readonly runtime: ComponentRuntime,
    private readonly bases: InvocationBases,
    private readonly clock: Clock,
  ) {
    this.compute = new ComputeBilling(store.db, clock);
  }

  /**
   * Runs hooks in order (those the component defines), threading db and data store writes from one to the next.
   * `earlier` are the effects of hooks the same change ran before these (their data store writes are seen here, as
   * the caller threads their db writes into `db`). The first hook that throws fails the request with 422, except a
   * deactivate() run alone, which switching the source off outlives, and a hook run alone as `outlived` (the old
   * code's activate() run again when an update's failed): those hand back their failure instead.
   */
  async run(
    source: SourceRow,
    component: ComponentRow,
    info: ComponentInfo,
    methods: HookMethod[],
    db: Record<string, unknown>,
    earlier?: HookEffects,
    outlived = false,
    /** The credentials and props to run with, when they must be those of an earlier run (see undo). */
    given?: InvocationBase,
  ): Promise<HookEffects> {
    // Without a hook to run there is nothing to prepare, and no credential to resolve (nor a token to refresh).
    const defined = methods.filter((method) => info.hooks[method]);
    if (!defined.length) return NO_EFFECTS;
    let base: InvocationBase;
    try {
      base = given ?? (await this.bases.of(source, component, info));
    } catch (error) {
      if (!(error instanceof CredentialError)) throw error;
      // Switching a source off (to change it, deactivate or delete it) must stay possible when its secrets or
      // credentials cannot be had (a key lost in a restore, a refresh refused): deactivate() is skipped, its failure
      // kept on $errors, rather than the change refused, which would leave no way to mend the source.
      if (defined.length === 1 && (outlived || defined[0] === 'deactivate')) return failedHook(credentialFailure(error), defined[0]!);
      throw new ServiceError('hook_failed', `${defined.map((method) => `${method}()`).join(' and ')} could not run: ${error.message}`, [
        { hook: defined[0], error: { name: error.errorName, message: error.message } },
      ]);
    }
    let stores = await this.storesOf(source, info, base, earlier?.dataStoreWrites);
    const outcomes: HookEffects['outcomes'] = [];
    let dbWrites: Record<string, unknown> = {};
    let dataStoreWrites: DataStoreChange[] = [];
    for (const method of defined) {
      // Named before it runs, so that an error its leftover timers throw later is reported under this id.
      const invocationId = newId('hi');
      const result = await this.runtime.invoke({
        ...base,
        method,
        db: { ...db, ...dbWrites },
        ...(stores && { dataStores: stores }),
        logContext: { hook: method, invocationIds: [invocationId] },
      });
      // Billed at once, in a statement of its own: hooks run before the change's transaction, and one that fails used it too.
      await this.compute.bill(source.user_id, result.cpuMs);
      const outcome = result.outcomes[0]!;
      // A deactivate() that throws does not refuse the change either (for the reason above): refused, it would refuse
      // every later update and the delete too, since each runs it first. Its failure is kept on $errors, its writes not.
      if (outcome.error && (method === 'deactivate' || outlived) && defined.length === 1) return failedHook(outcome, method);
      if (outcome.error) {
        // Its console lines go with the refusal: nothing of the change is committed, so no $logs event keeps them.
        throw new ServiceError('hook_failed', `${method}() hook failed: ${outcome.error.name}: ${outcome.error.message}`, [
          { hook: method, error: { name: outcome.error.name, message: outcome.error.message, stack: outcome.error.stack }, logs: outcome.logs },
        ]);
      }
      outcomes.push({ outcome, context: { invocationId, trigger: method, event: null } });
      dbWrites = { ...dbWrites, ...result.dbWrites };
      stores = applyDataStoreChanges(stores, result.dataStoreWrites);
      dataStoreWrites = mergeDataStoreChanges(dataStoreWrites, result.dataStoreWrites);
    }
    const effects = { outcomes, dbWrites, dataStoreWrites };
    this.basesUsed.set(effects, base);
    return effects;
  }

  /**
   * Runs deactivate() to take down what `activated` (an activate() of the same code and props) set up, with the
   * credentials that run had: the change failed after it, and a connected account deleted meanwhile must not stop it.
   */
  undo(source: SourceRow, component: ComponentRow, info: ComponentInfo, activated: HookEffects, db: Record<string, unknown>, earlier?: HookEffects) {
    return this.run(source, component, info, ['deactivate'], { ...db, ...activated.dbWrites }, earlier, false, this.basesUsed.get(activated));
  }

  /**
   * The account's stores the source's data_store props name, as committed and as `earlier` hooks of this change left
   * them; undefined when it names none. Loaded as for a run (worker/data-store.ts says why), with the same bounds.
   */
  private async storesOf(
    source: SourceRow,
    info: ComponentInfo,
    base: InvocationBase,
    earlier: DataStoreChange[] | undefined,
  ): Promise<DataStoreContents[] | undefined> {
    const names = dataStoreNames(info.props, base.props);
    if (!names.length) return undefined;
    return applyDataStoreChanges(await readDataStores(this.store.db, source.user_id, names, this.clock.now()), earlier);
  }
}
