// A run that logs hundreds of KB at once and then hangs until its time limit keeps every line it logged, in order, up to
// the per-run console limit (and the line saying where the limit cut), beside its TimeoutError: the lines still on their
// way to the server when the worker is killed are not lost with it, neither those the worker had not yet written to
// its pipe nor those the pipe held, unread by a busy server, when the time limit came.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DELIVERY_GRACE_MS } from '../../src/runtime/invocation.js';
import { OUTCOME_FLUSH_MS } from '../../src/runtime/worker/limits.js';
import { account } from '../helpers/account.js';
import type { client } from '../helpers/client.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Seconds a run may take: time enough, with margin, to log 1 MB on a loaded machine (up to 1 s seen with 2 CPUs at a
 * load of 10), so that the run hangs, and its logs are complete, well before its time limit.
 */
const RUN_TIMEOUT = 5;
const TIMEOUT_ERROR = { name: 'TimeoutError', message: `run timed out after ${RUN_TIMEOUT * 1000} ms` };

/** 200 characters: the line's number, then padding. */
const line = (n: number) => `${String(n).padStart(6, '0')} ${'x'.repeat(193)}`;

/** A component whose run logs `count` lines of 200 characters and then hangs as `hang` says. */
function flooder(count: number, hang: string): string {
  return `export default { name: "flood", version: "0.0.1", async run() {
    for (let i = 1; i <= ${count}; i++) console.log(String(i).padStart(6, "0") + " " + "x".repeat(193));
    ${hang}
  } };`;
}

/** Every `$logs` event of a source, oldest first, all pages. */
async function allLogs(api: ReturnType<typeof client>, sourceId: string): Promise<Array<{ k: string; msg: string }>> {
  const all: Array<{ k: string; msg: string }> = [];
  let after = '';
  for (;;) {
    const page = await api.get(`/v1/sources/${sourceId}/$logs/event_summaries?expand=event&limit=100${after ? `&after=${after}` : ''}`);
    expect(page.status).toBe(200);
    for (const { event } of page.body.data) all.push({ k: event.k, msg: event.msg });
    if (page.body.data.length < 100) return all.reverse();
    after = page.body.page_info.end_cursor;
  }
}

describe('console lines of a run flooded and then stopped at its time limit', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer('sqlite', { runTimeout: RUN_TIMEOUT, eventRetention: 20_000 });
  });
  afterAll(async () => {
    await server?.destroy();
  });

  async function runToTimeout(count: number, hang: string) {
    const user = await account(server);
    const sourceId = await user.deploy(flooder(count, hang));
    await user.runAndWait(sourceId, {});
    const errors = await user.eventsOf(sourceId, 1, '/$errors');
    expect(errors.map(({ event }) => ({ name: event.error.name, message: event.error.message }))).toEqual([TIMEOUT_ERROR]);
    return allLogs(user.api, sourceId);
  }

  it('keeps all 5,000 lines (1,000,000 characters, within the limit) logged before a synchronous endless loop, in order', async () => {
    const logs = await runToTimeout(5000, 'for (;;) {}');
    expect(logs.length).toBe(5000);
    expect(logs).toEqual(Array.from({ length: 5000 }, (_, i) => ({ k: 'log', msg: line(i + 1) })));
  });

  it('keeps all 5,000 lines logged before an await that never settles, in order', async () => {
    const logs = await runToTimeout(5000, 'await new Promise(() => {});');
    expect(logs.length).toBe(5000);
    expect(logs).toEqual(Array.from({ length: 5000 }, (_, i) => ({ k: 'log', msg: line(i + 1) })));
  });

  it('keeps the lines up to the 1 MB limit and the line saying later ones were dropped, before a synchronous endless loop', async () => {
    // 5,242 lines of 200 characters fit in 1,048,576; the 5,243rd passes it.
    const logs = await runToTimeout(6000, 'for (;;) {}');
    expect(logs.length).toBe(5243);
    expect(logs).toEqual([
      ...Array.from({ length: 5242 }, (_, i) => ({ k: 'log', msg: line(i + 1) })),
      { k: 'warn', msg: 'log output of this call passed 1048576 characters; later lines are dropped' },
    ]);
  });
});

describe('console lines a busy server had not read when the time limit killed the run', () => {
  let server: TestServer;
  let signal: http.Server;

  beforeAll(async () => {
    server = await startTestServer('sqlite', { runTimeout: RUN_TIMEOUT, eventRetention: 20_000, allowPrivateNetwork: true });
  });
  afterAll(async () => {
    await server?.destroy();
    await new Promise((resolve) => signal?.close(resolve));
  });

  it('are read from the pipe after the kill and kept, in order, beside the TimeoutError', async () => {
    // The run asks this server (in the process of Tributary's) before it logs; as it answers, the process stops
    // reading anything until the run's kill timer is due, so the run's lines wait in the pipe, unread, when it fires.
    const busyMs = RUN_TIMEOUT * 1000 + OUTCOME_FLUSH_MS + DELIVERY_GRACE_MS + 100;
    signal = http.createServer((_request, response) => {
      response.on('finish', () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, busyMs));
      response.end('go');
    });
    await new Promise<void>((resolve) => signal.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(signal.address() as AddressInfo).port}/`;
    const user = await account(server);
    const sourceId = await user.deploy(
      flooder(5000, 'for (;;) {}').replace('async run() {', `async run() { await (await fetch(${JSON.stringify(url)})).text();`),
    );
    await user.runAndWait(sourceId, {});
    const errors = await user.eventsOf(sourceId, 1, '/$errors');
    expect(errors.map(({ event }) => ({ name: event.error.name, message: event.error.message }))).toEqual([TIMEOUT_ERROR]);
    // The run was still writing (waiting on the full pipe) when it was killed: the lines it had written are kept.
    const logs = await allLogs(user.api, sourceId);
    expect(logs.length).toBeGreaterThan(0);
    expect(logs).toEqual(Array.from({ length: logs.length }, (_, i) => ({ k: 'log', msg: line(i + 1) })));
  });
});
