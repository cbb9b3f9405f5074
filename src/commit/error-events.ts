// `$errors` events, built in one place for failed runs and hooks, refused timer runs and cut subscription loops.
import { madeSummary, type PendingEvent } from '../model/events.js';
import type { TriggerKind } from '../model/events.js';

/** The context a failure is reported with in an `$errors` event. */
export interface InvocationContext {
  invocationId: string;
  /** `after_run`: thrown by code a run left behind (a timer) after the run ended. */
  trigger: TriggerKind | 'deploy' | 'activate' | 'deactivate' | 'after_run';
  /** The triggering event, as a value or as the JSON text of its queue row (parsed only for an `$errors` event). */
  event?: unknown;
  eventJson?: string;
}

export interface ReportedError {
  name: string;
  message: string;
  stack?: string | undefined;
  code?: string | undefined;
}

/** The `$errors` event of DESIGN.md section 3: `{ error, original_event, original_context }`. */
export function errorEvent(emitterId: string, error: ReportedError, context: InvocationContext, nowMs: number): PendingEvent {
  return {
    stream: '$errors',
    name: '$errors',
    summary: madeSummary(`${error.name}: ${error.message}`),
    event: {
      error: { name: error.name, message: error.message, stack: error.stack ?? `${error.name}: ${error.message}`, code: error.code ?? error.name },
      original_event: context.eventJson === undefined ? (context.event ?? null) : JSON.parse(context.eventJson),
      original_context: { id: context.invocationId, ts: new Date(nowMs).toISOString(), source_id: emitterId, trigger: context.trigger },
    },
  };
}
