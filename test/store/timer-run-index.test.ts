// The check each firing of a workflow's timer makes (a timer run of it queued or running?) reads migration 016's index,
// not the workflow's every run.
import { describe, expect, it } from 'vitest';
import { hasUnfinishedTimerRun, unfinishedTimerRunQuery } from '../../src/store/workflows.js';
import { DIALECTS } from '../helpers/server.js';
import { freshStoreEach, queryPlan } from '../helpers/stores.js';

describe.each(DIALECTS)('the unfinished timer run check on %s', (dialect) => {
  const openFresh = freshStoreEach(dialect);

  it('uses workflow_runs_timer_pending', async () => {
    const store = await openFresh();
    expect(await hasUnfinishedTimerRun(store.db, 'wf_none')).toBe(false);
    const plan = await queryPlan(store, dialect, unfinishedTimerRunQuery(store.db, 'wf_1').compile());
    expect(plan).toContain('workflow_runs_timer_pending');
    expect(plan).not.toContain('workflow_runs_list');
  });
});
