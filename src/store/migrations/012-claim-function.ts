// PostgreSQL: a source's claim in one round trip, as a function doing what the claim's transaction did in five.
import { sql, type Kysely } from 'kysely';
import type { DialectMigration } from './migration.js';

/**
 * The claim takes the source's advisory lock and only then looks for another node's live lease, so that it sees
 * every claim committed before the lock was granted. As one statement it could not (its snapshot would predate the
 * lock), and as a transaction it cost five round trips (begin, lock, check, update, commit). A VOLATILE plpgsql
 * function takes a fresh snapshot for each statement in it, so one call does the same in one round trip. The lock's
 * key is the one the transaction used, so nodes of either version exclude each other. SQLite has one node: no change.
 * It returns the claimed rows, or one row whose `held_until_ms` is the end of the live lease another node holds.
 * Its result is of the table's row type: a later migration that replaces the table drops the function first.
 */
export const migration012: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    if (dialect !== 'postgres') return;
    await sql`
      create function tributary_claim_invocations(p_source_id text, p_owner text, p_now_ms bigint, p_lease_ms bigint, p_limit integer)
      returns table (held_until_ms bigint, claimed invocations)
      language plpgsql volatile as $$
      declare
        held bigint;
      begin
        perform pg_advisory_xact_lock(hashtext('tributary:source:' || p_source_id));
        select i.lease_until_ms into held from invocations i
          where i.source_id = p_source_id and i.lease_owner <> p_owner and i.lease_until_ms >= p_now_ms
          limit 1;
        if found then
          return query select held, null::invocations;
          return;
        end if;
        return query
          update invocations i set lease_owner = p_owner, lease_until_ms = p_now_ms + p_lease_ms, attempts = i.attempts + 1
          where i.source_id = p_source_id
            and i.id in (
              select c.id from invocations c
              where c.source_id = p_source_id and (c.lease_until_ms is null or c.lease_until_ms < p_now_ms or c.lease_owner = p_owner)
              order by c.id limit p_limit)
            and (i.lease_until_ms is null or i.lease_until_ms < p_now_ms or i.lease_owner = p_owner)
          returning null::bigint, i;
      end $$`.execute(db);
  },
  async down(db: Kysely<any>) {
    if (dialect !== 'postgres') return;
    await sql`drop function tributary_claim_invocations(text, text, bigint, bigint, integer)`.execute(db);
  },
});
