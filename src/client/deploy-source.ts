// `tributary deploy <file>` and `tributary update dc_… <file>`: bundle, save the component, deploy or update the source.
import type { ApiClient } from './api.js';
import { type Bundle, bundleFile, checkComponentFile, shownPath } from './bundle.js';
import { saveWithProgress } from './install-progress.js';
import { segment } from './resources.js';
import { type Ask, checkGivenProps, describeProp, givenProps, listProps, missingProps, type PropInfo, promptForProps } from './props-input.js';
import { UsageError } from './usage-error.js';

export interface SourceData {
  id: string;
  name: string;
  component_id: string;
  configured_props: Record<string, unknown>;
  active: boolean;
}

export interface ComponentData {
  id: string;
  name: string;
  version: string;
  configurable_props: PropInfo[];
}

export interface DeployOptions {
  name?: string | undefined;
  props: string[];
  propsFile?: string | undefined;
  /** Set when missing required props may be asked for (an interactive terminal, or --interactive). */
  ask?: Ask | undefined;
  /** Progress lines (standard error). */
  progress: (line: string) => void;
}

/** Runs `work`, saying what it does and, once done, how long it took. */
export async function step<T>(progress: (line: string) => void, what: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  progress(`${what} …`);
  const result = await work();
  progress(`${what}: done in ${Math.round(performance.now() - started)} ms`);
  return result;
}

/** Saves bundled code as a component; the server installs the npm packages it imports, saying each step as it goes. */
export async function saveBundle(api: ApiClient, bundle: Bundle, progress: (line: string) => void): Promise<ComponentData> {
  const installs = bundle.packages.length ? ` (the server installs ${bundle.packages.join(', ')})` : '';
  const request = { method: 'POST', path: '/v1/components', streamPath: '/v1/components/stream', body: { component_code: bundle.code } } as const;
  const quiet = bundle.packages.length ? 'this server does not report install progress; a first install may take a minute' : undefined;
  const saved = await step(progress, `saving the component${installs}`, () => saveWithProgress<{ data: ComponentData }>(api, request, progress, quiet));
  return saved.data;
}

/** Bundles the file and saves it as a component. */
export async function saveComponent(api: ApiClient, file: string, progress: (line: string) => void): Promise<ComponentData> {
  const bundle = await step(progress, `bundling ${shownPath(file)}`, () => bundleFile(file));
  return saveBundle(api, bundle, progress);
}

/** How many times a deploy asks for the prop list again, as answers change what additionalProps() adds. */
const PROP_LIST_ROUNDS = 5;

/**
 * The configured props of a deploy: given, then asked for; the missing ones listed when nobody can be asked. The
 * list is the full one for the values so far (`props/reload`: the static props, then what additionalProps() adds or
 * unhides), asked again while the values change it, so that an added prop is typed and asked for like a static one.
 */
async function configuredProps(api: ApiClient, component: ComponentData, options: DeployOptions): Promise<Record<string, unknown>> {
  let props = component.configurable_props;
  let configured = givenProps(props, options.propsFile, options.props);
  for (let round = 0; ; round++) {
    const missing = missingProps(props, configured);
    if (missing.length && !options.ask) {
      throw new UsageError(
        `missing required props (give them with --prop name=value or --props-file, or run in a terminal to be asked):\n${missing.map((p) => `  ${describeProp(p)}`).join('\n')}`,
      );
    }
    if (missing.length) configured = await promptForProps(api, component.id, missing, configured, options.ask!, options.progress);
    if (round === PROP_LIST_ROUNDS) return configured;
    const listed = await listProps(api, component.id, configured);
    // additionalProps() failing is the deploy's to report (a 422 naming why); the list it had stands.
    if (!listed || listed.errors.length || JSON.stringify(listed.props) === JSON.stringify(props)) return configured;
    props = listed.props;
    // --prop values again, typed by the props they name now (an added integer prop takes "5" as 5).
    configured = { ...configured, ...givenProps(props, options.propsFile, options.props) };
  }
}

export async function deploySource(api: ApiClient, file: string, options: DeployOptions): Promise<SourceData> {
  checkGivenProps(options.propsFile, options.props);
  checkComponentFile(file);
  return createSource(api, await saveComponent(api, file, options.progress), options);
}

/** Deploys a saved component as a new source. */
export async function createSource(api: ApiClient, component: ComponentData, options: DeployOptions): Promise<SourceData> {
  const configured_props = await configuredProps(api, component, options);
  const body = { component_id: component.id, configured_props, ...(options.name !== undefined && { name: options.name }) };
  const created = await step(options.progress, `deploying ${options.name ?? component.name}`, () =>
    api.call<{ data: SourceData }>('POST', '/v1/sources', body, 'code'),
  );
  return created.data;
}

/**
 * Replaces the source's code in place (same id, same endpoint URL, same name and state); props given replace the
 * stored ones, else the stored ones are kept (the server re-checks them against the new code).
 */
export async function updateSource(api: ApiClient, sourceId: string, file: string, options: DeployOptions): Promise<SourceData> {
  checkGivenProps(options.propsFile, options.props);
  checkComponentFile(file);
  await api.get(`/v1/sources/${segment(sourceId)}`);
  return replaceCode(api, sourceId, await saveComponent(api, file, options.progress), options);
}

/** Points the source at a saved component, keeping its id, endpoint, name and state. */
export async function replaceCode(api: ApiClient, sourceId: string, component: ComponentData, options: DeployOptions): Promise<SourceData> {
  const changesProps = options.props.length > 0 || options.propsFile !== undefined;
  const body = {
    component_id: component.id,
    ...(changesProps && { configured_props: givenProps(component.configurable_props, options.propsFile, options.props) }),
    ...(options.name !== undefined && { name: options.name }),
  };
  const updated = await step(options.progress, `updating ${sourceId}`, () =>
    api.call<{ data: SourceData }>('PATCH', `/v1/sources/${segment(sourceId)}`, body, 'code'),
  );
  return updated.data;
}
