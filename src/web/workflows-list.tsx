// The workflows page: each workflow with its trigger, state and steps, linking to its runs.
import { formatTime } from './format';
import { href } from './router';
import type { Workflow } from './types';
import { usePages } from './use-pages';
import { NameCell, PagedTable } from './table';

const PAGE = 50;

export function WorkflowsList() {
  // Past the first page the rest is a press away, as on the sources page.
  const pages = usePages<Workflow>('/users/me/workflows', PAGE);
  return (
    <section aria-labelledby="workflows-title">
      <div class="title-row">
        <h1 id="workflows-title">Workflows</h1>
        <a class="button" href={href('workflows', 'new')}>
          New workflow
        </a>
      </div>
      <PagedTable
        pages={pages}
        columns={['Name', 'Trigger', 'Active', 'Steps', 'Created']}
        row={(workflow) => (
          <tr key={workflow.id}>
            <NameCell href={href('workflows', workflow.id)} name={workflow.name} />
            <td>{workflow.trigger?.type ?? 'none'}</td>
            <td>{workflow.active ? 'Active' : <span class="muted">Inactive</span>}</td>
            <td>{workflow.steps.map((s) => s.name).join(' → ')}</td>
            <td>{formatTime(workflow.created_at * 1000)}</td>
          </tr>
        )}
        empty={
          <>
            No workflows yet. <a href={href('workflows', 'new')}>Create one</a> here, or with <code>POST /v1/workflows</code> or{' '}
            <code>tributary deploy --workflow</code>.
          </>
        }
      />
    </section>
  );
}
