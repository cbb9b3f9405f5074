// PostgreSQL: the claim of a source's invocations takes none while the source is switched off.
import { sql, type Kysely } from 'kysely';
import type { DialectMigration } from './migration.js';
import { migration012 } from './012-claim-function.js';

/**
 * Migration 012's function, which now looks at the source's row after taking its lock: a switched-off source's
 * invocations are not claimed (they wait until it is on again), whatever a node's cached settings still say. A node
 * whose cache had not yet heard of the switch-off (up to 2 s, or longer with signals lost) claimed them and ran the
 * source's code, outgoing calls and all, only for the commit to be refused. A source without a row (deleted) is
 * claimed as before: the run clears what is left of it. SQLite has one node, whose cache is never stale: no change.
 */
export const migration017: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    if (dialect !== 'postgres') return;
    await sql`
      create or replace function tributary_claim_invocations(p_source_id text, p_owner text, p_now_ms bigint, p_lease_ms bigint, p_limit integer)
      returns table (held_until_ms bigint, claimed invocations)
      language plpgsql volatile as $$
      declare
        held bigint;
      begin
        perform pg_advisory_xact_lock(hashtext('tributary:source:' || p_source_id));
        if exists (select 1 from sources s where s.id = p_source_id and s.active = 0) then
          return;
        end if;
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
    await migration012(dialect).up(db);
  },
});
