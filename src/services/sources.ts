// Sources: deploy, update, activate/deactivate and delete, running the component's hooks on each transition.
import type { AccountLimiter } from './account-limits.js';
import type { Clock } from '../lib/clock.js';
import type { Store } from '../store/database.js';
import { newEndpointId, newId, nowSeconds, isId } from '../model/ids.js';
import * as sources from '../store/sources.js';
import type { ComponentRow } from '../store/components.js';
import { componentInfo, loadComponent } from '../store/components.js';
import type { ComponentRuntime } from '../runtime/index.js';
import type { ComponentInfo, PropDescriptor } from '../runtime/types.js';
import { commitEffects } from '../commit/effects.js';
import type { SourceLocks } from '../engine/source-locks.js';
import type { InvocationBases } from '../engine/invocation-base.js';
import { replaceTimers, type TimerRow } from '../store/timers.js';
import { retryingDeadlocks } from '../store/deadlocks.js';
import { firstDue, type TimerSchedule } from '../model/schedules.js';
import type { ComponentService } from './components.js';
import { checkAuthProvisions, holdAuthProvisions } from './auth-provisions.js';
import { checkDataStoreNames } from './data-store-props.js';
import { ServiceError, invalid, notFound } from '../model/errors.js';
import type { Page, PageRequest } from '../model/pagination.js';
import { echoProps, SECRET_PLACEHOLDER, withAdditionalProps } from '../model/props.js';
import type { SecretBox } from '../lib/secrets.js';
import { writeDataStores } from '../store/data-stores.js';
import { DeployPropsResolver, type PropsReloader } from './deploy-props.js';
import { type HookEffects, SourceHooks } from './source-hooks.js';
import { runUpdateHooks } from './source-hooks-update.js';
import { SourceSlugs, slugify } from './source-slugs.js';
import type { EventRouter } from '../commit/routing.js';
import type { Transaction } from 'kysely';
import type { Database } from '../store/schema.js';
import { parseHttpUrl } from '../delivery/outbound.js';
import { quote } from '../runtime/worker/quote.js';

/** The spec's Source resource; `user_id` only where the spec shows it (create, update). */
export interface SourceView {
  id: string;
  user_id?: string;
  component_id: string;
  configured_props: Record<string, unknown>;
  active: boolean;
  created_at: number;
  updated_at: number;
  name: string;
  name_slug: string;
}

export interface SourceRequest {
  component_id?: string | undefined;
  component_code?: string | undefined;
  component_url?: string | undefined;
  key?: string | undefined;
  name?: string | undefined;
  configured_props?: Record<string, unknown> | undefined;
  active?: boolean | undefined;
}

export interface SourceSettings {
  minTimerInterval: number;
  eventRetention: number;
  /** Timer due times and event times are read from it. */
  clock: Clock;
  limiter: AccountLimiter;
}

/** Everything needed to run code of a source: its row, its component and what the runtime learned of it. */
export interface SourceRuntimeView {
  source: sources.SourceRow;
  component: ComponentRow;
  /** The component's, with the props its additionalProps() added for this source. */
  info: ComponentInfo;
}

/** Runs inside the transaction that creates a source (auto-subscriptions are materialised this way). */
export type SourceCreationStep = (trx: Transaction<Database>, source: sources.SourceRow) => Promise<void>;

/** Called after a change to a source commits. */
export type SourceChangeListener = (change: { sourceId: string; kind: 'upsert' | 'delete' }) => void;

function hasHttp(info: ComponentInfo): boolean {
  return info.props.some((p) => p.type === '$.interface.http');
}

/** The timer rows of a source as it now is: one per timer prop while active, none while inactive. */
function timerRowsFor(source: sources.SourceRow, info: ComponentInfo, nowMs: number): TimerRow[] {
  if (source.active !== 1) return [];
  const stored = JSON.parse(source.configured_props) as Record<string, TimerSchedule | undefined>;
  return info.props.flatMap((p) => {
    const schedule = stored[p.name];
    if (p.type !== '$.interface.timer' || !schedule) return [];
    return [{ source_id: source.id, prop_name: p.name, user_id: source.user_id, schedule: JSON.stringify(schedule), next_due_ms: firstDue(schedule, nowMs) }];
  });
}

/** The columns an update may change, other than updated_at itself. */
const SOURCE_FIELDS = ['component_id', 'name', 'active', 'configured_props', 'endpoint_id', 'additional_props'] as const;

export class SourceService {
  private readonly listeners: SourceChangeListener[] = [];
  private readonly creationSteps: SourceCreationStep[] = [];
  private readonly hooks: SourceHooks;
  private readonly deployProps: DeployPropsResolver;
  private readonly slugs: SourceSlugs;

  constructor(
    private readonly store: Store,
    private readonly components: ComponentService,
    runtime: ComponentRuntime,
    secrets: SecretBox,
    private readonly locks: SourceLocks,
    private readonly bases: InvocationBases,
    private readonly router: EventRouter,
    private readonly settings: SourceSettings,
  ) {
    this.hooks = new SourceHooks(store, runtime, bases, settings.clock);
    this.slugs = new SourceSlugs(store);
    this.deployProps = new DeployPropsResolver(store, secrets, { minTimerIntervalSeconds: settings.minTimerInterval });
  }

  /** Where deploys learn the props `additionalProps()` adds (the prop configuration service, wired in app.ts). */
  useAdditionalProps(reloader: PropsReloader): void {
    this.deployProps.useReloader(reloader);
  }

  onChange(listener: SourceChangeListener): void {
    this.listeners.push(listener);
  }

  onCreateInTransaction(step: SourceCreationStep): void {
    this.creationSteps.push(step);
  }

  toView(row: sources.SourceRow, info: ComponentInfo, withUserId: boolean): SourceView {
    const view: SourceView = {
      id: row.id,
      component_id: row.component_id,
      configured_props: echoProps(info.props, JSON.parse(row.configured_props), this.bases.endpointUrl(row.endpoint_id), this.settings.clock.now()),
      active: row.active === 1,
      created_at: row.created_at,
      updated_at: row.updated_at,
      name: row.name,
      name_slug: row.name_slug,
    };
    return withUserId ? { ...view, user_id: row.user_id } : view;
  }

  async list(accountId: string, page: PageRequest): Promise<Page<SourceView>> {
    const result = await sources.listSources(this.store.db, accountId, page);
    const infos = new Map<string, ComponentInfo>();
    for (const row of result.items) {
      if (!infos.has(row.component_id)) infos.set(row.component_id, componentInfo((await loadComponent(this.store.db, row.component_id))!));
    }
    return { ...result, items: result.items.map((row) => this.toView(row, sources.sourceInfo(infos.get(row.component_id)!, row), false)) };
  }

  /** GET /sources/{id}: one source as lists show it. */
  async view(accountId: string, sourceId: string): Promise<SourceView> {
    const { source, info } = await this.get(accountId, sourceId);
    return this.toView(source, info, false);
  }

  /** The source with its component, or 404 for a missing id or another account's source. */
  async get(accountId: string, sourceId: string): Promise<SourceRuntimeView> {
    const source = isId(sourceId, 'dc') ? await sources.findSource(this.store.db, accountId, sourceId) : undefined;
    if (!source) throw notFound(`source ${quote(sourceId)}`);
    const component = (await loadComponent(this.store.db, source.component_id))!;
    return { source, component, info: sources.sourceInfo(componentInfo(component), source) };
  }

  /** The component a create or update request names: component_id, then code, then URL, then a registry key. */
  private async resolveComponent(accountId: string, request: SourceRequest): Promise<{ component: ComponentRow; unsaved: boolean } | undefined> {
    // A blank id, key or code names nothing: said as such (400) whichever field wins, not looked up as an unknown id (404).
    for (const field of ['component_id', 'component_code', 'key'] as const) {
      if (request[field]?.trim() === '') throw invalid(`${field} is empty`);
    }
    // component_id wins, and a component_url beside it is only metadata, but it must still be a URL.
    if (request.component_url !== undefined) parseHttpUrl(request.component_url, 'component_url');
    if (request.component_id !== undefined) return { component: await this.components.get(accountId, request.component_id), unsaved: false };
    if (request.component_code !== undefined || request.component_url !== undefined) {
      // Saved with the source, in its transaction: a deploy refused later (props, a hook) leaves no component behind.
      return { component: await this.components.prepare(accountId, { code: request.component_code, url: request.component_url }), unsaved: true };
    }
    if (request.key !== undefined) return { component: await this.components.getRegistry(accountId, request.key), unsaved: false };
    return undefined;
  }

  async create(accountId: string, request: SourceRequest): Promise<SourceView> {
    await this.settings.limiter.assertRoomNow(accountId, 'sources');
    const resolved = await this.resolveComponent(accountId, request);
    if (!resolved) throw invalid('one of component_id, component_code, component_url or key is required');
    const { component, unsaved } = resolved;
    const deployed = this.deployable(component);
    const given = request.configured_props ?? {};
    const props = await this.deployProps.resolve({ accountId, component, info: deployed, given, previous: {}, previousAdditional: undefined });
    const { stored } = props;
    const info = { ...deployed, props: props.props };
    await checkAuthProvisions(this.store, accountId, info.props, stored);
    await checkDataStoreNames(this.store, accountId, info.props, stored);
    const name = request.name ?? slugify(info.name);
    if (typeof name !== 'string' || name.trim() === '') throw invalid('name must be a non-empty string');
    const now = nowSeconds();
    const row: sources.SourceRow = {
      id: newId('dc'),
      user_id: accountId,
      component_id: component.id,
      name,
      name_slug: await this.slugs.unique(accountId, name),
      active: 1,
      configured_props: JSON.stringify(stored),
      endpoint_id: hasHttp(info) ? newEndpointId() : null,
      additional_props: props.additional ? JSON.stringify(props.additional) : null,
      created_at: now,
      updated_at: now,
    };
    // Under the source's lock until it is committed: an error activate()'s timers throw meanwhile waits for the source.
    const committed = await this.locks.exclusive(row.id, async () => {
      const hooks = await this.hooks.run(row, component, info, ['deploy', 'activate'], {});
      try {
        return await this.slugs.withFresh(row, name, () =>
          this.store.db.transaction().execute(async (trx) => {
            await this.settings.limiter.assertRoom(trx, accountId, 'sources');
            await holdAuthProvisions(trx, this.store.dialect, accountId, [stored]);
            if (unsaved) await this.components.insertPrepared(trx, component);
            await sources.insertSource(trx, row);
            for (const step of this.creationSteps) await step(trx, row);
            await replaceTimers(trx, row.id, timerRowsFor(row, info, this.settings.clock.now()));
            return commitEffects(trx, { sourceId: row.id, userId: accountId, depth: 0, info, ...hooks }, this.effectsOptions());
          }),
        );
      } catch (error) {
        // The source never came to be (a create racing past the account's limit, an outage): what activate() set up
        // outside, such as a webhook registered with another service, is taken down again.
        if (info.hooks.activate && info.hooks.deactivate) await this.hooks.undo(row, component, info, hooks, {}).catch(() => undefined);
        throw error;
      }
    });
    this.router.afterCommit(committed);
    this.emitChange({ sourceId: row.id, kind: 'upsert' });
    return this.toView(row, info, true);
  }

  /**
   * PUT (`replace`), as the specification has it: one of the code fields is required, `name` defaults to the
   * component's name slug and `active` to true. PATCH (`patch`, an extension): every omitted field keeps its
   * value. In both, omitted `configured_props` keep the stored ones.
   */
  async update(accountId: string, sourceId: string, request: SourceRequest, mode: 'replace' | 'patch'): Promise<SourceView> {
    const current = await this.get(accountId, sourceId);
    const resolved = await this.resolveComponent(accountId, request);
    const named = resolved?.component;
    if (!named && mode === 'replace') {
      throw invalid('one of component_id, component_code, component_url or key is required (PATCH /v1/sources/{id} changes only the fields it is given)');
    }
    const component = named ?? current.component;
    const deployed = this.deployable(component);
    const previous = JSON.parse(current.source.configured_props) as Record<string, unknown>;
    // The added props stored hold for the same component only; another one has its own additionalProps().
    const previousAdditional = component.id === current.component.id ? sources.additionalPropsOf(current.source) : undefined;
    const given = request.configured_props ?? this.reusableProps(withAdditionalProps(deployed.props, previousAdditional), previous);
    const { props: previousProps } = current.info;
    const props = await this.deployProps.resolve({ accountId, component, info: deployed, given, previous, previousProps, previousAdditional });
    const { stored } = props;
    const info = { ...deployed, props: props.props };
    const wasActive = current.source.active === 1;
    const active = request.active ?? (mode === 'replace' ? true : wasActive);
    // A source left off with its stored props runs nothing: switching it off or renaming it must not need the
    // accounts those props name (one a forced delete removed, say).
    const checksAccounts = active || request.configured_props !== undefined;
    if (checksAccounts) await checkAuthProvisions(this.store, accountId, info.props, stored);
    if (request.configured_props !== undefined) await checkDataStoreNames(this.store, accountId, info.props, stored);
    const name = request.name ?? (mode === 'replace' ? slugify(info.name) : current.source.name);
    if (name.trim() === '') throw invalid('name must be a non-empty string');
    const next: sources.SourceRow = {
      ...current.source,
      component_id: component.id,
      name,
      name_slug: name === current.source.name ? current.source.name_slug : await this.slugs.unique(accountId, name, current.source.name_slug),
      active: active ? 1 : 0,
      configured_props: JSON.stringify(stored),
      // An endpoint stays with the source for life: code without an HTTP prop keeps it (a 404 meanwhile), and code
      // with one again serves it again, so clients posting to it need no new URL.
      endpoint_id: current.source.endpoint_id ?? (hasHttp(info) ? newEndpointId() : null),
      additional_props: props.additional ? JSON.stringify(props.additional) : null,
      updated_at: nowSeconds(),
    };
    // updated_at says when the source last changed: a PUT that sends what is stored leaves it (hooks still run).
    if (SOURCE_FIELDS.every((field) => next[field] === current.source[field])) next.updated_at = current.source.updated_at;
    const committed = await this.locks.exclusive(sourceId, async () => {
      const db = await sources.readSourceDb(this.store.db, sourceId);
      // deactivate() runs with the code and props being replaced; activate() with the new ones.
      const hooked = { current, next: { source: next, component, info }, wasActive, active, db };
      const restore = async (restored: HookEffects) => {
        const input = { sourceId, userId: accountId, depth: 0, info: current.info, ...restored };
        this.router.afterCommit(await retryingDeadlocks(() => this.store.db.transaction().execute((trx) => commitEffects(trx, input, this.effectsOptions()))));
      };
      // Another node's batch commit holds the source's row while it commits (holdSourceAsRun): a crossing of the two
      // that PostgreSQL ends as a deadlock is tried again.
      const save = (effects: HookEffects) =>
        this.slugs.withFresh(next, name, () =>
          retryingDeadlocks(() =>
            this.store.db.transaction().execute(async (trx) => {
              if (checksAccounts) await holdAuthProvisions(trx, this.store.dialect, accountId, [stored]);
              if (resolved?.unsaved) await this.components.insertPrepared(trx, component);
              await sources.updateSource(trx, sourceId, next);
              await replaceTimers(trx, sourceId, timerRowsFor(next, info, this.settings.clock.now()));
              return commitEffects(trx, { sourceId, userId: accountId, depth: 0, info, ...effects }, this.effectsOptions());
            }),
          ),
        );
      return runUpdateHooks(this.hooks, hooked, save, restore);
    });
    this.router.afterCommit(committed);
    this.emitChange({ sourceId, kind: 'upsert' });
    return this.toView(next, info, true);
  }

  async delete(accountId: string, sourceId: string): Promise<void> {
    const current = await this.get(accountId, sourceId);
    await this.locks.exclusive(sourceId, async () => {
      let off: HookEffects | undefined;
      if (current.source.active === 1) {
        const db = await sources.readSourceDb(this.store.db, sourceId);
        off = await this.hooks.run(current.source, current.component, current.info, ['deactivate'], db);
      }
      // The source's events, logs and db go with it; the account's data stores stay, with what deactivate() wrote.
      await this.store.db.transaction().execute(async (trx) => {
        await writeDataStores(trx, accountId, off?.dataStoreWrites, this.settings.clock.now());
        await sources.deleteSourceCascade(trx, sourceId);
      });
    });
    this.emitChange({ sourceId, kind: 'delete' });
  }

  private emitChange(change: Parameters<SourceChangeListener>[0]): void {
    for (const listener of this.listeners) listener(change);
  }

  /** Stored props as they can be validated again on update (secrets stay sealed, timers keep their schedule). */
  private reusableProps(props: PropDescriptor[], previous: Record<string, unknown>): Record<string, unknown> {
    const known = new Set(props.filter((p) => p.type !== '$.interface.http' && p.type !== '$.service.db').map((p) => p.name));
    return Object.fromEntries(
      Object.entries(previous)
        .filter(([name]) => known.has(name))
        .map(([name, value]) => [name, props.find((p) => p.name === name)?.secret ? SECRET_PLACEHOLDER : value]),
    );
  }

  private deployable(component: ComponentRow): ComponentInfo {
    const info = componentInfo(component);
    if (info.type === 'action') {
      throw new ServiceError('component_invalid', `component ${quote(info.key ?? info.name)} is an action; only sources can be deployed`);
    }
    return info;
  }

  private effectsOptions() {
    return { dialect: this.store.dialect, retention: this.settings.eventRetention, nowMs: this.settings.clock.now(), router: this.router };
  }
}
