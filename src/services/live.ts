// Live streams of an emitter's events over Server-Sent Events, for its owner, resumable from a Last-Event-ID.
import type { ServerResponse } from 'node:http';
import type { SseHub } from '../delivery/sse-hub.js';
import type { EventSummary, StreamKind } from '../model/events.js';
import type { EventService } from './events.js';
import type { SourceService } from './sources.js';
import type { WorkflowService } from './workflows.js';
import { SSE_PREFIX } from '../model/workflows.js';
import type { Store } from '../store/database.js';
import { loadSource } from '../store/sources.js';
import { loadWorkflow } from '../store/workflows.js';

/** The stream a request asks for: the source's emits by default, `$logs`, `$errors`, or one channel. */
export function streamOf(eventName: string | undefined): { kind: StreamKind; filter: (e: EventSummary) => boolean } {
  if (eventName === '$errors' || eventName === '$logs') return { kind: eventName, filter: (e) => e.metadata.name === eventName };
  if (eventName === undefined) return { kind: 'emit', filter: (e) => e.metadata.name !== '$errors' && e.metadata.name !== '$logs' };
  const channel = eventName === 'default' ? '' : eventName;
  return { kind: 'emit', filter: (e) => e.metadata.name === channel };
}

export interface LiveRequest {
  accountId: string;
  sourceId: string;
  eventName: string | undefined;
  lastEventId: string | undefined;
  /** Extra response headers (the request id). */
  headers: Record<string, string>;
}

export class LiveStreams {
  constructor(
    private readonly store: Store,
    private readonly sources: SourceService,
    private readonly workflows: WorkflowService,
    private readonly events: EventService,
    private readonly hub: SseHub,
  ) {}

  /** Checks the account owns the source (404 otherwise), then returns how to stream into a response taken over from HTTP. */
  async prepare(request: LiveRequest): Promise<(response: ServerResponse) => Promise<void>> {
    const { source } = await this.sources.get(request.accountId, request.sourceId);
    const { kind, filter } = streamOf(request.eventName);
    const readAfter = (afterId: string) => this.events.after(source.id, kind, afterId);
    return (response) => this.hub.open(response, { emitterId: source.id, filter, lastEventId: request.lastEventId, readAfter, headers: request.headers });
  }

  /**
   * Another node of the cluster changed these sources or workflows (any of them, after a lost connection): the streams
   * here of those that no longer exist end, as they do on the node that deleted them. A failed read leaves them open
   * until the next change signalled, or the next lost connection, looks again.
   */
  async endStreamsOfDeleted(emitterIds: readonly string[] | undefined): Promise<void> {
    for (const id of emitterIds ?? this.hub.emitterIds()) {
      if (!this.hub.clientCount(id)) continue;
      const emitter = id.startsWith('p_') ? await loadWorkflow(this.store.db, id) : await loadSource(this.store.db, id);
      if (!emitter) this.hub.closeEmitter(id);
    }
  }

  /** A workflow's `$.send.sse` payloads on one channel (every channel without one), for its owner (404 otherwise). */
  async prepareWorkflow(request: Omit<LiveRequest, 'sourceId' | 'eventName'> & { workflowId: string; channel: string | undefined }) {
    const workflow = await this.workflows.owned(request.accountId, request.workflowId);
    const name = request.channel === undefined ? undefined : `${SSE_PREFIX}${request.channel}`;
    const filter = (e: EventSummary) => (name === undefined ? e.metadata.name.startsWith(SSE_PREFIX) : e.metadata.name === name);
    const readAfter = (afterId: string) => this.events.after(workflow.id, '$sse', afterId);
    return (response: ServerResponse) =>
      this.hub.open(response, { emitterId: workflow.id, filter, lastEventId: request.lastEventId, readAfter, headers: request.headers });
  }
}
