// The check each firing of a workflow's timer makes (a timer run of it queued or running?) reads migration 016's index,
// not the workflow's every run.
import { describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { hasUnfinishedTimerRun, unfinishedTimerRunQuery } from '../../src/store/workflows.js';
import { DIALECTS } from '../helpers/server.js';
import { freshStoreEach } from '../helpers/stores.js';

describe.each(DIALECTS)('the unfinished timer run check on %s', (dialect) => {
  const openFresh = freshStoreEach(dialect);

  it('uses workflow_runs_timer_pending', async () => {
    const store = await openFresh();
    expect(await hasUnfinishedTimerRun(store.db, 'wf_none')).toBe(false);
    const query = unfinishedTimerRunQuery(store.db, 'wf_1').compile();
    const plan = await store.db.transaction().execute(async (trx) => {
      if (dialect === 'sqlite') {
        const { rows } = await trx.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]));
        return rows.map((r) => r.detail).join('\n');
      }
      // A test's table is a few pages, which PostgreSQL reads whole rather than through any index: the question here
      // is which index it would take for a real table.
      await trx.executeQuery(CompiledQuery.raw('set local enable_seqscan = off'));
      const { rows } = await trx.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`explain ${query.sql}`, [...query.parameters]));
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });
    expect(plan).toContain('workflow_runs_timer_pending');
    expect(plan).not.toContain('workflow_runs_list');
  });
});
