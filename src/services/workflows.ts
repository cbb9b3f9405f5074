// Workflows (an extension of the REST interface): define, change and delete them, start runs, and read runs back.
import type { AccountLimiter } from './account-limits.js';
import type { Transaction } from 'kysely';
import type { Clock } from '../lib/clock.js';
import type { SecretBox } from '../lib/secrets.js';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import * as workflows from '../store/workflows.js';
import { lockAccount } from '../store/account-limits.js';
import { componentInfo, type ComponentRow } from '../store/components.js';
import type { ComponentInfo } from '../runtime/types.js';
import { replaceTimers } from '../store/timers.js';
import { retryingDeadlocks } from '../store/deadlocks.js';
import { isId, newEndpointId, newId, nowSeconds } from '../model/ids.js';
import { endpointUrl } from '../model/endpoints.js';
import { invalid, notFound, ServiceError } from '../model/errors.js';
import type { Page, PageRequest } from '../model/pagination.js';
import { echoProps, withAdditionalProps } from '../model/props.js';
import { isTemplate, isTemplatePath, isUnreadablePath, templateExpressions } from '../model/templates.js';
import { DEFAULT_RUN_TIMEOUT_SECONDS, MAX_STEPS, stepNameProblems, storedTrigger, type StoredStep, type WorkflowTrigger } from '../model/workflows.js';
import type { ComponentService, SaveProgressListener } from './components.js';
import { checkAuthProvisions, holdAuthProvisions } from './auth-provisions.js';
import { checkDataStoreNames } from './data-store-props.js';
import { DeployPropsResolver, type PropsReloader } from './deploy-props.js';
import { applyTrigger, checkTrigger, normalizeTrigger, type TriggerRequest } from './workflow-triggers.js';
import { quote, shorten } from '../runtime/worker/quote.js';

export interface StepRequest {
  name: string;
  component_code?: string | undefined;
  component_id?: string | undefined;
  component_key?: string | undefined;
  configured_props?: Record<string, unknown> | undefined;
}

export interface WorkflowRequest {
  name?: string | undefined;
  trigger?: TriggerRequest | null | undefined;
  steps?: StepRequest[] | undefined;
  active?: boolean | undefined;
  timeout_seconds?: number | undefined;
}

export interface WorkflowView {
  id: string;
  name: string;
  active: boolean;
  /** The trigger as given; an HTTP trigger also shows its `endpoint_url`. */
  trigger: (WorkflowTrigger & { endpoint_url?: string }) | null;
  steps: Array<{ name: string; component_id: string; configured_props: Record<string, unknown> }>;
  timeout_seconds: number;
  created_at: number;
  updated_at: number;
}

export interface WorkflowSettings {
  publicUrl: string;
  minTimerInterval: number;
  clock: Clock;
  limiter: AccountLimiter;
}

/** Called after a workflow change commits. */
export type WorkflowChangeListener = (change: { workflowId: string; kind: 'upsert' | 'delete'; endpointId: string | null }) => void;

/** Runs inside the transaction that creates a workflow (auto-subscriptions are materialised this way). */
export type WorkflowCreationStep = (trx: Transaction<Database>, workflow: workflows.WorkflowRow) => Promise<void>;

/** What a step's refusals start with, on create and update alike: `steps[1] ("add"): `. */
function stepLabel(index: number, name: string): string {
  return `steps[${index}] (${quote(name)}): `;
}

/**
 * A step's component that is not found, or its code that is empty or does not load, is named with the step
 * (`steps[1] ("add"): component "sc_…" not found`): of several steps, the reason alone does not say which one to fix.
 */
async function namingStep<T>(index: number, name: string, lookUp: () => Promise<T>): Promise<T> {
  try {
    return await lookUp();
  } catch (error) {
    if (error instanceof ServiceError && (error.code === 'not_found' || error.code === 'component_invalid' || error.code === 'invalid_request'))
      throw new ServiceError(error.code, `${stepLabel(index, name)}${error.message}`, error.details);
    throw error;
  }
}

/** The columns an update may change, other than updated_at itself. */
const WORKFLOW_FIELDS = ['name', 'active', 'trigger', 'steps', 'endpoint_id', 'timeout_ms'] as const;

export class WorkflowService {
  private readonly listeners: WorkflowChangeListener[] = [];
  private readonly creationSteps: WorkflowCreationStep[] = [];
  private readonly deployProps: DeployPropsResolver;

  constructor(
    private readonly store: Store,
    private readonly components: ComponentService,
    private readonly secrets: SecretBox,
    private readonly settings: WorkflowSettings,
  ) {
    this.deployProps = new DeployPropsResolver(store, secrets, { minTimerIntervalSeconds: settings.minTimerInterval });
  }

  /** Where deploys learn the props `additionalProps()` adds (the prop configuration service, wired in app.ts). */
  useAdditionalProps(reloader: PropsReloader): void {
    this.deployProps.useReloader(reloader);
  }

  onChange(listener: WorkflowChangeListener): void {
    this.listeners.push(listener);
  }

  onCreateInTransaction(step: WorkflowCreationStep): void {
    this.creationSteps.push(step);
  }

  async list(accountId: string, page: PageRequest): Promise<Page<WorkflowView>> {
    const result = await workflows.listWorkflows(this.store.db, accountId, page);
    const items: WorkflowView[] = [];
    for (const row of result.items) items.push(await this.toView(row));
    return { ...result, items };
  }

  async get(accountId: string, workflowId: string): Promise<WorkflowView> {
    return this.toView(await this.owned(accountId, workflowId));
  }

  /** The account's workflow, or 404 for a missing id or another account's workflow. */
  async owned(accountId: string, workflowId: string): Promise<workflows.WorkflowRow> {
    const row = isId(workflowId, 'p') ? await workflows.findWorkflow(this.store.db, accountId, workflowId) : undefined;
    if (!row) throw notFound(`workflow ${quote(workflowId)}`);
    return row;
  }

  /** `onProgress` hears the npm installs of the steps' code, each naming its step. */
  async create(accountId: string, request: WorkflowRequest, onProgress?: SaveProgressListener): Promise<WorkflowView> {
    if (request.name === undefined || request.name.trim() === '') throw invalid('name is required (a non-empty string)');
    if (!request.steps) throw invalid('steps is required (an array of steps, at least one)');
    const trigger = normalizeTrigger(request.trigger ?? null);
    await checkTrigger(this.store, this.secrets, this.settings.minTimerInterval, accountId, trigger);
    await this.settings.limiter.assertRoomNow(accountId, 'workflows');
    const { steps, unsaved } = await this.resolveSteps(accountId, request.steps, [], onProgress);
    const now = nowSeconds();
    const row: workflows.WorkflowRow = {
      id: newId('p'),
      user_id: accountId,
      name: request.name,
      active: request.active === false ? 0 : 1,
      trigger: trigger ? JSON.stringify(trigger) : null,
      steps: JSON.stringify(steps),
      endpoint_id: trigger?.type === 'http' ? newEndpointId() : null,
      timeout_ms: (request.timeout_seconds ?? DEFAULT_RUN_TIMEOUT_SECONDS) * 1000,
      created_at: now,
      updated_at: now,
    };
    await this.store.db.transaction().execute(async (trx) => {
      await this.settings.limiter.assertRoom(trx, accountId, 'workflows');
      await holdAuthProvisions(
        trx,
        this.store.dialect,
        accountId,
        steps.map((step) => step.configured_props),
        steps.map((step, i) => stepLabel(i, step.name)),
      );
      for (const component of unsaved) await this.components.insertPrepared(trx, component);
      await workflows.insertWorkflow(trx, row);
      for (const step of this.creationSteps) await step(trx, row);
      await applyTrigger(trx, this.settings, row, null);
    });
    this.emitChange({ workflowId: row.id, kind: 'upsert', endpointId: row.endpoint_id });
    return this.toView(row);
  }

  /**
   * Replaces the fields given; omitted ones keep their values (steps are replaced as a whole when given). The row is
   * read again, locked, in the transaction that writes it: what another update committed meanwhile to the fields not
   * given stays, and a workflow deleted meanwhile is a 404 (no timer or subscription is set up for it).
   */
  async update(accountId: string, workflowId: string, request: WorkflowRequest, onProgress?: SaveProgressListener): Promise<WorkflowView> {
    const current = await this.owned(accountId, workflowId);
    if (request.name !== undefined && request.name.trim() === '') throw invalid('name must be a non-empty string');
    const given = request.trigger === undefined ? undefined : normalizeTrigger(request.trigger);
    const stored = storedTrigger(current);
    if (given !== undefined) await checkTrigger(this.store, this.secrets, this.settings.minTimerInterval, accountId, given, stored);
    const resolved = request.steps ? await this.resolveSteps(accountId, request.steps, JSON.parse(current.steps) as StoredStep[], onProgress) : undefined;
    const { row, previous } = await this.store.db.transaction().execute(async (trx) => {
      // The account first, as a create takes it: a source trigger's subscription counts against the account's limit.
      await lockAccount(trx, accountId);
      const previous = await workflows.lockWorkflow(trx, this.store.dialect, accountId, current.id);
      if (!previous) throw notFound(`workflow ${quote(workflowId)}`);
      const previousTrigger = storedTrigger(previous);
      const trigger = given === undefined ? previousTrigger : given;
      const row: workflows.WorkflowRow = {
        ...previous,
        name: request.name ?? previous.name,
        active: request.active === undefined ? previous.active : request.active ? 1 : 0,
        trigger: trigger ? JSON.stringify(trigger) : null,
        steps: resolved ? JSON.stringify(resolved.steps) : previous.steps,
        // An endpoint stays with the workflow for life: a trigger switched away from HTTP keeps it (answering 404 meanwhile)
        // and one switched back serves it again, so clients posting to it need no new URL.
        endpoint_id: previous.endpoint_id ?? (trigger?.type === 'http' ? newEndpointId() : null),
        timeout_ms: request.timeout_seconds === undefined ? previous.timeout_ms : request.timeout_seconds * 1000,
        updated_at: nowSeconds(),
      };
      // updated_at says when the workflow last changed: an update that sends what is stored leaves it.
      if (WORKFLOW_FIELDS.every((field) => row[field] === previous[field])) row.updated_at = previous.updated_at;
      // Stored steps only when it is on after this: a forced delete left it off naming an account that is gone, which
      // renaming it or switching it off must not need, but switching it on must (a 404 naming it, as for a source).
      const checked = resolved?.steps ?? (row.active === 1 ? (JSON.parse(previous.steps) as StoredStep[]) : []);
      await holdAuthProvisions(
        trx,
        this.store.dialect,
        accountId,
        checked.map((step) => step.configured_props),
        checked.map((step, i) => stepLabel(i, step.name)),
      );
      for (const component of resolved?.unsaved ?? []) await this.components.insertPrepared(trx, component);
      const { name, active, steps, endpoint_id, timeout_ms, updated_at } = row;
      await workflows.updateWorkflow(trx, row.id, { name, active, trigger: row.trigger, steps, endpoint_id, timeout_ms, updated_at });
      await applyTrigger(trx, this.settings, row, previousTrigger);
      return { row, previous };
    });
    this.emitChange({ workflowId: row.id, kind: 'upsert', endpointId: previous.endpoint_id });
    return this.toView(row);
  }

  /**
   * 404 also for a workflow that a concurrent delete took first. On PostgreSQL the delete may cross a group commit
   * that queued a run of the workflow (holding its row) and then waits for one of its runs, which the delete has
   * removed: the deadlock's victim, when it is the delete, is tried again.
   */
  async delete(accountId: string, workflowId: string): Promise<void> {
    const current = await this.owned(accountId, workflowId);
    await retryingDeadlocks(() =>
      this.store.db.transaction().execute(async (trx) => {
        if (!(await workflows.lockWorkflow(trx, this.store.dialect, accountId, current.id))) throw notFound(`workflow ${quote(workflowId)}`);
        await replaceTimers(trx, current.id, []);
        await workflows.deleteWorkflowCascade(trx, current.id);
      }),
    );
    this.emitChange({ workflowId: current.id, kind: 'delete', endpointId: current.endpoint_id });
  }

  private emitChange(change: Parameters<WorkflowChangeListener>[0]): void {
    for (const listener of this.listeners) listener(change);
  }

  /**
   * Each step's component: code (a code step or an action), a saved component, or a registry key. The components of
   * code come back `unsaved`, to be stored in the workflow's transaction: a refused step saves none of them.
   */
  private async resolveSteps(
    accountId: string,
    requested: StepRequest[],
    previous: StoredStep[],
    onProgress: SaveProgressListener | undefined,
  ): Promise<{ steps: StoredStep[]; unsaved: ComponentRow[] }> {
    if (!requested.length) throw invalid('steps must hold at least one step');
    if (requested.length > MAX_STEPS) throw invalid(`a workflow has at most ${MAX_STEPS} steps, not ${requested.length}`);
    const nameProblems = stepNameProblems(requested.map((s) => s.name));
    if (nameProblems.length) throw invalid(nameProblems.join('; '));
    const steps: StoredStep[] = [];
    const unsaved: ComponentRow[] = [];
    for (const [i, step] of requested.entries()) {
      const given = [step.component_code, step.component_id, step.component_key].filter((v) => v !== undefined).length;
      if (given !== 1) throw invalid(`${stepLabel(i, step.name)}give exactly one of component_code, component_id or component_key`);
      let component: ComponentRow;
      if (step.component_code !== undefined) {
        const stepProgress = onProgress && ((progress: Parameters<SaveProgressListener>[0]) => onProgress({ ...progress, workflowStep: step.name }));
        const code = step.component_code;
        component = await namingStep(i, step.name, () => this.components.prepareStep(accountId, code, stepProgress));
        unsaved.push(component);
      } else {
        component = await namingStep(i, step.name, () => {
          // A blank id or key names nothing: said as such (400), as a source's is, not looked up as an unknown one (404).
          const [field, named] = step.component_id !== undefined ? ['component_id', step.component_id] : ['component_key', step.component_key!];
          if (named.trim() === '') throw invalid(`${field} is empty`);
          return step.component_id !== undefined ? this.components.get(accountId, named) : this.components.getRegistry(accountId, named);
        });
      }
      const info = componentInfo(component);
      if (info.type !== 'action') {
        throw new ServiceError(
          'component_invalid',
          `${stepLabel(i, step.name)}component ${quote(component.id)} is a source; a step is an action or a code step`,
        );
      }
      // What was stored for this step and component: secrets kept by their placeholder, and the props it added.
      const kept = await this.keptStep(previous, step.name, component);
      const { configured, additional, props } = await this.checkStepProps(
        accountId,
        i,
        step,
        component,
        info,
        kept,
        new Set(requested.slice(0, i).map((s) => s.name)),
      );
      await checkAuthProvisions(this.store, accountId, props, configured, stepLabel(i, step.name));
      await checkDataStoreNames(this.store, accountId, props, configured, stepLabel(i, step.name));
      steps.push({ name: step.name, component_id: component.id, configured_props: configured, ...(additional && { additional_props: additional }) });
    }
    return { steps, unsaved };
  }

  /**
   * The stored step this one replaces: the same name and the same code. A code step is saved anew on every update,
   * so the code's hash, not the component id, says it is the same (and that its stored secrets and added props hold).
   */
  private async keptStep(previous: StoredStep[], name: string, component: ComponentRow): Promise<StoredStep | undefined> {
    const stored = previous.find((p) => p.name === name);
    if (!stored) return undefined;
    if (stored.component_id === component.id) return stored;
    const storedComponent = await this.components.byId(stored.component_id);
    return storedComponent?.code_hash === component.code_hash ? stored : undefined;
  }

  /**
   * Props are checked as for sources, against the full list (with what additionalProps() adds), except template
   * values, which reach the step as evaluated, unchecked, as in the reference service (and which additionalProps()
   * cannot see at deploy).
   */
  private async checkStepProps(
    accountId: string,
    index: number,
    step: StepRequest,
    component: ComponentRow,
    info: ComponentInfo,
    kept: StoredStep | undefined,
    earlier: ReadonlySet<string>,
  ) {
    const given = step.configured_props ?? {};
    const templates: Record<string, string> = {};
    for (const [name, value] of Object.entries(given)) if (isTemplate(value)) templates[name] = value;
    // Every template, at the top or inside an array or object: a nested one that is not a path reached the step as
    // its own text, braces and all.
    const found = Object.entries(given).flatMap(([name, value]) => templateExpressions(value, `configured_props.${name}`));
    const bad = found.find(({ expression }) => !isTemplatePath(expression));
    if (bad)
      throw invalid(`${stepLabel(index, step.name)}${shorten(bad.at)}: ${quote(`{{ ${bad.expression} }}`)} is not a path such as steps.trigger.event.body`);
    const unreadable = found.find(({ expression }) => isUnreadablePath(expression, earlier));
    if (unreadable) {
      const readable = ['steps.trigger', ...[...earlier].map((step) => `steps.${step}`)].join(', ');
      throw invalid(
        `${stepLabel(index, step.name)}${shorten(unreadable.at)}: ${quote(`{{ ${unreadable.expression} }}`)} reads no step before this one; a template reads one of ${readable}`,
      );
    }
    const resolved = await this.deployProps.resolve({
      accountId,
      component,
      info,
      given,
      previous: kept?.configured_props ?? {},
      // A kept step has the same code: its props then were these, with what additionalProps() added.
      previousProps: kept ? withAdditionalProps(info.props, kept.additional_props) : [],
      previousAdditional: kept?.additional_props,
      deferred: new Set(Object.keys(templates)),
      label: stepLabel(index, step.name),
    });
    const unknown = Object.keys(templates).filter((name) => !resolved.props.some((p) => p.name === name));
    // Said as the other props' refusals are (deployProps), with a detail for each, so that clients show them alike.
    if (unknown.length)
      throw new ServiceError(
        'props_invalid',
        `${stepLabel(index, step.name)}invalid configured_props: ${unknown.map((name) => `${shorten(name)} is not a prop of this component`).join('; ')}`,
        unknown.map((prop) => ({ prop: shorten(prop), message: 'is not a prop of this component' })),
      );
    return { ...resolved, configured: { ...resolved.stored, ...templates } };
  }

  private async toView(row: workflows.WorkflowRow): Promise<WorkflowView> {
    const trigger = storedTrigger(row);
    const steps = JSON.parse(row.steps) as StoredStep[];
    const shown: WorkflowView['steps'] = [];
    for (const step of steps) {
      const component = await this.components.byId(step.component_id);
      const props = component
        ? echoProps(withAdditionalProps(componentInfo(component).props, step.additional_props), step.configured_props, undefined, this.settings.clock.now())
        : {};
      // Templates are shown as written.
      for (const [name, value] of Object.entries(step.configured_props)) if (isTemplate(value)) props[name] = value;
      shown.push({ name: step.name, component_id: step.component_id, configured_props: props });
    }
    return {
      id: row.id,
      name: row.name,
      active: row.active === 1,
      trigger: trigger?.type === 'http' ? { ...trigger, endpoint_url: endpointUrl(this.settings.publicUrl, String(row.endpoint_id)) } : trigger,
      steps: shown,
      timeout_seconds: row.timeout_ms / 1000,
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }
}
