// What the engine needs to run a source (its row, component, account), cached between batches.
import { LRUCache } from 'lru-cache';
import { countedUpTo } from '../lib/cache-bounds.js';
import type { Store } from '../store/database.js';
import { loadSource, sourceInfo, type SourceRow } from '../store/sources.js';
import { componentInfo, loadComponent, type ComponentRow } from '../store/components.js';
import { findUserByIdOrUsername, type UserRow } from '../store/users.js';
import type { ComponentInfo } from '../runtime/types.js';

export interface RunnableSource {
  source: SourceRow;
  component: ComponentRow;
  /** The component's, with the props its additionalProps() added for this source. */
  info: ComponentInfo;
  account: UserRow | undefined;
}

/**
 * Changes made through this process evict at once; an entry also expires after `ttlMs`, so that changes made
 * on other nodes of a cluster are seen within that time.
 */
export class SourceCache {
  private readonly entries: LRUCache<string, RunnableSource>;

  /** `ttlMs` Infinity: entries never expire (this process makes every change). */
  constructor(
    private readonly store: Store,
    ttlMs = 1000,
  ) {
    this.entries = new LRUCache({ ...countedUpTo(50_000), ...(Number.isFinite(ttlMs) ? { ttl: ttlMs } : {}) });
  }

  async get(sourceId: string): Promise<RunnableSource | undefined> {
    const cached = this.entries.get(sourceId);
    if (cached) return cached;
    const source = await loadSource(this.store.db, sourceId);
    if (!source) {
      this.entries.delete(sourceId);
      return undefined;
    }
    const component = (await loadComponent(this.store.db, source.component_id))!;
    const value = {
      source,
      component,
      info: sourceInfo(componentInfo(component), source),
      account: await findUserByIdOrUsername(this.store.db, source.user_id),
    };
    this.entries.set(sourceId, value);
    return value;
  }

  clear(): void {
    this.entries.clear();
  }

  evict(sourceId: string): void {
    this.entries.delete(sourceId);
  }
}
