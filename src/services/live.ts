// Live streams of an emitter's events over Server-Sent Events, for its owner, resumable from a Last-Event-ID.
import type { ServerResponse } from 'node:http';
import type { SseHub } from '../delivery/sse-hub.js';
import type { FrameSelector, StreamHeaders } from '../delivery/sse-requests.js';
import { compareKeys, parseEventId, type EventSummary, type StreamKind } from '../model/events.js';
import type { EventService } from './events.js';
import type { SourceService } from './sources.js';
import type { WorkflowService } from './workflows.js';
import { SSE_PREFIX } from '../model/workflows.js';
import { streamNameOf } from '../model/subscriptions.js';
import { invalid, ServiceError } from '../model/errors.js';
import type { Logger } from 'pino';
import type { Store } from '../store/database.js';
import type { DatabaseOutageLog } from '../store/outage-log.js';
import { loadSource } from '../store/sources.js';
import { loadWorkflow } from '../store/workflows.js';
import { keyHashesOf } from '../store/users.js';
import { hashApiKey } from './users.js';
import { quote } from '../runtime/worker/quote.js';

/** The stream a request asks for: the source's emits by default, `$logs`, `$errors`, or one channel. */
export function streamOf(eventName: string | undefined): { kind: StreamKind; filter: (e: EventSummary) => boolean } {
  if (eventName === '$errors' || eventName === '$logs') return { kind: eventName, filter: (e) => e.metadata.name === eventName };
  if (eventName === undefined) return { kind: 'emit', filter: (e) => e.metadata.name !== '$errors' && e.metadata.name !== '$logs' };
  const channel = streamNameOf(eventName);
  return { kind: 'emit', filter: (e) => e.metadata.name === channel };
}

export interface LiveRequest {
  accountId: string;
  sourceId: string;
  eventName: string | undefined;
  lastEventId: string | undefined;
  /** The key the stream was opened with: it ends when that key is replaced. */
  apiKey: string;
  /** Extra response headers: those the request's hooks set (its id, the rate limit it counts against). */
  headers: StreamHeaders;
  /** Trims each event summary to the request's `include` / `exclude`; absent: every field. */
  select?: FrameSelector | undefined;
  /** A HEAD request: answered as the stream would be, and never opened, so it holds no room among the account's streams. */
  probe?: boolean | undefined;
}

/** The last comment of a stream whose key was replaced: the client stops, or reconnects with the new key. */
const KEY_REPLACED = ': the API key this stream was opened with was replaced; reconnect with the new key\n\n';

/** Live streams one account may hold open on one node at once: each holds a socket and a little memory. */
export const MAX_STREAMS_PER_ACCOUNT = 1_000;

export class LiveStreams {
  /** Emitters whose existence a failed read could not check: looked at again with the next change signalled. */
  private readonly unchecked = new Set<string>();
  /** Streams open per account on this node: each one's emitter and the hash of the key that opened it. */
  private readonly openStreams = new Map<string, Map<ServerResponse, { emitterId: string; keyHash: string }>>();
  /** Accounts whose key a failed read could not check: looked at again with the next key change signalled. */
  private readonly uncheckedKeys = new Set<string>();
  /** Streams per account that passed the bound and are not open yet (reading where they start). */
  private readonly opening = new Map<string, number>();

  constructor(
    private readonly store: Store,
    /** Where a failed check is said (a database outage once for all of it). */
    private readonly log: { logger: Logger; outages: DatabaseOutageLog },
    private readonly sources: SourceService,
    private readonly workflows: WorkflowService,
    private readonly events: EventService,
    private readonly hub: SseHub,
    private readonly maxStreamsPerAccount = MAX_STREAMS_PER_ACCOUNT,
  ) {}

  /** Checks the account owns the source (404 otherwise), then returns how to stream into a response taken over from HTTP. */
  async prepare(request: LiveRequest): Promise<(response: ServerResponse) => Promise<void>> {
    const { source } = await this.sources.get(request.accountId, request.sourceId);
    const { kind, filter } = streamOf(request.eventName);
    const readAfter = (afterId: string, limit: number, owed: boolean) => this.events.after(source.id, kind, afterId, limit, owed);
    return this.reserved(request, source.id, async () => {
      const start = await this.startOf(source.id, request.lastEventId);
      return (response) => this.hub.open(response, { emitterId: source.id, filter, ...start, readAfter, headers: request.headers, select: request.select });
    });
  }

  /** Streams the account holds on this node against its bound: those open, and those being prepared. */
  streamsHeldBy(accountId: string): number {
    return (this.openStreams.get(accountId)?.size ?? 0) + (this.opening.get(accountId) ?? 0);
  }

  /**
   * A 429 when the account holds as many streams on this node as it may, counting those still being prepared: checked
   * against the open ones only, requests at once all passed while each read where its stream starts, and opened past
   * the bound. A HEAD request (`probe`) is checked alike and holds no room.
   */
  private async reserved(
    request: { accountId: string; apiKey: string; probe?: boolean | undefined },
    emitterId: string,
    prepare: () => Promise<(response: ServerResponse) => Promise<void>>,
  ): Promise<(response: ServerResponse) => Promise<void>> {
    const { accountId } = request;
    if (this.streamsHeldBy(accountId) >= this.maxStreamsPerAccount) {
      throw new ServiceError(
        'too_many_streams',
        `this account has ${this.maxStreamsPerAccount} live streams open on this server, the most it may: close one first`,
        undefined,
        5,
      );
    }
    if (request.probe) return prepare();
    this.opening.set(accountId, (this.opening.get(accountId) ?? 0) + 1);
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      const left = (this.opening.get(accountId) ?? 1) - 1;
      if (left > 0) this.opening.set(accountId, left);
      else this.opening.delete(accountId);
    };
    try {
      const open = await prepare();
      return this.counted(request, emitterId, release, open);
    } catch (error) {
      release();
      throw error;
    }
  }

  /** `open`, counted among the account's streams (with the key that opened it) until its response closes. */
  private counted(
    request: { accountId: string; apiKey: string },
    emitterId: string,
    release: () => void,
    open: (response: ServerResponse) => Promise<void>,
  ): (response: ServerResponse) => Promise<void> {
    const { accountId } = request;
    const keyHash = hashApiKey(request.apiKey);
    return (response) => {
      // From being prepared to open: the room it held passes to the stream in the same turn.
      release();
      // The client left while the stream was prepared: its 'close' came already and will not come again, so a stream
      // opened now would be counted, and kept in the hub, for as long as the server runs.
      if (response.destroyed || !response.socket || response.socket.destroyed) return Promise.resolve();
      let streams = this.openStreams.get(accountId);
      if (!streams) this.openStreams.set(accountId, (streams = new Map()));
      streams.set(response, { emitterId, keyHash });
      response.once('close', () => {
        streams.delete(response);
        if (!streams.size && this.openStreams.get(accountId) === streams) this.openStreams.delete(accountId);
      });
      return open(response);
    };
  }

  /**
   * These accounts' keys were replaced (every account's may have been, after a lost connection): their streams opened
   * with a key that is no longer theirs end, as a request with that key is refused. Otherwise a leaked key, replaced
   * for that reason, would go on reading the account's events for as long as its streams stay connected.
   */
  async endStreamsOfOldKeys(accountIds: readonly string[] | undefined): Promise<void> {
    const ids = [...new Set([...(accountIds ?? this.openStreams.keys()), ...this.uncheckedKeys])].filter((id) => this.openStreams.has(id));
    this.uncheckedKeys.clear();
    if (!ids.length) return;
    let current: Map<string, string>;
    try {
      current = await keyHashesOf(this.store.db, ids);
    } catch (error) {
      for (const id of ids) this.uncheckedKeys.add(id);
      if (!this.log.outages.absorb(error)) this.log.logger.warn({ err: error }, 'could not check whether live streams were opened with a replaced key');
      return;
    }
    for (const id of ids) {
      for (const [response, stream] of [...(this.openStreams.get(id) ?? [])]) {
        if (stream.keyHash !== current.get(id)) this.hub.closeStream(stream.emitterId, response, KEY_REPLACED);
      }
    }
  }

  /**
   * Another node of the cluster changed these sources or workflows (`kind`; every one of that kind after a lost
   * connection): the streams here of those that no longer exist end, as they do on the node that deleted them. An
   * emitter a failed read could not check is looked at again with the next change signalled.
   */
  async endStreamsOfDeleted(kind: 'sources' | 'workflows', emitterIds: readonly string[] | undefined): Promise<void> {
    const ofKind = (id: string) => id.startsWith('p_') === (kind === 'workflows');
    const ids = new Set([...(emitterIds ?? this.hub.emitterIds().filter(ofKind)), ...[...this.unchecked].filter(ofKind)]);
    for (const id of ids) {
      this.unchecked.delete(id);
      if (!this.hub.clientCount(id)) continue;
      try {
        const emitter = kind === 'workflows' ? await loadWorkflow(this.store.db, id) : await loadSource(this.store.db, id);
        if (!emitter) this.hub.closeEmitter(id);
      } catch (error) {
        this.unchecked.add(id);
        if (!this.log.outages.absorb(error)) this.log.logger.warn({ err: error, emitterId: id }, 'could not check whether a streamed emitter was deleted');
      }
    }
  }

  /** A workflow's `$.send.sse` payloads on one channel (every channel without one), for its owner (404 otherwise). */
  async prepareWorkflow(request: Omit<LiveRequest, 'sourceId' | 'eventName'> & { workflowId: string; channel: string | undefined }) {
    const workflow = await this.workflows.owned(request.accountId, request.workflowId);
    const name = request.channel === undefined ? undefined : `${SSE_PREFIX}${request.channel}`;
    const filter = (e: EventSummary) => (name === undefined ? e.metadata.name.startsWith(SSE_PREFIX) : e.metadata.name === name);
    const readAfter = (afterId: string, limit: number, owed: boolean) => this.events.after(workflow.id, '$sse', afterId, limit, owed);
    return this.reserved(request, workflow.id, async () => {
      const start = await this.startOf(workflow.id, request.lastEventId);
      return (response) => this.hub.open(response, { emitterId: workflow.id, filter, ...start, readAfter, headers: request.headers, select: request.select });
    });
  }

  /** Where a stream starts: after the client's Last-Event-ID (sent first), else after the newest event (live only). */
  private async startOf(emitterId: string, lastEventId: string | undefined): Promise<{ startsAfterId: string; replayFirst: boolean }> {
    if (lastEventId) {
      // Going live instead would drop, without a word, the events the client asked to have replayed.
      const asked = parseEventId(lastEventId);
      if (!asked) throw invalid(`Last-Event-ID ${quote(lastEventId)} is not an event id (<epoch_ms>-<seq>)`);
      // An id past the emitter's newest (forged, or a client's from before the database was restored from a backup)
      // has nothing to replay; kept as the start, it would hold back every live event until ids passed it.
      const newest = await this.events.newestId(emitterId);
      if (compareKeys(asked, parseEventId(newest)!) > 0) return { startsAfterId: newest, replayFirst: false };
      return { startsAfterId: lastEventId, replayFirst: true };
    }
    return { startsAfterId: await this.events.newestId(emitterId), replayFirst: false };
  }
}
