// Saved components: checking and loading code in the sandbox, storing it, and finding it by id or key.
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import semver from 'semver';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import { newId, nowSeconds, isId } from '../model/ids.js';
import * as components from '../store/components.js';
import { authoringProblem } from '../model/component-rules.js';
import { ComponentLoadError, type ComponentInfo, type InstallProgress, type PreparedComponent, type PropDescriptor } from '../runtime/types.js';
import type { ComponentRuntime } from '../runtime/index.js';
import { ServiceError, invalid, notFound } from '../model/errors.js';
import type { Page, PageRequest } from '../model/pagination.js';
import { fetchText, parseHttpUrl } from '../delivery/outbound.js';
import { quote } from '../runtime/worker/quote.js';

/** The spec's Component resource. */
export interface ComponentView {
  id: string;
  code: string;
  code_hash: string;
  name: string;
  version: string;
  configurable_props: PropDescriptor[];
  created_at: number;
  updated_at: number;
}

/** A stored component with what the runtime needs to run it. */
export interface LoadedComponent {
  row: components.ComponentRow;
  info: ComponentInfo;
}

/** A step of installing a save's npm imports, as the runtime says it; in a workflow's save, the step whose code it is. */
export interface SaveProgress extends InstallProgress {
  workflowStep?: string;
}

export type SaveProgressListener = (progress: SaveProgress) => void;

export interface ComponentSource {
  code?: string | undefined;
  url?: string | undefined;
}

const URL_TIMEOUT_MS = 10_000;
const MAX_CODE_BYTES = 2 * 1024 * 1024;
/** Registry keys: `app_name_slug-slugified-component-name`. */
const REGISTRY_KEY = /^[a-z0-9]+(?:_[a-z0-9]+)*-[a-z0-9]+(?:-[a-z0-9]+)*$/;
/** A SemVer 2.0 version as written: `1.2.0`, `1.2.0-rc.1`, `1.2.0+build.5` (not `v1.2.0` or `=1.2.0`, which semver reads). */
function isSemanticVersion(version: string): boolean {
  const parsed = semver.parse(version);
  return parsed !== null && `${parsed.version}${parsed.build.length ? `+${parsed.build.join('.')}` : ''}` === version;
}

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

/** The owner id used to load registry components in the sandbox; never an account id. */
export const REGISTRY_OWNER = 'registry';

export function toComponentView(row: components.ComponentRow): ComponentView {
  return {
    id: row.id,
    code: row.code,
    code_hash: row.code_hash,
    name: row.name,
    version: row.version,
    configurable_props: JSON.parse(row.configurable_props) as PropDescriptor[],
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export class ComponentService {
  constructor(
    private readonly store: Store,
    private readonly runtime: ComponentRuntime,
    private readonly options: { allowPrivateNetwork: boolean; logger: Logger },
  ) {}

  /**
   * POST /components: the code wins over the URL; the URL is then kept as metadata only. `onProgress` hears the npm
   * packages the code imports being resolved and installed, or found in the cache.
   */
  async save(accountId: string, source: ComponentSource, onProgress?: SaveProgressListener): Promise<components.ComponentRow> {
    const row = await this.prepare(accountId, source, onProgress);
    await this.insertPrepared(this.store.db, row);
    return row;
  }

  /**
   * The row `save` would store, loaded and checked but not yet stored: a deploy saves it with the source or workflow
   * that uses it (`insertPrepared`, in the same transaction), so that a deploy refused later saves nothing.
   */
  async prepare(accountId: string, source: ComponentSource, onProgress?: SaveProgressListener): Promise<components.ComponentRow> {
    const code = await this.resolveCode(source);
    const { prepared, info } = await this.load(accountId, code, { onProgress });
    return this.rowOf(accountId, code, source.url ?? null, prepared, info);
  }

  /** Stores a row from `prepare` or `prepareStep`. */
  insertPrepared(db: Kysely<Database>, row: components.ComponentRow): Promise<void> {
    return components.insertComponent(db, row);
  }

  /** Reads the code from the request, or fetches it from `component_url` through the outbound guard. */
  async resolveCode(source: ComponentSource): Promise<string> {
    // Kept as metadata beside the code, the URL is still one: an ill-formed one is refused, not stored.
    if (source.url !== undefined) parseHttpUrl(source.url, 'component_url');
    if (source.code !== undefined) {
      if (source.code.trim() === '') throw invalid('component_code is empty');
      return source.code;
    }
    if (source.url === undefined) throw invalid('component_code or component_url is required');
    try {
      return await fetchText(source.url, { allowPrivateNetwork: this.options.allowPrivateNetwork, timeoutMs: URL_TIMEOUT_MS, maxBytes: MAX_CODE_BYTES });
    } catch (error) {
      throw new ServiceError('invalid_request', `cannot fetch component_url: ${(error as Error).message}`);
    }
  }

  /**
   * Prepares the code of a workflow's code step (stored with the workflow, as `prepare`): a module exporting `defineComponent({ props?, run })` or a plain
   * object with `run`, which needs no name or version.
   */
  async prepareStep(accountId: string, code: string, onProgress?: SaveProgressListener): Promise<components.ComponentRow> {
    if (code.trim() === '') throw invalid('component_code is empty');
    const { prepared, info } = await this.load(accountId, code, { asStep: true, onProgress });
    return this.rowOf(accountId, code, null, prepared, info);
  }

  /** Prepares and loads code in the account's sandbox; load failures become 422 with the reason. */
  async load(
    ownerId: string,
    code: string,
    options: { asStep?: boolean; onProgress?: SaveProgressListener | undefined } = {},
  ): Promise<{ prepared: PreparedComponent; info: ComponentInfo }> {
    try {
      const prepared = await this.runtime.prepare(code, options.onProgress);
      const info = await this.runtime.inspect(ownerId, prepared, { asStep: options.asStep === true });
      const problem = authoringProblem(info);
      if (problem) throw new ServiceError('component_invalid', problem, [{ reason: 'authoring_contract' }]);
      return { prepared, info };
    } catch (error) {
      if (error instanceof ComponentLoadError) {
        const details = error.details ? [{ reason: error.code, ...error.details }] : [{ reason: error.code }];
        throw new ServiceError('component_invalid', error.message, details);
      }
      throw error;
    }
  }

  private rowOf(ownerId: string | null, code: string, url: string | null, prepared: PreparedComponent, info: ComponentInfo): components.ComponentRow {
    const now = nowSeconds();
    const row: components.ComponentRow = {
      id: newId('sc'),
      user_id: ownerId,
      key: info.key ?? null,
      code,
      code_hash: prepared.codeHash,
      component_url: url,
      name: info.name,
      version: info.version,
      configurable_props: JSON.stringify(info.props),
      metadata: JSON.stringify({ info, packages: prepared.packages }),
      created_at: now,
      updated_at: now,
    };
    return row;
  }

  /** GET /users/me/components: the account's saved components, newest first. */
  list(accountId: string, page: PageRequest): Promise<Page<components.ComponentRow>> {
    return components.listComponents(this.store.db, accountId, page);
  }

  /** A component by id whoever owns it (the id came from an owned source or workflow). */
  byId(componentId: string): Promise<components.ComponentRow | undefined> {
    return components.loadComponent(this.store.db, componentId);
  }

  /** GET /components/{key|id}: the latest component with that key, or that id, in the account. */
  async get(accountId: string, keyOrId: string): Promise<components.ComponentRow> {
    const row = isId(keyOrId, 'sc')
      ? await components.findComponentById(this.store.db, accountId, keyOrId)
      : await components.findLatestByKey(this.store.db, accountId, keyOrId);
    if (!row) throw notFound(`component ${quote(keyOrId)}`);
    return row;
  }

  /**
   * GET /components/registry/{key} and deploys by key: the highest version the account published under the key,
   * else the global registry's component.
   */
  async getRegistry(accountId: string, key: string): Promise<components.ComponentRow> {
    const latest = await this.highestPublished(accountId, key);
    const row = latest ? await components.loadComponent(this.store.db, latest.component_id) : await components.findLatestByKey(this.store.db, null, key);
    if (!row) throw notFound(`registry component ${quote(key)}`);
    return row;
  }

  /**
   * Publishes a saved component of the account under its key. Its version must be semantic and greater than every
   * version published before under that key; a published version never changes.
   */
  async publishInAccount(accountId: string, componentId: string): Promise<components.ComponentRow> {
    const row = await components.findComponentById(this.store.db, accountId, componentId);
    if (!row || row.user_id !== accountId) throw notFound(`component ${quote(componentId)}`);
    const unpublishable = (message: string) => new ServiceError('component_invalid', message, [{ reason: 'not_publishable' }]);
    if (!row.key || !REGISTRY_KEY.test(row.key)) {
      throw unpublishable(`component ${quote(componentId)} needs a key that looks like app_name_slug-slugified-component-name to be published`);
    }
    if (!isSemanticVersion(row.version)) throw unpublishable(`version ${quote(row.version)} is not a semantic version (for example 1.2.0)`);
    const highest = (await this.highestPublished(accountId, row.key))?.version;
    // Build metadata (after "+") does not order versions (SemVer 2.0): 1.0.0+b is no greater than 1.0.0+a.
    const buildOnly = highest !== undefined && highest !== row.version && semver.compare(row.version, highest) === 0;
    const refuse = () =>
      new ServiceError(
        'conflict',
        `version ${row.version} of ${quote(row.key)} is not greater than the published ${highest ?? row.version}${buildOnly ? ' (build metadata, after "+", does not order versions)' : ''}; published versions never change`,
      );
    if (highest && !semver.gt(row.version, highest)) throw refuse();
    const inserted = await components.insertPublished(this.store.db, {
      user_id: accountId,
      key: row.key,
      version: row.version,
      component_id: row.id,
      published_at: nowSeconds(),
    });
    // Lost a race with another publish of the same version.
    if (!inserted) throw refuse();
    return row;
  }

  /** The account's published version of a key with the highest semantic version, if any. */
  private async highestPublished(accountId: string, key: string) {
    const published = await components.publishedVersions(this.store.db, accountId, key);
    return published.sort((a, b) => semver.rcompare(a.version, b.version))[0];
  }

  /** Publishes a component to the global registry unless this key and version are already there; returns its row. */
  async publishToRegistry(code: string, origin: string): Promise<components.ComponentRow> {
    const { prepared, info } = await this.load(REGISTRY_OWNER, code);
    if (!info.key || !REGISTRY_KEY.test(info.key)) {
      throw invalid(`${origin}: registry key ${quote(info.key ?? '')} must look like app_name_slug-slugified-component-name`);
    }
    if (!SEMVER.test(info.version)) throw invalid(`${origin}: registry version ${quote(info.version)} is not a semantic version`);
    const existing = await components.findRegistryVersion(this.store.db, info.key, info.version);
    if (existing) {
      if (existing.code_hash !== prepared.codeHash) {
        this.options.logger.warn({ key: info.key, version: info.version, origin }, 'registry code changed without a version bump; keeping the published code');
      }
      return existing;
    }
    const row = this.rowOf(null, code, null, prepared, info);
    await this.insertPrepared(this.store.db, row);
    return row;
  }
}
