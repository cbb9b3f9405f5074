// Calls most workflow tests make: create a workflow (expecting 200) and wait for its runs to finish.
import { expect } from 'vitest';
import type { client } from './client.js';
import { waitFor } from './wait.js';

type Api = ReturnType<typeof client>;

export function workflowCalls(api: () => Api) {
  async function create(body: object): Promise<any> {
    const res = await api().post('/v1/workflows', body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data;
  }

  /** The workflow's runs (newest first) once at least `count` of them have finished. */
  async function finishedRuns(workflowId: string, count: number): Promise<any[]> {
    const res = await waitFor(
      () => api().get(`/v1/workflows/${workflowId}/runs?limit=100`),
      (r) => r.body.data.filter((run: any) => run.status === 'succeeded' || run.status === 'failed').length >= count,
      { what: `${count} finished runs of ${workflowId}` },
    );
    return res.body.data;
  }

  return { create, finishedRuns };
}
