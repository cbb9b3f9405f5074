// `tributary deploy --workflow <file>`: creates the file's workflow, or updates the account's workflow of that name.
import type { ApiClient } from './api.js';
import { step } from './deploy-source.js';
import { type SaveRequest, saveWithProgress } from './install-progress.js';
import { counted } from './resources.js';
import { readWorkflowFile } from './workflow-file.js';
import { UsageError } from './usage-error.js';

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
  api: ApiClient,
  progress: (line: string) => void,
): Promise<{ workflow: WorkflowData; created: boolean }> {
  progress(`reading and bundling ${file}`);
  const body = await readWorkflowFile(file);
  const existing = await workflowsNamed(api, body.name);
  if (existing.length > 1) {
    throw new UsageError(`the account has ${existing.length} workflows named "${body.name}" (${existing.map((w) => w.id).join(', ')}); rename one`);
  }
  const what = `${existing.length ? `updating ${existing[0]!.id}` : 'creating the workflow'} (${counted(body.steps.length, 'step')})`;
  const request: SaveRequest = existing.length
    ? { method: 'PUT', path: `/v1/workflows/${existing[0]!.id}`, streamPath: `/v1/workflows/${existing[0]!.id}/stream`, body }
    : { method: 'POST', path: '/v1/workflows', streamPath: '/v1/workflows/stream', body };
  const quiet = 'this server does not report install progress; it installs the npm imports of steps, a first install may take a minute';
  const result = await step(progress, what, () => saveWithProgress<{ data: WorkflowData }>(api, request, progress, quiet));
  return { workflow: result.data, created: existing.length === 0 };
}
