// The HTTP requests waiting on custom-response workflow runs: each hears its run's `$.respond()`, its end without one,
// or that it went into a `$.flow.delay`; in a cluster, what no request waits for here is relayed to the other nodes.
import type { HttpResponse, InvocationError } from '../runtime/types.js';
import type { AnswerFailure, AnswerRelay } from './responders.js';
import { exitCalled } from '../model/workflows.js';

/**
 * The failure's name by which a run says it went into `$.flow.delay` before answering; its message is the delay in
 * milliseconds. Not an end: the request decides whether the run may still answer while it waits.
 */
export const FLOW_DELAYED = 'FlowDelayed';

/**
 * The failure's name by which a run that ended with `$.flow.exit()` before any `$.respond()` says so; its message
 * names the step and the call. Not a failure of the run (it succeeded): the request is told why no answer came.
 */
export const FLOW_EXITED = 'FlowExited';

/** What a run's end by `$.flow.exit()` in `stepName` tells a request that had no answer. */
export function flowExited(stepName: string, exit: { reason?: string }): InvocationError {
  return { name: FLOW_EXITED, message: exitCalled(stepName, exit), stack: '' };
}

/** Called when a run of an HTTP trigger with custom_response answers, ends without answering (`response` undefined) or is delayed. */
export type RunResponder = (response: HttpResponse | undefined, error?: InvocationError) => void;

export class RunAnswers {
  private readonly responders = new Map<string, RunResponder>();
  /** Runs whose HTTP client has had a `$.respond()`; forgotten when the run ends here. */
  private readonly answered = new Set<string>();

  constructor(private readonly relay: AnswerRelay | undefined) {}

  /** Set before the run's row commits, so that no answer comes before it. */
  wait(runId: string, responder: RunResponder): void {
    this.responders.set(runId, responder);
  }

  /** The runs whose requests wait here. */
  waitingIds(): string[] {
    return [...this.responders.keys()];
  }

  forget(runId: string): void {
    this.responders.delete(runId);
  }

  isAnswered(runId: string): boolean {
    return this.answered.has(runId);
  }

  /** A step called `$.respond()`: the waiting request gets it, here or (`relay`) on the node where it waits. */
  respond(runId: string, response: HttpResponse, relay: boolean): void {
    this.answered.add(runId);
    const responder = this.responders.get(runId);
    if (responder) responder(response);
    else if (relay) this.relay?.(runId, { response });
  }

  /** The run went into `$.flow.delay` for `delayMs` with no answer given: a request that cannot wait so long is told now. */
  delayed(runId: string, delayMs: number, relay: boolean): void {
    if (this.answered.has(runId)) return;
    const failure = { name: FLOW_DELAYED, message: String(delayMs) };
    const responder = this.responders.get(runId);
    if (responder) responder(undefined, { ...failure, stack: '' });
    else if (relay) this.relay?.(runId, { error: failure });
  }

  /** The run's batch was lost to another node: what it answered here is that node's to say again. */
  lost(runId: string): void {
    this.answered.delete(runId);
  }

  /**
   * The run is over here: a waiting HTTP client that got no `$.respond()` hears so; with none waiting here, a
   * custom-response run's end is relayed to the node whose client may wait.
   */
  finish(runId: string, error: InvocationError | undefined, relay: boolean): void {
    if (!this.answered.delete(runId)) {
      const responder = this.responders.get(runId);
      if (responder) responder(undefined, error);
      else if (relay) this.relay?.(runId, { error: error && { name: error.name, message: error.message } });
    }
    this.responders.delete(runId);
  }

  /** An answer relayed from the node that ran the run: the request waiting here (if any) gets it. */
  relayed(runId: string, response: HttpResponse | undefined, failure: AnswerFailure | undefined): void {
    const responder = this.responders.get(runId);
    if (!responder) return;
    responder(response, response ? undefined : failure && { ...failure, stack: '' });
    // A delay is not the run's end: the request may go on waiting for it.
    if (response || failure?.name !== FLOW_DELAYED) this.responders.delete(runId);
  }
}
