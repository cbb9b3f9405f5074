// The live-stream hub across a gap in its bus (a cluster node's LISTEN connection lost, or announced events it could
// not read): streams hold their live events from the moment the gap opens, and when it closes read what it hid,
// so that every event arrives once and in order. And without a gap: a commit whose event before it has not reached
// a client (committed on another node, announced later) makes that client read it first. The hub runs on a real HTTP server with a real SSE client; the
// bus is driven by the test, and the store is a list of events whose reads the test can make fail.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { BusListener, EventBus, GapListener } from '../../src/delivery/bus.js';
import { SseHub } from '../../src/delivery/sse-hub.js';
import { compareKeys, parseEventId, type EventSummary } from '../../src/model/events.js';
import { DatabaseOutageLog } from '../../src/store/outage-log.js';
import { openStream } from './helpers.js';
import { waitFor } from '../helpers/wait.js';

const EMITTER = 'dc_gaps';

function summary(id: string, name = ''): EventSummary {
  return { id, indexed_at_ms: 0, event: { id }, metadata: { emitter_id: EMITTER, emit_id: id, name } };
}

/** A bus the test drives: what it publishes reaches the hub, and it opens and closes gaps. */
function drivenBus() {
  let listener: BusListener = () => {};
  let gaps: GapListener | undefined;
  const bus: EventBus = {
    start: async () => {},
    publish: (emitterId, events, afterId) => listener(emitterId, events, afterId),
    subscribe(next, gapListener) {
      listener = next;
      gaps = gapListener;
      return () => {};
    },
    close: async () => {},
  };
  return { bus, gapOpened: () => gaps!.opened(), gapClosed: () => gaps!.closed() };
}

/** The hub behind an HTTP server; `stored` is what its reads find, and `failReads` makes the next reads fail as an outage. */
async function hubServer() {
  const { bus, gapOpened, gapClosed } = drivenBus();
  const hub = new SseHub(bus, {}, { logger: pino({ level: 'silent' }), outages: new DatabaseOutageLog(pino({ level: 'silent' })) });
  const stored: EventSummary[] = [];
  /** `gate`: reads take their result at once but return it only once it resolves, as a slow query would. */
  const state: { failReads: number; reads: number; gate?: Promise<void> } = { failReads: 0, reads: 0 };
  const readAfter = async (afterId: string) => {
    state.reads++;
    if (state.failReads > 0) {
      state.failReads--;
      throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    }
    // As the store reads one stream: its events after the id, and the emitter's newest event on any stream.
    const after = parseEventId(afterId)!;
    const newestId = stored.at(-1)?.id ?? '0-0';
    const result = { events: stored.filter((e) => e.metadata.name !== '$logs' && compareKeys(parseEventId(e.id)!, after) > 0), newestId };
    await state.gate;
    return result;
  };
  const server = http.createServer((_request, res) => {
    const startsAfterId = stored.at(-1)?.id ?? '0-0';
    // The default stream: `$logs` events are the emitter's too, but not this stream's.
    void hub.open(res, { emitterId: EMITTER, filter: (e) => e.metadata.name !== '$logs', startsAfterId, replayFirst: false, readAfter });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  /** Stores an event; `announced`: it also reaches the hub live, as an announcement read in time would. */
  /**
   * Stores an event; `announced`: it also reaches the hub live. `withAfterId`: with the id of the event before it,
   * as the cluster's bus hands it on (the test's gap cases leave it out, to see the hold alone).
   */
  const commit = (id: string, announced: boolean, options: { withAfterId?: boolean; name?: string } = {}) => {
    const afterId = stored.at(-1)?.id ?? '0-0';
    stored.push(summary(id, options.name));
    if (announced) bus.publish(EMITTER, [summary(id, options.name)], options.withAfterId ? afterId : undefined);
  };
  return {
    hub,
    url,
    state,
    commit,
    gapOpened,
    gapClosed,
    close: async () => {
      hub.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const ids = (stream: ReturnType<typeof openStream>) => stream.data().map((e) => e.id as string);

describe('live streams across a gap in the bus', () => {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  /** A hub and a client of it that has had one event, `firstId`, live. */
  async function streaming(firstId: string) {
    const hub = await hubServer();
    closers.push(hub.close);
    const stream = openStream(hub.url, 'key');
    closers.push(async () => stream.source.close());
    await stream.opened;
    hub.commit(firstId, true);
    await waitFor(
      async () => ids(stream),
      (seen) => seen.length === 1,
      { what: 'the first event' },
    );
    return { hub, stream };
  }

  it('holds events published during the gap behind the ones it hid, and sends each once, in order', async () => {
    const { hub, stream } = await streaming('100-0');

    hub.gapOpened();
    // Hidden by the gap (committed on another node while this one heard nothing), then one published here.
    hub.commit('101-0', false);
    hub.commit('101-1', false);
    hub.commit('102-0', true);
    // A client that connects during the gap has had nothing yet: it is owed what comes after the newest event.
    const late = openStream(hub.url, 'key');
    closers.push(async () => late.source.close());
    await late.opened;
    hub.commit('103-0', false);
    expect(ids(stream)).toEqual(['100-0']);

    hub.gapClosed();
    await waitFor(
      async () => ids(stream),
      (seen) => seen.length === 5,
      { what: 'what the gap hid' },
    );
    await waitFor(
      async () => ids(late),
      (seen) => seen.length === 1,
      { what: "the late client's event" },
    );
    hub.commit('104-0', true);
    await waitFor(
      async () => ids(stream),
      (seen) => seen.length === 6,
      { what: 'a live event after the gap' },
    );
    await waitFor(
      async () => ids(late),
      (seen) => seen.length === 2,
      { what: 'a live event after the gap, late client' },
    );
    expect(ids(stream)).toEqual(['100-0', '101-0', '101-1', '102-0', '103-0', '104-0']);
    expect(ids(late)).toEqual(['103-0', '104-0']);
  });

  it('a catch-up that finds the database away keeps the client, holds its events and reads again until it answers', async () => {
    const { hub, stream } = await streaming('200-0');

    hub.gapOpened();
    hub.commit('201-0', false);
    hub.state.failReads = 2;
    hub.gapClosed();
    hub.commit('202-0', true);
    await waitFor(
      async () => hub.state.reads,
      (reads) => reads >= 3,
      { what: 'two failed reads and one that works', timeoutMs: 10_000 },
    );
    await waitFor(
      async () => ids(stream),
      (seen) => seen.length === 3,
      { what: 'the events held through the outage' },
    );
    expect(ids(stream)).toEqual(['200-0', '201-0', '202-0']);
    expect(hub.hub.clientCount(EMITTER)).toBe(1);
  });

  it('reads an event committed just before a published one and not announced yet, before it; not for events its stream skips', async () => {
    const { hub, stream } = await streaming('300-0');
    const readsBefore = hub.state.reads;
    // Committed on another node, its announcement still on the way, then one committed here.
    hub.commit('301-0', false);
    hub.commit('302-0', true, { withAfterId: true });
    await waitFor(
      async () => ids(stream),
      (seen) => seen.length === 3,
      { what: 'the event announced late, then the one after it' },
    );
    expect(ids(stream)).toEqual(['300-0', '301-0', '302-0']);
    expect(hub.state.reads).toBe(readsBefore + 1);
    // Its announcement arrives at last: already sent, so not again.
    hub.hub.publish(EMITTER, [summary('301-0')], '300-0');
    // A `$logs` event is handed to the client but not sent; the next event names it as the one before: no read.
    hub.commit('303-0', true, { withAfterId: true, name: '$logs' });
    hub.commit('304-0', true, { withAfterId: true });
    await waitFor(
      async () => ids(stream),
      (seen) => seen.length === 4,
      { what: 'the next event' },
    );
    expect(ids(stream)).toEqual(['300-0', '301-0', '302-0', '304-0']);
    expect(hub.state.reads).toBe(readsBefore + 1);
  });

  it('checks events held during a read for an event before them that the read did not see', async () => {
    const { hub, stream } = await streaming('400-0');
    let openGate!: () => void;
    hub.state.gate = new Promise<void>((resolve) => (openGate = resolve));
    hub.commit('401-0', false);
    // Names 401-0, which the client lacks: its read starts, and is slow.
    hub.commit('402-0', true, { withAfterId: true });
    await waitFor(
      async () => hub.state.reads,
      (reads) => reads === 1,
      { what: 'the read to start' },
    );
    // Committed elsewhere after the read began, then one here naming it: held while the read runs.
    hub.commit('403-0', false);
    hub.commit('404-0', true, { withAfterId: true });
    hub.state.gate = undefined;
    openGate();
    await waitFor(
      async () => ids(stream),
      (seen) => seen.length === 5,
      { what: 'every event' },
    );
    expect(ids(stream)).toEqual(['400-0', '401-0', '402-0', '403-0', '404-0']);
  });

  it('never sends an event from before where the stream started, however late its announcement', async () => {
    const hub = await hubServer();
    closers.push(hub.close);
    hub.commit('500-0', false);
    const stream = openStream(hub.url, 'key');
    closers.push(async () => stream.source.close());
    await stream.opened;
    hub.hub.publish(EMITTER, [summary('500-0')], '0-0');
    hub.commit('501-0', true, { withAfterId: true });
    await waitFor(
      async () => ids(stream),
      (seen) => seen.length >= 1,
      { what: 'the event after the start' },
    );
    expect(ids(stream)).toEqual(['501-0']);
  });
});
