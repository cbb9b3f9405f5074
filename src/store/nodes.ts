// The nodes table: each node's own row (written at start, renewed, deleted at stop) and the rows of the live ones.
import type { Kysely, Selectable } from 'kysely';
import type { Database, NodesTable } from './schema.js';

export type NodeRow = Selectable<NodesTable>;

/** Writes the node's row, or renews it (a node whose row was removed as stale writes it again). */
export async function saveNode(db: Kysely<Database>, row: NodeRow): Promise<void> {
  await db
    .insertInto('nodes')
    .values(row)
    .onConflict((oc) => oc.column('id').doUpdateSet({ seen_ms: row.seen_ms }))
    .execute();
}

export async function deleteNode(db: Kysely<Database>, id: string): Promise<void> {
  await db.deleteFrom('nodes').where('id', '=', id).execute();
}

/** The nodes that renewed their row at `sinceMs` or later, oldest first. */
export function liveNodes(db: Kysely<Database>, sinceMs: number): Promise<NodeRow[]> {
  return db.selectFrom('nodes').selectAll().where('seen_ms', '>=', sinceMs).orderBy('started_ms', 'asc').orderBy('id', 'asc').execute();
}

/** Removes the rows of nodes gone since before `beforeMs` (they died without deleting theirs). */
export async function deleteNodesGoneBefore(db: Kysely<Database>, beforeMs: number): Promise<void> {
  await db.deleteFrom('nodes').where('seen_ms', '<', beforeMs).execute();
}
