// A deploy's configured_props (a source's or a workflow step's) checked against the component's full prop list: its
// static props plus what `additionalProps()` returns for the answers given, asked of the sandbox when those change.
import { bindings, propSealer, SecretBox, UnreadableSecretError } from '../lib/secrets.js';
import type { Store } from '../store/database.js';
import type { ComponentRow } from '../store/components.js';
import type { ComponentInfo, PropDescriptor } from '../runtime/types.js';
import { configuredValues } from '../model/configured-values.js';
import { ServiceError } from '../model/errors.js';
import type { PropRules } from '../model/timer-checks.js';
import { addedProps, additionalPropProblems, type PropProblem, propsInvalid, SECRET_PLACEHOLDER, validateProps, withAdditionalProps } from '../model/props.js';
import { checkAuthProvisions } from './auth-provisions.js';
import type { ReloadPropsView } from './prop-configuration.js';

/** Where the full prop list comes from: the prop configuration service, which asks the account's worker. */
export interface PropsReloader {
  reloadFor(accountId: string, component: ComponentRow, configured: Record<string, unknown>): Promise<ReloadPropsView>;
}

export interface DeployPropsRequest {
  accountId: string;
  component: ComponentRow;
  /** What loading the component taught (its static props). */
  info: ComponentInfo;
  /** The values to check, as the request gives them (a secret's placeholder keeps the stored secret). */
  given: Record<string, unknown>;
  /** The values stored until now (an update), secrets sealed; `{}` for a create. */
  previous: Record<string, unknown>;
  /** The props `previous` was stored for (with what additionalProps() added then): which of its values are sealed secrets. */
  previousProps?: PropDescriptor[] | undefined;
  /** The added props stored with `previous` for this same component; undefined when none were computed for it. */
  previousAdditional: PropDescriptor[] | undefined;
  /** Props whose values are only known per run (a step's templates): not checked here, and unset for additionalProps(). */
  deferred?: ReadonlySet<string> | undefined;
  /** Put before messages (`steps[0] ("x"): `). */
  label?: string | undefined;
}

export interface DeployProps {
  /** The values to store, secrets sealed, defaults filled in. */
  stored: Record<string, unknown>;
  /** What `additionalProps()` added or changed for these values; undefined for a component without it. */
  additional: PropDescriptor[] | undefined;
  /** The static props with the added ones: what the echo and the run go by. */
  props: PropDescriptor[];
}

/** True when a prop whose answer `additionalProps()` depends on (`reloadProps: true`) is given another value. */
function reloadAnswersChanged(props: PropDescriptor[], given: Record<string, unknown>, previous: Record<string, unknown>): boolean {
  return props.some((p) => {
    if (!p.reloadProps) return false;
    const value = given[p.name];
    if (p.secret && value === SECRET_PLACEHOLDER) return !SecretBox.isSealed(previous[p.name]);
    return JSON.stringify(value) !== JSON.stringify(previous[p.name]);
  });
}

/**
 * `stored` without the sealed-looking values of props that were not secret: those are text the client gave (a copy of
 * any account's secret, out of the database), not secrets this server sealed for the prop. A secret's placeholder
 * kept one for a prop turned secret since, and the run got it opened.
 */
function sealedByServer(props: PropDescriptor[], stored: Record<string, unknown>): Record<string, unknown> {
  const secret = new Set(props.filter((p) => p.secret).map((p) => p.name));
  return Object.fromEntries(Object.entries(stored).filter(([name, value]) => secret.has(name) || !SecretBox.isSealed(value)));
}

export class DeployPropsResolver {
  private reloader: PropsReloader | undefined;

  constructor(
    private readonly store: Store,
    private readonly secrets: SecretBox,
    private readonly rules: PropRules,
  ) {}

  /** Until it is given, a component's additional props are not known and values for them are refused. */
  useReloader(reloader: PropsReloader): void {
    this.reloader = reloader;
  }

  /**
   * The values to store and the prop list they were checked against; every problem in one 422. The list is asked
   * of the sandbox on a create, for another component, or when an answer with `reloadProps: true` changes; otherwise
   * the stored one holds, so that an update that changes nothing it depends on (a deactivation) never runs the
   * component's `additionalProps()`, which may call an API.
   */
  async resolve(request: DeployPropsRequest): Promise<DeployProps> {
    const { info } = request;
    const previous = sealedByServer(request.previousProps ?? [], request.previous);
    const deferred = request.deferred ?? new Set<string>();
    const given = Object.fromEntries(Object.entries(request.given).filter(([name]) => !deferred.has(name)));
    let additional: PropDescriptor[] | undefined;
    if (info.additionalProps && this.reloader) {
      additional = request.previousAdditional;
      const known = withAdditionalProps(info.props, additional);
      if (additional === undefined || reloadAnswersChanged(known, request.given, previous)) {
        // A static prop's value the deploy refuses is its 422 as it stands, not whatever additionalProps() made of it.
        const { problems } = configuredValues(info.props, given, this.rules, true);
        if (problems.length) throw propsInvalid(problems, request.label);
        additional = await this.ask(request, known, given, previous);
      }
    }
    const props = withAdditionalProps(info.props, additional);
    let problems: PropProblem[] = [];
    let stored: Record<string, unknown> = {};
    try {
      const checked = props.filter((p) => !deferred.has(p.name));
      const opened = this.openedWhereNoLongerSecret(checked, given, previous, request);
      stored = validateProps(checked, opened, previous, propSealer(this.secrets, request.accountId), this.rules);
    } catch (error) {
      if (!(error instanceof ServiceError) || error.code !== 'props_invalid') throw error;
      // Not spread into push: one problem per unknown prop, 150,000 of them overflowed the stack (a bare 500).
      problems = (error.details ?? []) as PropProblem[];
    }
    problems = problems.concat(additionalPropProblems(additional ?? []));
    if (problems.length) throw propsInvalid(problems, request.label);
    return { stored, additional, props };
  }

  /**
   * `given` with each value kept from when its prop was secret opened, for a prop no longer secret: the placeholder
   * sent back, or the sealed value an omitted configured_props keeps. Else the sealed text itself was stored as the
   * plain value (the run got ciphertext), or the placeholder was.
   */
  private openedWhereNoLongerSecret(
    props: PropDescriptor[],
    given: Record<string, unknown>,
    previous: Record<string, unknown>,
    request: DeployPropsRequest,
  ): Record<string, unknown> {
    const opened = { ...given };
    for (const prop of props) {
      const value = given[prop.name];
      const sealed = previous[prop.name];
      if (prop.secret || !SecretBox.isSealed(sealed) || (value !== SECRET_PLACEHOLDER && value !== sealed)) continue;
      opened[prop.name] = this.openKept(prop.name, sealed, request);
    }
    return opened;
  }

  /** A secret kept from before: opened, or a 422 asking for it again when this server's key cannot open it. */
  private openKept(name: string, sealed: string, request: DeployPropsRequest): unknown {
    try {
      return this.secrets.unseal(sealed, bindings.prop(request.accountId, name));
    } catch (error) {
      if (!(error instanceof UnreadableSecretError)) throw error;
      const message = `is kept from before but cannot be opened: ${error.message}; set it again`;
      throw propsInvalid([{ prop: name, message }], request.label);
    }
  }

  /** What `additionalProps()` adds for these values, seen as `this` would see them (secrets opened). */
  private async ask(
    request: DeployPropsRequest,
    known: PropDescriptor[],
    given: Record<string, unknown>,
    previous: Record<string, unknown>,
  ): Promise<PropDescriptor[]> {
    // An account the values name that is unknown or another account's is the deploy's 404, as without additionalProps().
    await checkAuthProvisions(this.store, request.accountId, request.info.props, given, request.label);
    const values: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(given)) {
      const sealed = previous[name];
      const secret = known.find((p) => p.name === name)?.secret === true;
      values[name] = secret && value === SECRET_PLACEHOLDER && SecretBox.isSealed(sealed) ? this.openKept(name, sealed, request) : value;
    }
    const answer = await this.reloader!.reloadFor(request.accountId, request.component, values);
    if (answer.errors.length) {
      throw new ServiceError(
        'props_invalid',
        `${request.label ?? ''}additionalProps() could not list the props for these configured_props: ${answer.errors.join('; ')}`,
        answer.errors.map((message) => ({ prop: 'additionalProps()', message })),
      );
    }
    return addedProps(request.info.props, answer.configurable_props);
  }
}
