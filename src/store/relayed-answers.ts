// Cluster: the custom responses relayed between nodes, written with the NOTIFY that carries them, read back by a node
// whose LISTEN connection was lost meanwhile, and deleted once no request can still wait on them.
import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';

/** Stores an answer and notifies `channel` with `payload` in one statement: the notification goes out only if it is stored. */
export async function saveAndNotifyAnswer(db: Kysely<Database>, channel: string, id: string, answer: string, payload: string, atMs: number): Promise<void> {
  await sql`with saved as (insert into relayed_answers (id, answer, at_ms) values (${id}, ${answer}, ${atMs}) returning seq)
    select pg_notify(${channel}, ${payload}) from saved`.execute(db);
}

/** The stored answers for these ids, in the order they were sent. */
export async function storedAnswers(db: Kysely<Database>, ids: readonly string[]): Promise<Array<{ id: string; answer: string }>> {
  if (!ids.length) return [];
  return db.selectFrom('relayed_answers').select(['id', 'answer']).where('id', 'in', ids).orderBy('seq').execute();
}

/** Deletes the answers sent before `beforeMs`. */
export async function forgetAnswers(db: Kysely<Database>, beforeMs: number): Promise<void> {
  await db.deleteFrom('relayed_answers').where('at_ms', '<', beforeMs).execute();
}
