// What the workflow runner reads off a run and its workflow: the run's trigger data, whether a client waits for it.
import type * as workflows from '../store/workflows.js';

/** `steps.trigger` of a run: its event and context. */
export function triggerData(run: workflows.WorkflowRunRow): Record<string, unknown> {
  return {
    trigger: {
      event: JSON.parse(run.event) as unknown,
      context: { id: run.id, ts: new Date(Number(run.created_ms)).toISOString(), workflow_id: run.workflow_id },
    },
  };
}

/** Whether the workflow's HTTP trigger answers with `$.respond()`: a client somewhere waits for its runs. */
export function answersHttp(workflow: workflows.WorkflowRow): boolean {
  const trigger = workflow.trigger ? (JSON.parse(workflow.trigger) as { type?: string; custom_response?: boolean }) : null;
  return trigger?.type === 'http' && trigger.custom_response === true;
}
