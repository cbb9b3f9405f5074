// Prop configuration: a component's prop choices (`options()`) and its full prop list (`additionalProps()`), asked of
// the account's sandbox with the configured values; what goes wrong is answered as errors, never as a failure.
import type { Clock } from '../lib/clock.js';
import type { Store } from '../store/database.js';
import { componentInfo, type ComponentRow } from '../store/components.js';
import { readDataStores } from '../store/data-stores.js';
import type { ComponentRuntime } from '../runtime/index.js';
import type { ComponentInfo, ConfigureRequest, PropDescriptor, PropOption, UnusableChoices } from '../runtime/types.js';
import { additionalPropProblems, addedProps, choiceTypeProblem, dataStoreName, dataStoreNames, type PropProblem, propsInvalid } from '../model/props.js';
import { configuredValues } from '../model/configured-values.js';
import type { PropRules } from '../model/timer-checks.js';
import { checkDataStoreNames } from './data-store-props.js';
import { ServiceError } from '../model/errors.js';
import type { ComponentService } from './components.js';
import { checkAuthProvisions } from './auth-provisions.js';
import { ComputeBilling } from '../commit/usage.js';
import { quote } from '../runtime/worker/quote.js';
import { flawIn, wellFormed } from '../model/storable-text.js';

/**
 * `$auth` of each app prop for the configured values (`{ authProvisionId }`), as `run` would see it. The connected
 * accounts service provides it (wired in app.ts); until then every app prop gets `{}`. What it throws (an unknown or
 * foreign account, a failed refresh) is answered as an error.
 */
export type ConfigureAuths = (
  accountId: string,
  props: PropDescriptor[],
  configured: Record<string, unknown>,
) => Promise<Record<string, Record<string, unknown>>>;

/** The body of both endpoints; `page`, `prev_context` and `query` only matter to options. */
export interface ConfigureBody {
  configured_props?: Record<string, unknown> | undefined;
  page?: number | undefined;
  prev_context?: Record<string, unknown> | string | null | undefined;
  query?: string | undefined;
}

/** `options` are strings when every choice is one, else `{ label, value }` each. */
export interface PropOptionsView {
  options: string[] | Array<{ label: string; value: unknown }>;
  context: Record<string, unknown> | null;
  errors: string[];
}

export interface ReloadPropsView {
  configurable_props: PropDescriptor[];
  errors: string[];
}

const noAuths: ConfigureAuths = async (_accountId, props) => Object.fromEntries(props.filter((p) => p.type === 'app').map((p) => [p.name, {}]));

/**
 * A choice whose value holds text the API refuses (an unpaired surrogate, a NUL), or that the prop's type refuses (an
 * object for a `string` prop), could never be deployed: it is left out, and the answer says so, rather than offered to
 * fail at the deploy. So were, in the worker, the entries that are no choice at all (`unusable`: a null among them).
 * `prop`: the prop when the server knows it (not one only additionalProps() declares).
 */
function shapeOptions(given: PropOption[], errors: string[], prop?: PropDescriptor, unusable?: UnusableChoices): Pick<PropOptionsView, 'options' | 'errors'> {
  const options: PropOption[] = [];
  let left = 0;
  let flaw: string | undefined;
  let mistyped = 0;
  let typeProblem: string | undefined;
  for (const option of given) {
    const value = typeof option === 'object' ? option.value : option;
    const found = flawIn(value, 'value');
    const problem = found || !prop ? undefined : choiceTypeProblem(prop, value);
    if (found) {
      left++;
      flaw ??= found.flaw;
    } else if (problem) {
      mistyped++;
      typeProblem ??= problem;
    } else {
      // A label is only shown: one that is not well-formed text shows U+FFFD where its unpaired surrogates were.
      options.push(typeof option === 'object' ? { label: wellFormed(option.label), value: option.value } : option);
    }
  }
  const were = (n: number) => `${n} of the choices options() gave ${n === 1 ? 'was' : 'were'} left out`;
  const said = [...errors];
  if (unusable) said.push(`${were(unusable.count)}: ${unusable.reason}`);
  if (left) said.push(`${were(left)}: a value holds ${flaw}; a deploy refuses such a value`);
  if (mistyped) said.push(`${were(mistyped)}: a value is not what a prop of type ${prop?.type} takes (${typeProblem}); a deploy refuses such a value`);
  if (options.every((option) => typeof option === 'string')) return { options: options as string[], errors: said };
  return { options: options.map((option) => (typeof option === 'object' ? option : { label: String(option), value: option })), errors: said };
}

/** `prev_context` is the `context` the previous page returned; a bare string is taken as its `nextPageToken`. */
function prevContextOf(given: ConfigureBody['prev_context']): Record<string, unknown> {
  if (typeof given === 'string') return { nextPageToken: given };
  return given ?? {};
}

export class PropConfigurationService {
  private auths: ConfigureAuths = noAuths;
  /** The worker's CPU time for options() and additionalProps() counts as the account's compute, as runs and hooks do. */
  private readonly compute: ComputeBilling;

  constructor(
    private readonly store: Store,
    private readonly components: ComponentService,
    private readonly runtime: ComponentRuntime,
    private readonly clock: Clock,
    /** The operator's rules a deploy holds values to (--min-timer-interval): the values given here are held to them too. */
    private readonly rules: PropRules,
  ) {
    this.compute = new ComputeBilling(store.db, clock);
  }

  /** Where app props get their `$auth` from (the seam for connected accounts). */
  useAuths(auths: ConfigureAuths): void {
    this.auths = auths;
  }

  /** POST /components/{id}/props/{prop}/options: 404 only for a component the account cannot see. */
  async options(accountId: string, componentId: string, propName: string, body: ConfigureBody): Promise<PropOptionsView> {
    const row = await this.components.get(accountId, componentId);
    const info = componentInfo(row);
    const prop = info.props.find((p) => p.name === propName);
    const configured = await this.checked(accountId, info, body.configured_props ?? {});
    const fail = (error: string): PropOptionsView => ({ options: [], context: null, errors: [...configured.errors, error] });
    // A prop only additionalProps() declares is looked up in the worker.
    if (!prop && !info.additionalProps) return fail(`${quote(propName)} is not a prop of this component`);
    if (prop && !prop.remoteOptions) {
      // Static choices are in configurable_props already; they are answered here too, without a worker.
      const problem = await this.accountProblem(accountId, info, configured.values);
      if (problem) return fail(problem);
      return prop.options ? { ...shapeOptions(prop.options, configured.errors, prop), context: null } : fail(`prop ${quote(propName)} has no options`);
    }
    const request = await this.request(accountId, row.code, info, configured.values);
    if (typeof request === 'string') return fail(request);
    const query = { prop: propName, page: body.page ?? 0, prevContext: prevContextOf(body.prev_context), query: body.query };
    const result = await this.runtime.propOptions(request, query);
    await this.compute.bill(accountId, result.cpuMs);
    return { ...shapeOptions(result.options, [...configured.errors, ...result.errors], prop, result.unusable), context: result.context };
  }

  /** POST /components/{id}/props/reload: the static props, then what additionalProps() returns for these values. */
  async reload(accountId: string, componentId: string, body: ConfigureBody): Promise<ReloadPropsView> {
    const row = await this.components.get(accountId, componentId);
    const info = componentInfo(row);
    const configured = await this.checked(accountId, info, body.configured_props ?? {});
    const answer = await this.reloadFor(accountId, row, configured.values);
    // An added prop of a type a deploy refuses (an interface, a db, an app) is listed, and said to be refused, before
    // a form asks for a value no deploy takes.
    const refused = additionalPropProblems(addedProps(info.props, answer.configurable_props)).map((p) => `${quote(p.prop)} ${p.message}`);
    return { configurable_props: answer.configurable_props, errors: [...configured.errors, ...answer.errors, ...refused] };
  }

  /**
   * The configured values options() and additionalProps() are given: those a deploy would take (configured-values.ts),
   * and why the others were left out, in one entry worded as a deploy's 422. A data_store prop given the id of one of
   * the account's stores is left out too, as a deploy refuses it: the code would read an empty store named after the id.
   * Deploys ask reloadFor() with what they were given, and answer every problem in their own 422.
   */
  private async checked(
    accountId: string,
    info: ComponentInfo,
    given: Record<string, unknown>,
  ): Promise<{ values: Record<string, unknown>; errors: string[] }> {
    const { values, problems } = configuredValues(info.props, given, this.rules, info.additionalProps === true);
    try {
      await checkDataStoreNames(this.store, accountId, info.props, values);
    } catch (error) {
      if (!(error instanceof ServiceError) || error.code !== 'props_invalid') throw error;
      for (const problem of (error.details ?? []) as PropProblem[]) {
        problems.push(problem);
        delete values[problem.prop];
      }
    }
    return { values, errors: problems.length ? [propsInvalid(problems).message] : [] };
  }

  /** As `reload`, for a component the caller already holds (deploys of sources and workflow steps). */
  async reloadFor(accountId: string, row: ComponentRow, configured: Record<string, unknown>): Promise<ReloadPropsView> {
    const info = componentInfo(row);
    if (!info.additionalProps) {
      const problem = await this.accountProblem(accountId, info, configured);
      return { configurable_props: info.props, errors: problem ? [problem] : [] };
    }
    const request = await this.request(accountId, row.code, info, configured);
    if (typeof request === 'string') return { configurable_props: info.props, errors: [request] };
    const result = await this.runtime.reloadProps(request);
    await this.compute.bill(accountId, result.cpuMs);
    return { configurable_props: result.props ?? info.props, errors: result.errors };
  }

  /**
   * Why the connected accounts `configured` names cannot serve this component (unknown, another account's, of another
   * app), as a deploy would refuse them; undefined when they can. Where no worker is asked, nothing else checks them.
   */
  private async accountProblem(accountId: string, info: ComponentInfo, configured: Record<string, unknown>): Promise<string | undefined> {
    try {
      await checkAuthProvisions(this.store, accountId, info.props, configured);
      return undefined;
    } catch (error) {
      if (error instanceof ServiceError) return error.message;
      throw error;
    }
  }

  /** The worker request for these configured values, or why it cannot be made. */
  private async request(accountId: string, code: string, info: ComponentInfo, configured: Record<string, unknown>): Promise<ConfigureRequest | string> {
    const props: Record<string, unknown> = { ...configured };
    for (const prop of info.props) {
      if (prop.type === 'data_store' && Object.hasOwn(props, prop.name)) props[prop.name] = dataStoreName(props[prop.name]);
    }
    let auths: Record<string, Record<string, unknown>>;
    try {
      auths = await this.auths(accountId, info.props, configured);
    } catch (error) {
      // An unknown or foreign account, a failed OAuth refresh: the client is told, as for any other failure.
      return error instanceof ServiceError || error instanceof Error ? error.message : String(error);
    }
    const names = dataStoreNames(info.props, props);
    const request: ConfigureRequest = { accountId, component: await this.runtime.prepare(code), asStep: info.type === 'action', props, auths };
    if (names.length) request.dataStores = await readDataStores(this.store.db, accountId, names, this.clock.now());
    return request;
  }
}
