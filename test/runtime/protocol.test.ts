// The server's checks on worker messages: what a well-behaved worker sends passes, anything else (an unknown field
// included) is a ProtocolError.
import { describe, expect, it } from 'vitest';
import { parseFromWorker as parseWithToken, ProtocolError } from '../../src/runtime/protocol.js';

const TOKEN = 'worker-token';
/** A message as the worker sends it, beside its token. */
const parseFromWorker = (message: unknown) => parseWithToken([TOKEN, message], TOKEN);

/** An `outcomes` message with one result; `patch` replaces fields of that result, `message` fields of the message. */
const outcome = (patch: Record<string, unknown> = {}, message: Record<string, unknown> = {}) => ({
  t: 'outcomes',
  id: 1,
  index: 0,
  results: [
    {
      outcome: { emits: [{ event: { a: [1, 'x', null, true] }, id: 'e1', ts: 5 }], logs: [{ k: 'log', ts: 1, msg: 'hi' }], durationMs: 1.5 },
      dbWrites: { k: { v: 1 } },
      ...patch,
    },
  ],
  done: true,
  ...message,
});

describe('parseFromWorker', () => {
  it('accepts well-formed messages', () => {
    expect(parseFromWorker(outcome())).toEqual(outcome());
    expect(parseFromWorker({ t: 'ready' })).toEqual({ t: 'ready' });
    expect(parseFromWorker({ t: 'respond', id: 2, index: 0, response: { status: 200, headers: { a: 'b' }, body: Buffer.from('x') } })).toEqual({
      t: 'respond',
      id: 2,
      index: 0,
      response: { status: 200, headers: { a: 'b' }, body: Buffer.from('x') },
    });
  });

  it('gives back a Buffer for bytes that arrive as a plain Uint8Array, and clamps a negative duration to 0', () => {
    const respond = parseFromWorker({ t: 'respond', id: 2, index: 0, response: { status: 200, headers: {}, body: new Uint8Array([120]) } });
    expect(respond.t === 'respond' && Buffer.isBuffer(respond.response.body)).toBe(true);
    const parsed = parseFromWorker(outcome({ outcome: { emits: [], logs: [], durationMs: -2 } }));
    expect(parsed.t === 'outcomes' && parsed.results[0]?.outcome.durationMs).toBe(0);
  });

  it('names the field that breaks the protocol', () => {
    expect(() => parseFromWorker(outcome({ outcome: { emits: [{ event: new Map() }], logs: [], durationMs: 0 } }))).toThrow(
      'malformed worker message: results[0].outcome.emits[0].event is not plain JSON data',
    );
    expect(() => parseFromWorker(outcome({}, { done: 1 }))).toThrow('malformed worker message: done must be boolean');
    expect(() => parseFromWorker('hello')).toThrow(ProtocolError);
  });

  it('takes an outcomes message as its JSON text, as workers send it', () => {
    expect(parseFromWorker(JSON.stringify(outcome()))).toEqual(outcome());
    expect(() => parseFromWorker('{"t":"outcomes",')).toThrow(ProtocolError);
    expect(() => parseFromWorker(JSON.stringify(outcome({}, { done: 1 })))).toThrow(ProtocolError);
  });

  it.each([
    ['not an object', 'hello'],
    ['an unknown type', { t: 'surprise' }],
    ['an id that is not an integer', outcome({}, { id: 'x' })],
    ['results that are not an array', outcome({}, { results: {} })],
    ['a done flag that is not a boolean', outcome({}, { done: 1 })],
    ['a result that is not an object', outcome({}, { results: [null] })],
    ['emits that are not an array', outcome({ outcome: { emits: {}, logs: [], durationMs: 0 } })],
    ['an event that is not plain JSON', outcome({ outcome: { emits: [{ event: new Map() }], logs: [], durationMs: 0 } })],
    ['an event holding a Date', outcome({ outcome: { emits: [{ event: { at: new Date() } }], logs: [], durationMs: 0 } })],
    ['a ts that is not an integer', outcome({ outcome: { emits: [{ event: 1, ts: 1.5 }], logs: [], durationMs: 0 } })],
    ['an unknown log kind', outcome({ outcome: { emits: [], logs: [{ k: 'shout', ts: 1, msg: '' }], durationMs: 0 } })],
    ['db writes that are not JSON', outcome({ dbWrites: { k: new Set() } })],
    ['a status out of range', { t: 'respond', id: 1, index: 0, response: { status: 700, headers: {}, body: null } }],
    // The worker measures the body with built-ins taken at start; this is the server's own check, should one get by.
    ['a text body past 8 MB', { t: 'respond', id: 1, index: 0, response: { status: 200, headers: {}, body: 'x'.repeat(8 * 1024 * 1024 + 1) } }],
    ['a byte body past 8 MB', { t: 'respond', id: 1, index: 0, response: { status: 200, headers: {}, body: new Uint8Array(8 * 1024 * 1024 + 1) } }],
    // The same for respond()'s headers and a component's description, which the worker bounds first (worker/limits.ts).
    [
      'headers past 64 KB',
      { t: 'respond', id: 1, index: 0, response: { status: 200, headers: { 'set-cookie': Array.from({ length: 65 }, () => 'c'.repeat(1010)) }, body: null } },
    ],
    ['a header value Node cannot write', { t: 'respond', id: 1, index: 0, response: { status: 200, headers: { a: '\u20ac' }, body: null } }],
    [
      'a component description past 1 MB',
      {
        t: 'loaded',
        id: 1,
        info: { name: 'n'.repeat(1024 * 1024), version: '1', props: [], hooks: { deploy: false, activate: false, deactivate: false }, hasRun: true },
      },
    ],
    ['props past 1 MB', { t: 'props', id: 1, props: [{ name: 'a', type: 'string', description: 'd'.repeat(1024 * 1024) }] }],
    ['a load failure code that does not exist', { t: 'load_failed', id: 1, code: 'oops', message: 'x' }],
    ['a field the protocol does not know', { t: 'ready', pid: 1 }],
    ['an unknown field on the message', { ...outcome(), extra: 'x' }],
    ['an unknown field on an emitted event', outcome({ outcome: { emits: [{ event: 1, forged: true }], logs: [], durationMs: 0 } })],
    [
      'an unknown field on a prop',
      {
        t: 'loaded',
        id: 1,
        info: {
          name: 'x',
          version: '1',
          props: [{ name: 'a', type: 'string', x: 1 }],
          hooks: { deploy: false, activate: false, deactivate: false },
          hasRun: true,
        },
      },
    ],
    ['info without hooks', { t: 'loaded', id: 1, info: { name: 'x', version: '1', props: [], hasRun: true } }],
  ])('refuses %s', (_, message) => {
    expect(() => parseFromWorker(message)).toThrow(ProtocolError);
  });

  it('refuses a message without the worker token, or with another', () => {
    for (const raw of [{ t: 'ready' }, ['other-token', { t: 'ready' }], [TOKEN], [TOKEN, { t: 'ready' }, 'extra'], 'hello']) {
      expect(() => parseWithToken(raw, TOKEN)).toThrow("malformed worker message: it lacks the worker's token");
    }
  });

  it('refuses data nested too deeply to check', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 1000; i++) deep = [deep];
    expect(() => parseFromWorker(outcome({ dbWrites: { k: deep } }))).toThrow(ProtocolError);
  });
});
