// Splits the `$.service.db` writes of a call into the keys it removed and the values it set, for one table or another.

/** Keys per statement: a statement takes a bounded number of parameters (SQLite's 32,766, PostgreSQL's 65,535). */
const KEYS_PER_STATEMENT = 1000;

function slices<T>(items: T[]): T[][] {
  const sliced: T[][] = [];
  for (let i = 0; i < items.length; i += KEYS_PER_STATEMENT) sliced.push(items.slice(i, i + KEYS_PER_STATEMENT));
  return sliced;
}

export interface SplitDbWrites {
  /** The keys set to undefined (removed, as JSON would leave them out), a statement's worth a slice. */
  removedSlices: string[][];
  /** The keys set to a value, with their JSON, a statement's worth a slice. */
  upsertSlices: Array<Array<{ key: string; value: string }>>;
}

export function splitDbWrites(writes: Record<string, unknown>): SplitDbWrites {
  const removed: string[] = [];
  const upserts: Array<{ key: string; value: string }> = [];
  for (const [key, value] of Object.entries(writes)) {
    if (value === undefined) removed.push(key);
    else upserts.push({ key, value: JSON.stringify(value) });
  }
  return { removedSlices: slices(removed), upsertSlices: slices(upserts) };
}
