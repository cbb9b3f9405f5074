// Workflows' rows as the runner reads them between step batches, cached; in a cluster only briefly.
import { LRUCache } from 'lru-cache';
import { countedUpTo } from '../lib/cache-bounds.js';
import type { Store } from '../store/database.js';
import { loadWorkflow, type WorkflowRow } from '../store/workflows.js';

/** Entries live this long in a cluster, so that other nodes' changes reach this one; local changes evict at once. */
const CLUSTER_TTL_MS = 2000;

export class WorkflowCache {
  /** A deleted workflow is cached too (`row` null), so that its leftover runs do not read it again each batch. */
  private readonly rows: LRUCache<string, { row: WorkflowRow | null }>;

  constructor(
    private readonly store: Store,
    /** This process is the database's only writer (SQLite): entries never go stale by themselves. */
    soleWriter: boolean,
  ) {
    this.rows = new LRUCache({ ...countedUpTo(10_000), ...(soleWriter ? {} : { ttl: CLUSTER_TTL_MS }) });
  }

  /** The workflow's row, or undefined once it is deleted. */
  async get(workflowId: string): Promise<WorkflowRow | undefined> {
    const cached = this.rows.get(workflowId);
    if (cached) return cached.row ?? undefined;
    const row = (await loadWorkflow(this.store.db, workflowId)) ?? null;
    this.rows.set(workflowId, { row });
    return row ?? undefined;
  }

  evict(workflowId: string): void {
    this.rows.delete(workflowId);
  }

  clear(): void {
    this.rows.clear();
  }
}
