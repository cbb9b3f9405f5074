// The workflows page: each workflow with its trigger, state and steps, linking to its runs.
import { useRef } from 'preact/hooks';
import { formatTime } from './format';
import { href } from './router';
import type { Workflow } from './types';
import { usePages } from './use-pages';
import { LoadMore } from './load-more';
import { LoadError } from './load-error';

const PAGE = 50;

export function WorkflowsList() {
  // Past the first page the rest is a press away, as on the sources page.
  const pages = usePages<Workflow>('/users/me/workflows', PAGE);
  const { items: workflows, page: list } = pages;
  const rows = useRef<HTMLDivElement>(null);
  return (
    <section aria-labelledby="workflows-title">
      <div class="title-row">
        <h1 id="workflows-title">Workflows</h1>
        <a class="button" href={href('workflows', 'new')}>
          New workflow
        </a>
      </div>
      <LoadError loads={[list]} />
      {list.data && workflows.length === 0 && (
        <p>
          No workflows yet. <a href={href('workflows', 'new')}>Create one</a> here, or with <code>POST /v1/workflows</code> or{' '}
          <code>tributary deploy --workflow</code>.
        </p>
      )}
      {workflows.length > 0 && (
        <div class="table-wrap" ref={rows}>
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Trigger</th>
                <th scope="col">Active</th>
                <th scope="col">Steps</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {workflows.map((workflow) => (
                <tr key={workflow.id}>
                  <th scope="row">
                    <a href={href('workflows', workflow.id)} title={workflow.name}>
                      {workflow.name}
                    </a>
                  </th>
                  <td>{workflow.trigger?.type ?? 'none'}</td>
                  <td>{workflow.active ? 'Active' : <span class="muted">Inactive</span>}</td>
                  <td>{workflow.steps.map((s) => s.name).join(' → ')}</td>
                  <td>{formatTime(workflow.created_at * 1000)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <LoadMore pages={pages} rows={rows} />
    </section>
  );
}
