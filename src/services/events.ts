// Reading and deleting the events of a source or workflow: the default stream (with channels), `$logs` and `$errors`.
import type { Store } from '../store/database.js';
import type { StreamKind } from '../store/schema.js';
import * as events from '../store/events.js';
import { invalid, notFound } from '../model/errors.js';
import { isId } from '../model/ids.js';
import { findSource } from '../store/sources.js';
import { findWorkflow } from '../store/workflows.js';
import type { Page, PageRequest } from '../model/pagination.js';
import { compareKeys, parseEventId, toSummary, type EventSummary } from '../model/events.js';
import { quote } from '../runtime/worker/quote.js';

/** An emitter as a route names it: the kind comes from the route, so a workflow's id on a source route is unknown. */
export interface EmitterRef {
  kind: 'source' | 'workflow';
  id: string;
}

export class EventService {
  constructor(
    private readonly store: Store,
    /** Events kept per emitter and stream; readers see no more, whatever is stored until the next trim. */
    private readonly retention: number,
  ) {}

  /** Newest first, of an emitter of that kind the account owns (404 otherwise). */
  async list(accountId: string, emitter: EmitterRef, stream: StreamKind, page: PageRequest, expand: boolean): Promise<Page<EventSummary>> {
    await this.assertOwned(accountId, emitter);
    const result = await events.listEvents(this.store.db, emitter.id, stream, page, this.retention);
    return { ...result, items: result.items.map((row) => toSummary(row, expand)) };
  }

  /** The spec's four cases: none → all; start only → it and later; end only → it and earlier; both → inclusive. */
  async deleteRange(accountId: string, emitter: EmitterRef, startId: string | undefined, endId: string | undefined): Promise<number> {
    await this.assertOwned(accountId, emitter);
    const emitterId = emitter.id;
    const start = startId === undefined ? undefined : parseEventId(startId);
    const end = endId === undefined ? undefined : parseEventId(endId);
    if (startId !== undefined && !start) throw invalid(`start_id ${quote(startId)} is not an event id (<epoch_ms>-<seq>)`);
    if (endId !== undefined && !end) throw invalid(`end_id ${quote(endId)} is not an event id (<epoch_ms>-<seq>)`);
    if (start && end && compareKeys(start, end) > 0) {
      throw invalid(`start_id ${quote(startId)} is after end_id ${quote(endId)}`);
    }
    return this.store.db.transaction().execute(async (trx) => {
      // Read first: on PostgreSQL it locks the emitter, so no append trims between the count and the trim below.
      const state = await events.readEmitterState(trx, this.store.dialect, emitterId);
      // Events past retention that no reader sees go first: a range from start_id on must not leave them showing.
      const excess = (await events.countStream(trx, emitterId, 'emit')) - this.retention;
      if (excess > 0) await events.trimOldest(trx, emitterId, 'emit', excess);
      const deleted = await events.deleteEventRange(trx, emitterId, start, end);
      await events.writeEmitterState(trx, emitterId, { ...state, counts: { ...state.counts, emit: await events.countStream(trx, emitterId, 'emit') } });
      return deleted;
    });
  }

  /** The id a live stream starts after when the client names none: the emitter's newest event, or before any. */
  async newestId(emitterId: string): Promise<string> {
    return events.newestEventId(this.store.db, emitterId);
  }

  /**
   * Retained events of one stream after `afterId` (`owed`: every stored one, past retention too, for a stream that
   * stayed connected), oldest first and at most `limit`, for live-stream replay; and the emitter's newest event id on
   * any stream, read first, so that every event of the stream up to it is among them or after the last of a full page.
   */
  async after(emitterId: string, stream: StreamKind, afterId: string, limit: number, owed = false): Promise<{ events: EventSummary[]; newestId: string }> {
    const newestId = await this.newestId(emitterId);
    const after = parseEventId(afterId);
    if (!after) return { events: [], newestId };
    const rows = await events.eventsAfter(this.store.db, emitterId, stream, after, owed ? undefined : this.retention, limit);
    return { events: rows.map((row) => toSummary(row, true)), newestId };
  }

  /** Another account's id, or one of the other kind, is as unknown as a missing one. */
  private async assertOwned(accountId: string, emitter: EmitterRef): Promise<void> {
    const { kind, id } = emitter;
    if (kind === 'workflow') {
      const workflow = isId(id, 'p') ? await findWorkflow(this.store.db, accountId, id) : undefined;
      if (!workflow) throw notFound(`workflow ${quote(id)}`);
      return;
    }
    const source = isId(id, 'dc') ? await findSource(this.store.db, accountId, id) : undefined;
    if (!source) throw notFound(`source ${quote(id)}`);
  }
}
