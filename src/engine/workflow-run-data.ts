// What the workflow runner reads off a run and its workflow: the run's trigger data, whether a client waits for it, the step it goes on at.
import type * as workflows from '../store/workflows.js';

/** A run this runner holds, with the step data its next step sees (`steps.trigger`, `steps.<name>`). */
export interface HeldRun {
  run: workflows.WorkflowRunRow;
  data: Record<string, unknown>;
  /** The size of `data` as JSON characters, near enough: what bounds a batch (see step-batches.ts). */
  dataChars: number;
}

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

/**
 * Where a run goes on in the workflow's steps as they are now: the first step it has not run, by name (`done` holds
 * `steps.<name>` of each step it ran), or -1 when it ran them all. A change of steps while a run waits is read this
 * way: counted by position, a reordered or removed earlier step made the run run a step twice or skip one for good.
 */
export function nextStepPosition(steps: ReadonlyArray<{ name: string }>, done: Record<string, unknown>): number {
  return steps.findIndex((step) => !Object.hasOwn(done, step.name));
}

/** The step the batch's first run goes on at; the runs going on at another step are taken out of `batch` into `others`. */
export function keepOneStep(steps: ReadonlyArray<{ name: string }>, batch: HeldRun[]): { position: number; others: HeldRun[] } {
  const position = nextStepPosition(steps, batch[0]!.data);
  const others = batch.filter((held) => nextStepPosition(steps, held.data) !== position);
  if (others.length) batch.splice(0, batch.length, ...batch.filter((held) => !others.includes(held)));
  return { position, others };
}
