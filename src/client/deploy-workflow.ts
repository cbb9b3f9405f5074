// `tributary deploy --workflow <file>`: creates the file's workflow, or updates the account's workflow of that name.
import { ApiClient, type ServerAddress } from './api.js';
import { readWorkflowFile } from './workflow-file.js';

interface WorkflowData {
  id: string;
  name: string;
  trigger: { type: string; endpoint_url?: string } | null;
}

/** The account's workflows named `name` (every page). */
async function workflowsNamed(api: ApiClient, name: string): Promise<WorkflowData[]> {
  const found: WorkflowData[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await api.call<{ data: WorkflowData[]; page_info: { end_cursor: string } }>(
      'GET',
      `/v1/users/me/workflows?limit=100${after ? `&after=${encodeURIComponent(after)}` : ''}`,
    );
    found.push(...page.data.filter((w) => w.name === name));
    if (page.data.length < 100) return found;
    after = page.page_info.end_cursor;
  }
}

/**
 * Deploys a workflow file; a workflow of the same name is updated in place (same id, same endpoint URL). Reports
 * each step on `progress`; returns the workflow and whether it was created.
 */
export async function deployWorkflowFile(
  file: string,
  server: ServerAddress,
  progress: (line: string) => void,
): Promise<{ workflow: WorkflowData; created: boolean }> {
  progress(`reading and bundling ${file}`);
  const body = await readWorkflowFile(file);
  const api = new ApiClient(server);
  const existing = await workflowsNamed(api, body.name);
  if (existing.length > 1) {
    throw new Error(`the account has ${existing.length} workflows named "${body.name}" (${existing.map((w) => w.id).join(', ')}); rename one`);
  }
  progress(`${existing.length ? `updating ${existing[0]!.id}` : 'creating the workflow'} (${body.steps.length} steps; the server installs npm imports)`);
  const result = existing.length
    ? await api.call<{ data: WorkflowData }>('PUT', `/v1/workflows/${existing[0]!.id}`, body)
    : await api.call<{ data: WorkflowData }>('POST', '/v1/workflows', body);
  return { workflow: result.data, created: existing.length === 0 };
}
